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

// A list page waits for a slot while ListConcurrency pages query, and gives up when its
// request ends: as unavailable when its time ran out, without touching the database.
func TestListWaitsForASlot(t *testing.T) {
	t.Parallel()
	s := NewService(nil, nil, time.Now, Options{ListConcurrency: 2})
	if cap(s.listing) != 2 {
		t.Fatalf("%d slots, want 2", cap(s.listing))
	}
	s.listing <- struct{}{}
	s.listing <- struct{}{}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, err := s.List(ctx, uuid.New(), ListOptions{Limit: 50})
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Kind != apperr.KindUnavailable {
		t.Fatalf("List with every slot taken: %v, want unavailable", err)
	}
	if ctx.Err() == nil { // the request's own end, not a clock of the test's
		t.Errorf("gave up before its request's deadline")
	}
	if d := NewService(nil, nil, time.Now, Options{}); cap(d.listing) != max(2, runtime.GOMAXPROCS(0)) {
		t.Errorf("default slots %d, want as many as CPUs, at least 2", cap(d.listing))
	}
}
