package store_test

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/platform/store"
)

// TestBatchedIsOneTransaction: Batched's statements run in order in one transaction, each
// answering its own rows and seeing what the ones before it wrote and set; its first run
// answers nothing; a failing statement fails the batch and nothing of it is kept.
func TestBatchedIsOneTransaction(t *testing.T) {
	t.Parallel()
	ctx, st, other := pipelineRig(t)

	var runs int
	var inserted, counted, sameTx int
	var setting string
	err := store.BatchedOn(ctx, st, func(d db.DBTX) error {
		runs++
		if _, err := d.Exec(ctx, `SELECT set_config('contactd.test', 'set', true), pg_advisory_xact_lock(7)`); err != nil {
			return err
		}
		var err error
		if inserted, err = count(ctx, d, `INSERT INTO leases VALUES (3) RETURNING n`); err != nil {
			return err
		}
		if counted, err = count(ctx, d, `SELECT count(*)::int FROM leases`); err != nil {
			return err
		}
		if sameTx, err = count(ctx, d, `SELECT (pg_current_xact_id_if_assigned() IS NOT NULL)::int`); err != nil {
			return err
		}
		rows, err := d.Query(ctx, `SELECT current_setting('contactd.test', true)`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := rows.Scan(&setting); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if runs != 2 {
		t.Errorf("fn ran %d times, want 2 (collect, then read)", runs)
	}
	if inserted != 3 || counted != 1 || sameTx != 1 || setting != "set" {
		t.Errorf("the statements answered %d, %d, %d and %q: want the insert's 3, its row counted, "+
			"the insert's transaction still open, and the first statement's local setting", inserted, counted, sameTx, setting)
	}
	var after *string
	if err := st.Pool.QueryRow(ctx, `SELECT nullif(current_setting('contactd.test', true), '')`).Scan(&after); err != nil || after != nil {
		t.Errorf("after the batch the setting is %v (%v): its transaction did not end", after, err)
	}
	var free bool
	if err := other.QueryRow(ctx, `SELECT pg_try_advisory_lock(7)`).Scan(&free); err != nil || !free {
		t.Errorf("the lock is still held after the batch (%v)", err)
	}

	// a failing statement in the middle: its error, and the insert before it is not kept
	err = store.BatchedOn(ctx, st, func(d db.DBTX) error {
		if _, err := count(ctx, d, `INSERT INTO leases VALUES (4) RETURNING n`); err != nil {
			return err
		}
		if _, err := count(ctx, d, `SELECT 1 / 0`); err != nil {
			return err
		}
		_, err := count(ctx, d, `SELECT 1`)
		return err
	})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "22012" {
		t.Errorf("a batched division by zero: got %v", err)
	}
	var kept int
	if err := other.QueryRow(ctx, `SELECT count(*)::int FROM leases WHERE n = 4`).Scan(&kept); err != nil || kept != 0 {
		t.Errorf("%d rows kept of a failed batch (%v)", kept, err)
	}
	// and the store's one connection is free for the next statement
	if _, err := st.Pool.Exec(ctx, `SELECT 1`); err != nil {
		t.Errorf("after the failed batch: %v", err)
	}
}

// TestBatchedKeepsFnsOwnError: an error fn returns of its own in its first run is Batched's,
// and nothing is sent.
func TestBatchedKeepsFnsOwnError(t *testing.T) {
	t.Parallel()
	ctx, st, other := pipelineRig(t)
	mine := errors.New("mine")
	err := store.BatchedOn(ctx, st, func(d db.DBTX) error {
		if _, err := d.Exec(ctx, `INSERT INTO leases VALUES (5)`); err != nil {
			return err
		}
		return mine
	})
	if !errors.Is(err, mine) {
		t.Errorf("got %v, want fn's own error", err)
	}
	var kept int
	if err := other.QueryRow(ctx, `SELECT count(*)::int FROM leases`).Scan(&kept); err != nil || kept != 0 {
		t.Errorf("%d rows written by a batch whose fn failed (%v)", kept, err)
	}
}
