package ratelimit_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

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
	log := slog.New(slog.NewTextHandler(t.Output(), nil)) // a fallback says why
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
	var logged bytes.Buffer
	s, err := ratelimit.NewShared(r.URL, ratelimit.Limits{WritesPer10s: 3},
		ratelimit.SharedOptions{Timeout: testkit.Patience, Fallback: func() { fallbacks.Add(1) },
			Log: slog.New(slog.NewTextHandler(&logged, nil))})
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
	if n := strings.Count(logged.String(), "Redis unreachable"); n != 1 {
		t.Errorf("5 fallbacks logged %d times, want once (a minute apart at most):\n%s", n, logged.String())
	}
	// Redis back (empty): a connection from before it went may fail once more, then the
	// decisions are Redis's again, shared with another process
	r.Restart(t)
	testkit.Eventually(t, "a decision from Redis again", func() bool {
		before := fallbacks.Load()
		s.Allow(id("probe"), id("probe account"), false)
		return fallbacks.Load() == before
	})
	other, err := ratelimit.NewShared(r.URL, ratelimit.Limits{WritesPer10s: 3},
		ratelimit.SharedOptions{Timeout: testkit.Patience, Fallback: func() { fallbacks.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	before := fallbacks.Load()
	for i, node := range []*ratelimit.Shared{s, other, s} {
		if d := node.Allow(id("k2"), id("a"), true); !d.Allowed {
			t.Fatalf("write %d after Redis came back: %+v", i+1, d)
		}
	}
	if d := other.Allow(id("k2"), id("a"), true); d.Allowed {
		t.Errorf("a 4th write in the window allowed: the two processes do not share it (%+v)", d)
	}
	if fallbacks.Load() != before {
		t.Errorf("%d fallbacks with Redis back", fallbacks.Load()-before)
	}
}

// Redis or not, a key's window is the same algorithm: a sequence of requests gets the same
// decisions from the process's own Limiter and from Shared, refusals and day included.
func TestSharedDecidesAsTheLocalLimiter(t *testing.T) {
	t.Parallel()
	r := testkit.StartRedis(t)
	limits := ratelimit.Limits{ReadsPer10s: 3, WritesPer10s: 2, AccountPerDay: 8}
	u, _ := url.Parse(r.URL)
	rdb, err := redis.Dial("unix", u.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	type step struct {
		key   string
		write bool
		late  bool // sent half a window after the first: a window that refills (a token bucket, GCRA) admits it
	}
	steps := []step{{"k1", false, false}, {"k1", false, false}, {"k1", true, false}, {"k1", false, false},
		{"k1", false, false}, {"k1", false, true}, // the 4th read refused, and half a window later still
		{"k1", true, false}, {"k1", true, false}, {"k2", false, false}, {"k2", true, false}, {"k2", false, false}} // the day ends at 8
	run := 0
	// the sequence must fit in one window (Redis's clock): otherwise its first requests leave
	// Redis's window and not the local one's; a run that did not fit is run again, fresh
	testkit.Eventually(t, "a sequence within one window", func() bool {
		run++
		s, err := ratelimit.NewShared(r.URL, limits, ratelimit.SharedOptions{Timeout: testkit.Patience,
			Fallback: func() { t.Error("a fallback with Redis up") }})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		local := ratelimit.New(limits, time.Now)
		account := id(fmt.Sprintf("account %d", run))
		start, err := redisTime(rdb)
		if err != nil {
			t.Fatal(err)
		}
		var got, want []ratelimit.Decision
		for _, st := range steps {
			if st.late {
				testkit.Eventually(t, "half a window on Redis's clock", func() bool {
					now, err := redisTime(rdb)
					return err == nil && now.Sub(start) > ratelimit.Window/2
				})
			}
			key := id(fmt.Sprintf("%s %d", st.key, run))
			got = append(got, s.Allow(key, account, st.write))
			want = append(want, local.Allow(key, account, st.write))
		}
		end, err := redisTime(rdb)
		if err != nil {
			t.Fatal(err)
		}
		if end.Sub(start) >= ratelimit.Window {
			return false
		}
		for i := range steps {
			g, w := got[i], want[i]
			if g.Allowed != w.Allowed || g.Limit != w.Limit || g.Remaining != w.Remaining || g.DayLimit != w.DayLimit ||
				g.DayRemaining != w.DayRemaining || (g.RetryAfter > 0) != (w.RetryAfter > 0) ||
				g.Reset <= 0 || g.Reset > ratelimit.Window || w.Reset <= 0 || w.Reset > ratelimit.Window {
				t.Errorf("request %d (%+v): Redis decided %+v, the local limiter %+v", i+1, steps[i], g, w)
			}
		}
		return true
	})
}

// redisTime is Redis's clock.
func redisTime(conn redis.Conn) (time.Time, error) {
	v, err := redis.Int64s(conn.Do("TIME"))
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(v[0], v[1]*1000), nil
}

// A Redis URL the client cannot use is refused at start, naming what is wrong, rather than
// taken for a Redis that is away (which would fall back to local limits forever).
func TestSharedRefusesURLsItCannotUse(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]string{
		"http://127.0.0.1:6379":          `scheme "http"`,
		"unix:///tmp/redis.sock?db=zero": `db "zero"`,
		"redis://%zz":                    "redis URL",
	} {
		_, err := ratelimit.NewShared(url, ratelimit.Limits{}, ratelimit.SharedOptions{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewShared(%q): %v, want an error naming %s", url, err, want)
		}
	}
}

// A day limit without a window limit is still counted in Redis, across processes: an account
// with 2 requests a day and no per-key window gets its third refused by the other process.
func TestSharedCountsTheDayWithoutAWindow(t *testing.T) {
	t.Parallel()
	r := testkit.StartRedis(t)
	var nodes [2]*ratelimit.Shared
	for i := range nodes {
		s, err := ratelimit.NewShared(r.URL, ratelimit.Limits{AccountPerDay: 2},
			ratelimit.SharedOptions{Timeout: testkit.Patience, Fallback: func() { t.Error("a fallback with Redis up") }})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		nodes[i] = s
	}
	for i := range 2 {
		if d := nodes[i].Allow(id("k"), id("acct"), false); !d.Allowed || d.DayRemaining != 1-i {
			t.Fatalf("request %d: %+v", i+1, d)
		}
	}
	if d := nodes[0].Allow(id("k2"), id("acct"), true); d.Allowed || d.DayRemaining != 0 {
		t.Errorf("the day's third request: %+v", d)
	}
}

// The configured timeout is the one a decision waits: with Redis holding every client for
// half a second (CLIENT PAUSE), a process given a longer timeout gets Redis's decision, not a
// fallback (the default, 100 ms, would have fallen back).
func TestSharedHonoursItsTimeout(t *testing.T) {
	t.Parallel()
	r := testkit.StartRedis(t)
	s, err := ratelimit.NewShared(r.URL, ratelimit.Limits{WritesPer10s: 3},
		ratelimit.SharedOptions{Timeout: testkit.Patience, Fallback: func() { t.Error("a fallback with Redis paused, not away") }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Allow(id("warm"), id("a"), true) // a connection in the pool before the pause
	u, _ := url.Parse(r.URL)
	admin, err := redis.Dial("unix", u.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Do("CLIENT", "PAUSE", 500, "ALL"); err != nil {
		t.Fatal(err)
	}
	if d := s.Allow(id("k"), id("a"), true); !d.Allowed || d.Remaining != 2 {
		t.Errorf("during the pause: %+v", d)
	}
}
