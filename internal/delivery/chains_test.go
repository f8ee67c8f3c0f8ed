package delivery

import (
	"testing"

	"github.com/google/uuid"
)

// TestChainsLeaveAWakeOnlyToFullChains: a wake for deliveries queued to subscriptions is left
// to their workers only when each has its receiver's room of them here; the first worker to end
// afterwards makes it, once.
func TestChainsLeaveAWakeOnlyToFullChains(t *testing.T) {
	c := newChains()
	a, b := uuid.New(), uuid.New()
	const full = 2
	if c.cover([]uuid.UUID{a}, full) {
		t.Fatal("a subscription without workers covered")
	}
	c.begin(a)
	if c.cover([]uuid.UUID{a}, full) {
		t.Fatal("a subscription with one worker of two covered")
	}
	c.begin(a)
	c.begin(b)
	c.begin(b)
	if c.cover(nil, full) {
		t.Error("no subscription covered")
	}
	if c.cover([]uuid.UUID{a, uuid.New()}, full) {
		t.Error("a plan with a subscription without workers covered")
	}
	if c.end(a) {
		t.Error("a worker ending was left a wake no plan had left")
	}
	c.begin(a)
	if !c.cover([]uuid.UUID{a, b, a}, full) {
		t.Fatal("two subscriptions with two workers each not covered")
	}
	if !c.end(a) {
		t.Error("the first of a's workers to end was not left the wake")
	}
	if c.end(a) {
		t.Error("a's second worker was left the wake a's first made")
	}
	if !c.end(b) || c.end(b) {
		t.Error("b's workers: want the first to end to wake, the second not")
	}
	if len(c.subs) != 0 {
		t.Errorf("%d subscriptions counted after every worker ended", len(c.subs))
	}
}
