package store

import (
	"context"
	"errors"
	"go.opentelemetry.io/otel/attribute"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/contactd/contactd/gen/db"
)

// Group sends concurrent callers' one-statement operations (reads, and writes atomic on
// their own) to PostgreSQL together, group commit: what callers ask while earlier groups are
// in flight leaves as one pipeline, in one implicit transaction. A lone caller's statement
// leaves at once; under load, each costs PostgreSQL a fraction of a round trip, of a
// transaction and of a commit, which were most of what a statement alone cost it.
//
// A group commits all its writes or none. When PostgreSQL refuses a group (an error it sent,
// so nothing of the group committed), each write is sent again alone: one caller's bad write
// does not fail the others'. A group that fails otherwise (the connection broke, or the
// database cannot answer now: a timeout, a shutdown) fails all its callers, as each write
// alone would have failed.
type Group[T, R any] struct {
	store     *Store
	name      string
	send      func(ctx context.Context, q *db.Queries, items []T) ([]R, error)
	maxItems  int
	maxFlying int

	mu      sync.Mutex
	waiting []*groupCall[T, R]
	flying  int
}

type groupCall[T, R any] struct {
	ctx  context.Context
	item T
	res  R
	err  error
	done chan struct{}
	// size is how many writes its group had (for its span)
	size int
}

// GroupOptions name and bound a Group.
type GroupOptions struct {
	Name     string // in metrics
	MaxItems int    // statements per group (default 32)
	// MaxFlying is how many groups may be in flight at once, each on its own connection
	// (default GOMAXPROCS). Fewer make larger groups, which cost PostgreSQL less per write:
	// on 2 cores, 1 to 3 did equally well under load, 4 did 10 % fewer creates per second,
	// 16 a quarter fewer.
	MaxFlying int
}

// groupTimeout bounds a group's round trip: a group serves many callers, so no one caller's
// context may cancel it, and a connection that hangs must not hold them all forever.
const groupTimeout = time.Minute

// NewGroup returns a Group whose groups send calls: it must send items as one pgx batch
// (sqlc's :batchone or :batchexec queries) and return their results in order, or the error
// that failed the batch (any item's error but the ones that leave the others committed,
// which it reports in its results).
func NewGroup[T, R any](s *Store, opt GroupOptions, send func(ctx context.Context, q *db.Queries, items []T) ([]R, error)) *Group[T, R] {
	if opt.MaxItems <= 0 {
		opt.MaxItems = 32
	}
	if opt.MaxFlying <= 0 {
		opt.MaxFlying = runtime.GOMAXPROCS(0)
	}
	return &Group[T, R]{store: s, name: opt.Name, send: send, maxItems: opt.MaxItems, maxFlying: opt.MaxFlying}
}

// Do writes item with whatever other writes are waiting, and returns its result once the
// group has committed. A caller whose ctx ends first gets ctx's error, and its write may
// still commit, as a statement cancelled mid-flight may.
func (g *Group[T, R]) Do(ctx context.Context, item T) (R, error) {
	if a := ambientOf(ctx); a != nil { // in an Atomic transaction: alone, in it
		var zero R
		res, err := g.send(ctx, a.q, []T{item})
		if err != nil {
			return zero, Translate(err)
		}
		return res[0], nil
	}
	ctx, end := span(ctx, "db.group "+g.name, attribute.String("contactd.group", g.name))
	c := &groupCall[T, R]{ctx: ctx, item: item, done: make(chan struct{})}
	g.mu.Lock()
	g.waiting = append(g.waiting, c)
	fly := g.flying < g.maxFlying
	if fly {
		g.flying++
	}
	g.mu.Unlock()
	if fly {
		go g.fly()
	}
	select {
	case <-c.done:
		end(c.err, attribute.Int("contactd.group.size", c.size))
		return c.res, Translate(c.err)
	case <-ctx.Done():
		end(ctx.Err())
		var zero R
		return zero, Translate(ctx.Err())
	}
}

// Waiting is how many writes wait for a group to leave: a test's barrier, which waits until
// the writes it raced are all queued.
func (g *Group[T, R]) Waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waiting)
}

// fly sends groups until no write is waiting.
func (g *Group[T, R]) fly() {
	for {
		g.mu.Lock()
		calls := g.waiting
		if len(calls) > g.maxItems {
			calls = calls[:g.maxItems:g.maxItems]
			g.waiting = append([]*groupCall[T, R](nil), g.waiting[g.maxItems:]...)
		} else {
			g.waiting = nil
		}
		if len(calls) == 0 {
			g.flying--
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		g.sendGroup(calls)
	}
}

func (g *Group[T, R]) sendGroup(calls []*groupCall[T, R]) {
	live := calls[:0:0]
	for _, c := range calls {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			close(c.done)
			continue
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	items := make([]T, len(live))
	for i, c := range live {
		items[i] = c.item
	}
	if observe := g.store.groupObserver.Load(); observe != nil {
		(*observe)(g.name, len(items))
	}
	res, err := g.send(ctx, g.store.q, items)
	var refused *pgconn.PgError
	if err != nil && len(live) > 1 && errors.As(err, &refused) {
		g.store.groupsRefused.Add(1)
	}
	if err != nil && len(live) > 1 && errors.As(err, &refused) && !isUnavailable(err) {
		for _, c := range live {
			if one, err := g.send(ctx, g.store.q, []T{c.item}); err != nil {
				c.err = err
			} else {
				c.res = one[0]
			}
			close(c.done)
		}
		return
	}
	for i, c := range live {
		if err != nil {
			c.err = err
		} else {
			c.res = res[i]
		}
		c.size = len(live)
		close(c.done)
	}
}

// Sorted is items in cmp's order (a group's writes in the order they lock their rows), and for
// each of them its index in items, by which a send reports results in items' order.
func Sorted[T any](items []T, cmp func(a, b T) int) (sorted []T, order []int) {
	order = make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	if cmp != nil {
		slices.SortStableFunc(order, func(a, b int) int { return cmp(items[a], items[b]) })
	}
	sorted = make([]T, len(items))
	for i, o := range order {
		sorted[i] = items[o]
	}
	return sorted, order
}
