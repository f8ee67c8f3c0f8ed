package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/testkit"
)

// pipelineRig is a store of one connection on a fresh database, and a second connection to it.
func pipelineRig(t *testing.T) (context.Context, *store.Store, *pgx.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	url := testkit.NewDatabase(t)
	st, err := store.Open(ctx, url, store.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	other, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close(context.Background()) })
	if _, err := other.Exec(ctx, `CREATE TABLE leases (n int)`); err != nil {
		t.Fatal(err)
	}
	return ctx, st, other
}

// count reads the pipeline's last statement, one number.
func count(ctx context.Context, p interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, sql string) (int, error) {
	rows, err := p.Query(ctx, sql)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return 0, err
		}
	}
	return n, rows.Err()
}

// TestPipelinedStatementSeesWhatCommittedWhileItsLockWaited: a statement queued after one that
// waits for a lock takes its snapshot once the lock is held, so it counts the rows the lock's
// holder committed meanwhile (the claims count the receivers' leases so).
func TestPipelinedStatementSeesWhatCommittedWhileItsLockWaited(t *testing.T) {
	t.Parallel()
	ctx, st, other := pipelineRig(t)
	holder, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_xact_lock(42); INSERT INTO leases VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	var n int
	go func() {
		p := store.PipelinedOn(st)
		if _, err := p.Exec(ctx, `SELECT pg_advisory_xact_lock(42)`); err != nil {
			got <- err
			return
		}
		var err error
		n, err = count(ctx, p, `SELECT count(*)::int FROM leases`)
		got <- err
	}()
	// the pipeline waits for the lock (a row of pg_locks not granted), then the holder commits
	watch, err := pgx.Connect(ctx, other.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(ctx)
	testkit.Eventually(t, "the pipeline waiting for the lock", func() bool {
		var waiting bool
		err := watch.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks
			WHERE locktype = 'advisory' AND objid = 42 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND NOT granted)`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		return waiting
	})
	if err := holder.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("the statement after the lock counted %d rows, want the 1 committed while it waited", n)
	}
}

// TestPipelinedIsOneTransaction: a setting made local by the first statement is seen by the
// second and gone after, and so is the first statement's lock; an error of a queued
// statement is the pipeline's, and so is a failed commit.
func TestPipelinedIsOneTransaction(t *testing.T) {
	t.Parallel()
	ctx, st, other := pipelineRig(t)

	p := store.PipelinedOn(st)
	if _, err := p.Exec(ctx, `SELECT set_config('contactd.test', 'set', true), pg_advisory_xact_lock(7)`); err != nil {
		t.Fatal(err)
	}
	rows, err := p.Query(ctx, `SELECT current_setting('contactd.test', true)`)
	if err != nil {
		t.Fatal(err)
	}
	var seen string
	for rows.Next() {
		if err := rows.Scan(&seen); err != nil {
			t.Fatal(err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if seen != "set" {
		t.Errorf("the second statement saw %q, want the first statement's local setting", seen)
	}
	var after *string
	if err := st.Pool.QueryRow(ctx, `SELECT nullif(current_setting('contactd.test', true), '')`).Scan(&after); err != nil || after != nil {
		t.Errorf("after the pipeline the setting is %v (%v): its transaction did not end", after, err)
	}
	var free bool
	if err := other.QueryRow(ctx, `SELECT pg_try_advisory_lock(7)`).Scan(&free); err != nil || !free {
		t.Errorf("the lock is still held after the pipeline (%v)", err)
	}

	// a failing queued statement: its error, and the later ones skip (the insert is not kept)
	p = store.PipelinedOn(st)
	_, _ = p.Exec(ctx, `SELECT 1 / 0`)
	_, _ = p.Exec(ctx, `INSERT INTO leases VALUES (2)`)
	var pgErr *pgconn.PgError
	if _, err := count(ctx, p, `SELECT 1`); !errors.As(err, &pgErr) || pgErr.Code != "22012" {
		t.Errorf("a queued statement's division by zero: got %v", err)
	}

	// a failed commit: a deferred constraint broken by the statements, seen through Err
	if _, err := other.Exec(ctx, `CREATE TABLE once (n int UNIQUE DEFERRABLE INITIALLY DEFERRED)`); err != nil {
		t.Fatal(err)
	}
	p = store.PipelinedOn(st)
	_, _ = p.Exec(ctx, `INSERT INTO once VALUES (1)`)
	if _, err := count(ctx, p, `INSERT INTO once VALUES (1) RETURNING n`); !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Errorf("a commit that breaks a deferred unique constraint: got %v", err)
	}
	var kept int
	if err := other.QueryRow(ctx, `SELECT count(*)::int FROM once`).Scan(&kept); err != nil || kept != 0 {
		t.Errorf("%d rows kept of a failed pipeline (%v)", kept, err)
	}
	// and the store's one connection is free for the next statement
	if _, err := st.Pool.Exec(ctx, `SELECT 1`); err != nil {
		t.Errorf("after the failed pipelines: %v", err)
	}
}

// TestPipelinedBatchLeavesWithTheQueuedStatements: a batch (sqlc's :batch statements) sent
// after queued statements leaves with them, in their transaction: it sees their local setting
// and its results are its own; a queued statement's error fails each of the batch's.
func TestPipelinedBatchLeavesWithTheQueuedStatements(t *testing.T) {
	t.Parallel()
	ctx, st, _ := pipelineRig(t)

	p := store.PipelinedOn(st)
	if _, err := p.Exec(ctx, `SELECT set_config('contactd.test', 'set', true)`); err != nil {
		t.Fatal(err)
	}
	b := &pgx.Batch{}
	b.Queue(`SELECT current_setting('contactd.test', true) || '-1'`)
	b.Queue(`SELECT current_setting('contactd.test', true) || '-2'`)
	results := p.SendBatch(ctx, b)
	for _, want := range []string{"set-1", "set-2"} {
		var got string
		if err := results.QueryRow().Scan(&got); err != nil || got != want {
			t.Errorf("the batch's statement read %q (%v), want %q: the queued statement's setting, in its transaction", got, err, want)
		}
	}
	if err := results.Close(); err != nil {
		t.Fatal(err)
	}

	p = store.PipelinedOn(st)
	_, _ = p.Exec(ctx, `SELECT 1 / 0`)
	results = p.SendBatch(ctx, b)
	var pgErr *pgconn.PgError
	for i := range 2 {
		var got string
		if err := results.QueryRow().Scan(&got); !errors.As(err, &pgErr) || pgErr.Code != "22012" {
			t.Errorf("the batch's statement %d after a queued division by zero: %q, %v", i, got, err)
		}
	}
	if err := results.Close(); !errors.As(err, &pgErr) || pgErr.Code != "22012" {
		t.Errorf("the batch closed with %v, want the queued statement's error", err)
	}
	if _, err := st.Pool.Exec(ctx, `SELECT 1`); err != nil {
		t.Errorf("after the failed pipeline: %v", err)
	}
}
