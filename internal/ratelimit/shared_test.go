package ratelimit_test

import (
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contactd/contactd/internal/ratelimit"
	"github.com/contactd/contactd/internal/testkit"
)

func id(s string) (out ratelimit.ID) {
	copy(out[:], s)
	return out
}

// Two processes sharing one Redis share one allowance: a key sending to both gets the
// configured budget, not double; the account's day likewise, and a request the day refuses
// does not use up its key's window.
func TestSharedLimitsAcrossProcesses(t *testing.T) {
	t.Parallel()
	r := testkit.StartRedis(t)
	limits := ratelimit.Limits{ReadsPer10s: 20, WritesPer10s: 5, AccountPerDay: 12}
	log := slog.New(slog.DiscardHandler)
	var fallbacks atomic.Int32
	count := func() { fallbacks.Add(1) }
	// a generous timeout: a busy machine must not turn Redis's answers into fallbacks here
	opt := ratelimit.SharedOptions{Timeout: testkit.Patience, Log: log, Fallback: count}
	a, err := ratelimit.NewShared(r.URL, limits, opt)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ratelimit.NewShared(r.URL, limits, opt)
	defer a.Close()
	defer b.Close()
	nodes := []*ratelimit.Shared{a, b}
	allowed := 0
	for i := range 10 {
		d := nodes[i%2].Allow(id("key1"), id("acct1"), true)
		if d.Allowed {
			allowed++
			if d.Limit != 5 || d.Remaining != 5-allowed || d.Reset <= 0 || d.Reset > 10*time.Second {
				t.Errorf("write %d allowed: %+v", i+1, d)
			}
		} else if d.RetryAfter <= 0 || d.Remaining != 0 {
			t.Errorf("write %d refused without a wait: %+v", i+1, d)
		}
	}
	if allowed != 5 {
		t.Errorf("%d writes allowed across two processes, want the 5 of one key's window", allowed)
	}
	// the day: 5 writes counted; 7 reads of another key bring it to 12; then refused
	for i := range 7 {
		if d := nodes[i%2].Allow(id("key2"), id("acct1"), false); !d.Allowed || d.DayRemaining != 12-5-(i+1) {
			t.Fatalf("read %d: %+v", i+1, d)
		}
	}
	d := b.Allow(id("key3"), id("acct1"), false)
	if d.Allowed || d.DayRemaining != 0 || d.RetryAfter <= 0 || d.RetryAfter > 24*time.Hour {
		t.Errorf("over the day: %+v", d)
	}
	if d.Remaining != 20 {
		t.Errorf("a request the day refused used its key's window: %d left of 20", d.Remaining)
	}
	if fallbacks.Load() != 0 {
		t.Errorf("%d fallbacks with Redis up", fallbacks.Load())
	}
}

// With Redis gone, each process decides alone (its own windows) rather than refusing
// traffic, and counts the fallbacks.
func TestSharedFallsBackWhenRedisIsAway(t *testing.T) {
	t.Parallel()
	r := testkit.StartRedis(t)
	var fallbacks atomic.Int32
	s, err := ratelimit.NewShared(r.URL, ratelimit.Limits{WritesPer10s: 3},
		ratelimit.SharedOptions{Timeout: testkit.Patience, Fallback: func() { fallbacks.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if d := s.Allow(id("k"), id("a"), true); !d.Allowed || fallbacks.Load() != 0 {
		t.Fatalf("with Redis: %+v, %d fallbacks", d, fallbacks.Load())
	}
	r.Stop()
	var allowed int
	for range 5 {
		if d := s.Allow(id("k"), id("a"), true); d.Allowed {
			allowed++
		}
	}
	if allowed != 3 || fallbacks.Load() != 5 {
		t.Errorf("without Redis: %d allowed (want the local 3), %d fallbacks (want 5)", allowed, fallbacks.Load())
	}
}
