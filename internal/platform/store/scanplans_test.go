package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/testkit"
)

// oneConnection is a store of one connection: every query shares its plans, and a row that
// kept the connection would hang the next query.
func oneConnection(t *testing.T) (context.Context, *store.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	st, err := store.Open(ctx, testkit.NewDatabase(t), store.Options{MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return ctx, st
}

// TestScanPlansAreKeptPerConnection: statements scanned through the plan cache give what pgx
// gives (values, NULLs, errors, no rows), reuse their plans, and replan when the destination
// types change.
func TestScanPlansAreKeptPerConnection(t *testing.T) {
	t.Parallel()
	ctx, st := oneConnection(t)
	q := store.Planned(st.Pool)
	const sql = `SELECT $1::text, $2::timestamptz, $3::int4`
	at := time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)
	for i, args := range [][]any{{"a", at, 1}, {nil, nil, 2}, {"c", at.Add(time.Hour), 3}} {
		var s *string
		var ts *time.Time
		var n int32
		if err := q.QueryRow(ctx, sql, args...).Scan(&s, &ts, &n); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if (args[0] == nil) != (s == nil) || (s != nil && *s != args[0]) || (args[1] == nil) != (ts == nil) ||
			(ts != nil && !ts.Equal(args[1].(time.Time))) || int(n) != args[2] {
			t.Errorf("row %d: got %v %v %d, want %v", i, s, ts, n, args)
		}
	}
	var text pgtype.Text // same statement, another destination type: planned again
	var ts time.Time
	var n int64
	if err := q.QueryRow(ctx, sql, "d", at, 4).Scan(&text, &ts, &n); err != nil || text.String != "d" || !text.Valid || !ts.Equal(at) || n != 4 {
		t.Errorf("other destination types: %v %v %d %v", text, ts, n, err)
	}

	rows, err := q.Query(ctx, `SELECT v FROM (VALUES ('x'), (NULL)) t(v) ORDER BY v NULLS LAST`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var scanErr error
	for rows.Next() {
		var v string
		if scanErr = rows.Scan(&v); scanErr != nil {
			break
		}
		got = append(got, v)
	}
	rows.Close()
	var argErr pgx.ScanArgError
	if len(got) != 1 || got[0] != "x" || !errors.As(scanErr, &argErr) || argErr.ColumnIndex != 0 || !errors.Is(rows.Err(), scanErr) {
		t.Errorf("NULL into a string: got %q, error %v, rows.Err %v; want pgx's ScanArgError, also from Err", got, scanErr, rows.Err())
	}

	var s string
	if err := q.QueryRow(ctx, `SELECT 'x' WHERE false`).Scan(&s); !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("no rows: %v, want pgx.ErrNoRows", err)
	}
	if err := q.QueryRow(ctx, `SELEC 1`).Scan(&s); err == nil {
		t.Error("a syntax error scanned")
	}

	conn, err := st.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if n := store.PlannedStatements(conn.Conn()); n != 2 { // the two that returned rows
		t.Errorf("the connection keeps plans for %d statements, want 2", n)
	}
}

// TestScanPlansInBatches: a batch's rows are scanned with their statements' kept plans too,
// each result with its own statement's, and a failed statement's error reaches its result.
func TestScanPlansInBatches(t *testing.T) {
	t.Parallel()
	ctx, st := oneConnection(t)
	q := store.Planned(st.Pool)
	b := &pgx.Batch{}
	b.Queue(`SELECT $1::text, $2::int4`, "a", 1)
	b.Queue(`SELECT 'x' WHERE false`)
	b.Queue(`SELECT $1::int8`, 7)
	br := q.SendBatch(ctx, b)
	var s, none string
	var n int32
	var big int64
	err1 := br.QueryRow().Scan(&s, &n)
	err2 := br.QueryRow().Scan(&none)
	err3 := br.QueryRow().Scan(&big)
	if err := br.Close(); err != nil || err1 != nil || s != "a" || n != 1 || !errors.Is(err2, pgx.ErrNoRows) || err3 != nil || big != 7 {
		t.Errorf("batch: %q %d %v; %v; %d %v; close %v", s, n, err1, err2, big, err3, err)
	}
	conn, err := st.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := store.PlannedStatements(conn.Conn()); n != 2 { // the two that returned rows
		t.Errorf("the connection keeps plans for %d statements, want 2", n)
	}
	conn.Release()

	b = &pgx.Batch{}
	b.Queue(`SELECT 1`)
	b.Queue(`SELECT 1/0`)
	br = q.SendBatch(ctx, b)
	var one, div int
	if err := br.QueryRow().Scan(&one); err != nil || one != 1 {
		t.Errorf("first of a failing batch: %d %v", one, err)
	}
	if err := br.QueryRow().Scan(&div); err == nil {
		t.Error("division by zero scanned")
	}
	if err := br.Close(); err == nil {
		t.Error("a failed batch closed without its error")
	}
}

// TestScanPlansSaveAllocations: a row of nullable columns scanned through the plan cache
// allocates less than through pgx alone, which plans every column again on every query.
func TestScanPlansSaveAllocations(t *testing.T) {
	ctx, st := oneConnection(t)
	const sql = `SELECT 'a'::text, NULL::text, now(), NULL::timestamptz, 'b'::text, NULL::text, now(), NULL::timestamptz`
	allocs := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) float64 {
		return testing.AllocsPerRun(50, func() {
			var a, b, c, d *string
			var e, f, g, h *time.Time
			if err := q.QueryRow(ctx, sql).Scan(&a, &b, &e, &f, &c, &d, &g, &h); err != nil {
				t.Fatal(err)
			}
		})
	}
	plain, planned := allocs(st.Pool), allocs(store.Planned(st.Pool))
	if planned > plain-8 {
		t.Errorf("%.0f allocations per query with kept plans, %.0f without: want at least one per column fewer", planned, plain)
	}
	t.Logf("allocations per query: %.0f with kept plans, %.0f without", planned, plain)
}

// TestScanPlansUUIDs: uuid columns scan into uuid.UUID and *uuid.UUID (NULL included) as pgx
// scans them; a NULL leaves a uuid.UUID as it was, as pgx (uuid.UUID's Scan) does.
func TestScanPlansUUIDs(t *testing.T) {
	t.Parallel()
	ctx, st := oneConnection(t)
	q := store.Planned(st.Pool)
	want := uuid.Must(uuid.NewV7())
	for i := range 2 { // planned, then from the kept plans
		var id uuid.UUID
		var some, none *uuid.UUID
		if err := q.QueryRow(ctx, `SELECT $1::uuid, $1::uuid, NULL::uuid`, want).Scan(&id, &some, &none); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if id != want || some == nil || *some != want || none != nil {
			t.Errorf("call %d: got %v %v %v, want %v %v <nil>", i, id, some, none, want, want)
		}
	}
	id, direct := want, want
	err := q.QueryRow(ctx, `SELECT NULL::uuid`).Scan(&id)
	pgxErr := st.Pool.QueryRow(ctx, `SELECT NULL::uuid`).Scan(&direct)
	if err != nil || pgxErr != nil || id != direct || id != want {
		t.Errorf("NULL into uuid.UUID: %v %v, pgx gives %v %v", id, err, direct, pgxErr)
	}
}
