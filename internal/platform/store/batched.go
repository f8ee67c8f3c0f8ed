package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/contactd/contactd/gen/db"
)

// Batched runs fn's statements in one round trip and one implicit transaction, as Pipelined
// does, but any number of them may return rows. fn runs twice: first to collect its
// statements (each answers nothing then: no rows, no error), then, once they are sent, to
// read their results in turn. So fn must run the same statements whatever they answer: it
// may keep their results, not choose statements by them. Inside an Atomic transaction fn
// runs once, in it, statement by statement.
func (s *Store) Batched(ctx context.Context, fn func(q *db.Queries) error) error {
	if a := ambientOf(ctx); a != nil {
		return Translate(fn(a.q))
	}
	return s.batched(ctx, func(d db.DBTX) error { return fn(db.New(d)) })
}

func (s *Store) batched(ctx context.Context, fn func(d db.DBTX) error) error {
	var collected batchCollector
	if err := fn(&collected); err != nil {
		return err
	}
	results := plannedDB{s.Pool}.SendBatch(ctx, &collected.batch)
	err := fn(batchReader{results})
	if cerr := results.Close(); err == nil {
		err = cerr
	}
	return Translate(err)
}

// batchCollector queues the statements of Batched's first run.
type batchCollector struct{ batch pgx.Batch }

func (c *batchCollector) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c.batch.Queue(sql, args...)
	return pgconn.CommandTag{}, nil
}

func (c *batchCollector) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	c.batch.Queue(sql, args...)
	return noRows{}, nil
}

func (c *batchCollector) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	c.batch.Queue(sql, args...)
	return noRow{}
}

func (c *batchCollector) SendBatch(context.Context, *pgx.Batch) pgx.BatchResults {
	return errorBatch{err: errNotYetSent}
}

// errNotYetSent is what reading a batched statement's answer in Batched's first run gives.
var errNotYetSent = errors.New("store: a batched statement read before the batch was sent")

// batchReader answers Batched's second run with the batch's results, in order.
type batchReader struct{ results pgx.BatchResults }

func (r batchReader) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return r.results.Exec()
}

func (r batchReader) Query(context.Context, string, ...any) (pgx.Rows, error) {
	return r.results.Query()
}

func (r batchReader) QueryRow(context.Context, string, ...any) pgx.Row { return r.results.QueryRow() }

func (r batchReader) SendBatch(context.Context, *pgx.Batch) pgx.BatchResults {
	return errorBatch{err: errors.New("store: a batch sent inside Batched")}
}

// noRows is a :many statement's answer in Batched's first run; sqlc's code asks only these
// of it.
type noRows struct{ pgx.Rows }

func (noRows) Close()                        {}
func (noRows) Err() error                    { return nil }
func (noRows) CommandTag() pgconn.CommandTag { return pgconn.CommandTag{} }
func (noRows) Next() bool                    { return false }

// noRow is a :one statement's answer in Batched's first run: nothing, and no error.
type noRow struct{}

func (noRow) Scan(...any) error { return nil }

// errorBatch fails a batch sent where Batched cannot send one.
type errorBatch struct {
	pgx.BatchResults
	err error
}

func (b errorBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errorBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b errorBatch) QueryRow() pgx.Row                { return plannedRow{err: b.err} }
func (b errorBatch) Close() error                     { return b.err }
