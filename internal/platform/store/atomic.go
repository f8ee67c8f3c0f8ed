package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/gen/db"
)

// ambient is a transaction that every use of the store under one context joins (Atomic).
type ambient struct {
	tx    pgx.Tx
	q     *db.Queries
	after *[]func()
}

type ambientKey struct{}

func ambientOf(ctx context.Context) *ambient {
	a, _ := ctx.Value(ambientKey{}).(*ambient)
	return a
}

// Atomic runs fn in one transaction that everything fn does through the store with the
// context it is given joins: Read and Write run in it, InTx in a savepoint of it, a Group
// sends the call alone in it. q is the transaction's queries, for fn's own statements. It
// commits when fn returns nil, and then runs the joined transactions' AfterCommit functions.
// A request whose response is stored with its changes (Idempotency-Key) runs in one: the
// response is kept exactly when the change it reports committed. fn must use the context
// from one goroutine at a time, as a transaction is one connection.
func (s *Store) Atomic(ctx context.Context, fn func(ctx context.Context, q *db.Queries) error) error {
	var after []func()
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		a := &ambient{tx: tx, q: db.New(plannedDB{tx}), after: &after}
		return fn(context.WithValue(ctx, ambientKey{}, a), a.q)
	})
	if err == nil {
		for _, f := range after {
			f()
		}
	}
	return Translate(err)
}
