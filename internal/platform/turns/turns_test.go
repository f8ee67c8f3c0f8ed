package turns

import (
	"context"
	"runtime"
	"testing"

	"github.com/google/uuid"
)

// A freed turn goes to the waiting account that runs the fewest pages: account B's page,
// queued behind three of A's, runs next; A's then follow in their order. Alone, an account
// takes every turn.
func TestListTurnsGoToTheLeastServedAccount(t *testing.T) {
	t.Parallel()
	l := New(2)
	a, b := uuid.New(), uuid.New()
	releaseA1, _ := l.Take(context.Background(), a)
	releaseA2, err := l.Take(context.Background(), a)
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
			release, err := l.Take(context.Background(), account)
			if err != nil {
				t.Error(err)
			}
			order <- granted{who, release}
		}()
		for l.Queued() != queued { // the waiter is in line before the next one comes
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
	if n := l.Overtaken(); n != 1 {
		t.Errorf("%d turns went ahead of an earlier read, want 1 (B1's)", n)
	}
}
