// Package store owns the PostgreSQL pool: it runs the generated queries, in transactions when
// asked, and translates driver errors into apperr once, so no other package sees pgx errors.
package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
)

// Store is the database of contactd.
type Store struct {
	Pool *pgxpool.Pool
	q    *db.Queries
	// groupObserver learns the size of each group the store's Groups send.
	groupObserver atomic.Pointer[func(group string, size int)]
	// groupsRefused counts the groups PostgreSQL refused, whose writes were sent again alone
	groupsRefused atomic.Uint64
	// migrated: the database was seen with every migration of this binary
	migrated atomic.Bool
	// replica serves the reads that may be a little stale (replica.go); nil without one
	replica *replica
}

// ObserveGroups has f told the name and size of every group sent from now on (metrics).
func (s *Store) ObserveGroups(f func(group string, size int)) { s.groupObserver.Store(&f) }

// GroupsRefused counts the groups PostgreSQL refused (one write's error, or a statement
// cancelled), each of whose writes was then sent again alone: a write that waits on others'
// work in its group shows here.
func (s *Store) GroupsRefused() uint64 { return s.groupsRefused.Load() }

// Tx is one transaction: the generated queries bound to it.
type Tx struct {
	*db.Queries
	raw   pgx.Tx
	after *[]func()
}

// Savepoint runs fn in a savepoint of the transaction: when fn fails, what it did is undone
// and the transaction goes on (one item of a batch failing alone).
func (t Tx) Savepoint(ctx context.Context, fn func(tx Tx) error) error {
	return Translate(pgx.BeginFunc(ctx, t.raw, func(sp pgx.Tx) error {
		return fn(Tx{Queries: db.New(plannedDB{sp}), raw: sp, after: t.after})
	}))
}

// AfterCommit runs f once the transaction has committed (not if it rolls back): to tell
// this process's workers about work the transaction queued.
func (t Tx) AfterCommit(f func()) { *t.after = append(*t.after, f) }

// Options tunes the pool.
type Options struct {
	MaxConns         int32
	StatementTimeout time.Duration
	// IdleInTxTimeout ends a session idle inside a transaction that long (0: never).
	IdleInTxTimeout time.Duration
	// ReplicaURL is a standby of the database for the reads that may be a little stale,
	// used while its lag is at most ReplicaMaxLag, looked at every ReplicaLookEvery (1 s).
	ReplicaURL       string
	ReplicaMaxLag    time.Duration
	ReplicaLookEvery time.Duration
}

// Open connects to url and checks the connection.
func Open(ctx context.Context, url string, opt Options) (*Store, error) {
	pool, err := newPool(ctx, url, opt)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	st := New(pool)
	if opt.ReplicaURL != "" {
		if err := st.useReplica(ctx, opt.ReplicaURL, opt); err != nil {
			pool.Close()
			return nil, fmt.Errorf("open replica: %w", err)
		}
	}
	return st, nil
}

// newPool is a pool on url as contactd uses every database: opt's size and statement
// timeout, UTC, and uuid as google/uuid.
func newPool(ctx context.Context, url string, opt Options) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if opt.MaxConns > 0 {
		cfg.MaxConns = opt.MaxConns
	}
	if opt.StatementTimeout > 0 {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = fmt.Sprint(opt.StatementTimeout.Milliseconds())
	}
	if opt.IdleInTxTimeout > 0 {
		cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = fmt.Sprint(opt.IdleInTxTimeout.Milliseconds())
	}
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	cfg.AfterConnect = registerUUID
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	return pool, nil
}

// New wraps an existing pool.
func New(pool *pgxpool.Pool) *Store { return &Store{Pool: pool, q: db.New(plannedDB{pool})} }

// Close closes the pool (and the standby's).
func (s *Store) Close() {
	if s.replica != nil {
		s.replica.close()
	}
	s.Pool.Close()
}

// Do runs fn outside a transaction: for one statement, a read or a change that is atomic on
// its own (no BEGIN and COMMIT round trips). Inside an Atomic transaction, fn runs in it.
func (s *Store) Do(ctx context.Context, fn func(q *db.Queries) error) error {
	if a := ambientOf(ctx); a != nil {
		return Translate(fn(a.q))
	}
	return Translate(fn(s.q))
}

// InTx runs fn in a transaction: committed when fn returns nil, rolled back otherwise.
func (s *Store) InTx(ctx context.Context, fn func(tx Tx) error) error {
	if a := ambientOf(ctx); a != nil { // a savepoint of the Atomic transaction
		return Translate(pgx.BeginFunc(ctx, a.tx, func(sp pgx.Tx) error {
			return fn(Tx{Queries: db.New(plannedDB{sp}), raw: sp, after: a.after})
		}))
	}
	var after []func()
	ctx, end := span(ctx, "db.transaction")
	err := pgx.BeginFunc(ctx, s.Pool, func(raw pgx.Tx) error {
		return fn(Tx{Queries: db.New(plannedDB{raw}), raw: raw, after: &after})
	})
	end(err)
	if err == nil {
		for _, f := range after {
			f()
		}
	}
	return Translate(err)
}

// ReadSnapshot runs fn in a read-only REPEATABLE READ transaction: every statement of fn sees
// the database as it was when the first one ran (an export read in pages is one snapshot).
func (s *Store) ReadSnapshot(ctx context.Context, fn func(q *db.Queries) error) error {
	if a := ambientOf(ctx); a != nil { // inside a write's Atomic transaction: its view
		return Translate(fn(a.q))
	}
	return Translate(pgx.BeginTxFunc(ctx, s.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error { return fn(db.New(plannedDB{tx})) }))
}

// Translate maps driver errors to apperr; errors that already are apperr pass unchanged.
func Translate(err error) error {
	if err == nil {
		return nil
	}
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return apperr.ErrNoRows
	}
	if isUnavailable(err) {
		return &apperr.Error{Kind: apperr.KindUnavailable, Code: apperr.ErrUnavailable.Code,
			Message: apperr.ErrUnavailable.Message, Cause: err}
	}
	return &apperr.Error{Kind: apperr.KindInternal, Code: apperr.ErrInternal.Code,
		Message: apperr.ErrInternal.Message, Cause: err}
}

// isUnavailable reports errors that mean the database cannot answer now (it is down,
// restarting, or the statement ran out of time), as opposed to a bug.
func isUnavailable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "53", "57": // connection, resources, operator intervention (incl. 57014 timeout)
			return true
		}
		return false
	}
	var netErr net.Error
	if errors.As(err, &netErr) || pgconn.Timeout(err) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var connErr *pgconn.ConnectError
	return errors.As(err, &connErr) || pgconn.SafeToRetry(err)
}
