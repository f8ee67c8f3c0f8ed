package search

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
	s := New(nil, nil, Options{ListConcurrency: 2})
	a := uuid.New()
	for range 2 {
		if _, err := s.turns.Take(context.Background(), a); err != nil {
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
	if n := s.turns.Queued(); n != 0 {
		t.Errorf("%d pages still wait after their requests ended", n)
	}
	if d := New(nil, nil, Options{}); d.turns.Size() != max(2, runtime.GOMAXPROCS(0)) {
		t.Errorf("default turns %d, want as many as CPUs, at least 2", d.turns.Size())
	}
}
