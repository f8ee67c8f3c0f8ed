package store

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/contactd/contactd/gen/db"
)

// Pipelined runs fn's statements in one round trip and one implicit transaction: each
// statement fn runs with :exec is queued, not sent, and its error is fn's next :many or :one
// statement's, which sends them all and answers with its own rows. PostgreSQL runs a pipeline
// that no Sync interrupts as one transaction, and in READ COMMITTED each statement takes its
// snapshot when it starts: so a statement sees what the ones queued before it did, and
// anything committed while they waited (a lock an :exec took is held by the time it reads).
// fn's last statement must return rows; :exec statements queued after it are never sent.
// A batch (sqlc's :batch statements) is fn's last statement as well: it leaves with the queued
// ones, in the same round trip and transaction.
// Inside an Atomic transaction fn runs in it, statement by statement.
func (s *Store) Pipelined(ctx context.Context, fn func(q *db.Queries) error) error {
	if a := ambientOf(ctx); a != nil {
		return Translate(fn(a.q))
	}
	return Translate(fn(db.New(&pipelinedDB{inner: plannedDB{s.Pool}})))
}

type pipelinedDB struct {
	inner  db.DBTX
	queued pgx.Batch
}

func (p *pipelinedDB) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	p.queued.Queue(sql, args...)
	return pgconn.CommandTag{}, nil
}

func (p *pipelinedDB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	p.queued.Queue(sql, args...)
	batch := p.queued
	p.queued = pgx.Batch{}
	results := p.inner.SendBatch(ctx, &batch)
	for range batch.Len() - 1 {
		if _, err := results.Exec(); err != nil {
			_ = results.Close()
			return nil, err
		}
	}
	rows, err := results.Query()
	if err != nil {
		_ = results.Close()
		return nil, err
	}
	return &pipelinedRows{Rows: rows, results: results}, nil
}

func (p *pipelinedDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := p.Query(ctx, sql, args...)
	return plannedRow{rows: rows, err: err}
}

// SendBatch sends the queued statements and b's in one pipeline: b's results are what it
// returns, once the queued statements' are read; the first of those that failed fails them all.
func (p *pipelinedDB) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	n := p.queued.Len()
	if n == 0 {
		return p.inner.SendBatch(ctx, b)
	}
	batch := p.queued
	p.queued = pgx.Batch{}
	batch.QueuedQueries = append(batch.QueuedQueries, b.QueuedQueries...)
	results := p.inner.SendBatch(ctx, &batch)
	for range n {
		if _, err := results.Exec(); err != nil {
			_ = results.Close()
			return failedBatch{BatchResults: results, err: err}
		}
	}
	return results
}

// failedBatch is a batch whose pipeline failed before its first statement's results (closed).
type failedBatch struct {
	pgx.BatchResults
	err error
}

func (f failedBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, f.err }
func (f failedBatch) Query() (pgx.Rows, error)         { return nil, f.err }
func (f failedBatch) QueryRow() pgx.Row                { return plannedRow{err: f.err} }
func (f failedBatch) Close() error                     { return f.err }

// pipelinedRows are the last statement's rows. PostgreSQL commits the pipeline's transaction
// when it reaches the Sync after them, whether or not they are read yet; the connection goes
// back to the pool once they are, and a failure to commit is their error.
type pipelinedRows struct {
	pgx.Rows
	results pgx.BatchResults
	closed  bool
	err     error
}

func (r *pipelinedRows) end() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	if err := r.Rows.Err(); err != nil {
		r.err = err
	}
	if err := r.results.Close(); err != nil && r.err == nil {
		r.err = err
	}
}

func (r *pipelinedRows) Close() { r.end() }

// Err ends the pipeline when the rows are read (sqlc's code asks Err before it closes them),
// so that the commit's error is seen.
func (r *pipelinedRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	r.end()
	return r.err
}
