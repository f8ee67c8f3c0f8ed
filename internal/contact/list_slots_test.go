package contact

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/internal/apperr"
)

// A list page waits for a turn while ListConcurrency pages query, and gives up when its
// request ends: as unavailable when its time ran out, without touching the database.
func TestListWaitsForATurn(t *testing.T) {
	t.Parallel()
	s := NewService(nil, nil, time.Now, Options{ListConcurrency: 2})
	a := uuid.New()
	for range 2 {
		if _, err := s.listing.take(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, err := s.List(ctx, uuid.New(), ListOptions{Limit: 50})
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Kind != apperr.KindUnavailable {
		t.Fatalf("List with every turn taken: %v, want unavailable", err)
	}
	if ctx.Err() == nil { // the request's own end, not a clock of the test's
		t.Errorf("gave up before its request's deadline")
	}
	if n := s.listing.queued(); n != 0 {
		t.Errorf("%d pages still wait after their requests ended", n)
	}
	if d := NewService(nil, nil, time.Now, Options{}); d.listing.free != max(2, runtime.GOMAXPROCS(0)) {
		t.Errorf("default turns %d, want as many as CPUs, at least 2", d.listing.free)
	}
}

// A freed turn goes to the waiting account that runs the fewest pages: account B's page,
// queued behind three of A's, runs next; A's then follow in their order. Alone, an account
// takes every turn.
func TestListTurnsGoToTheLeastServedAccount(t *testing.T) {
	t.Parallel()
	l := newListTurns(2)
	a, b := uuid.New(), uuid.New()
	releaseA1, _ := l.take(context.Background(), a)
	releaseA2, err := l.take(context.Background(), a)
	if err != nil {
		t.Fatalf("an account alone cannot take both turns: %v", err)
	}
	type granted struct {
		who     string
		release func()
	}
	order := make(chan granted, 4)
	wait := func(who string, account uuid.UUID, queued int) {
		go func() {
			release, err := l.take(context.Background(), account)
			if err != nil {
				t.Error(err)
			}
			order <- granted{who, release}
		}()
		for l.queued() != queued { // the waiter is in line before the next one comes
			runtime.Gosched()
		}
	}
	wait("A3", a, 1)
	wait("A4", a, 2)
	wait("A5", a, 3)
	wait("B1", b, 4)
	releaseA1()
	if g := <-order; g.who != "B1" {
		t.Fatalf("the freed turn went to %s, want B1 (B runs none, A runs one)", g.who)
	} else {
		defer g.release()
	}
	releaseA2()
	for _, want := range []string{"A3", "A4", "A5"} {
		g := <-order
		if g.who != want {
			t.Fatalf("turn to %s, want %s", g.who, want)
		}
		g.release()
	}
}
