package ratelimit

import (
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func id(s string) (out ID) {
	copy(out[:], s)
	return out
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC)} }

func TestSlidingWindow(t *testing.T) {
	c := newClock()
	l := New(Limits{ReadsPer10s: 100, WritesPer10s: 50}, c.now)
	for i := range 100 {
		d := l.Allow(id("k1"), id("a"), false)
		// the window frees a slot when the first read, made at 0 s, leaves it at 10 s.
		if !d.Allowed || d.Limit != 100 || d.Remaining != 99-i || d.Reset != Window-time.Duration(i)*50*time.Millisecond {
			t.Fatalf("read %d: %+v", i+1, d)
		}
		c.add(50 * time.Millisecond) // 100 reads over 5 s
	}
	d := l.Allow(id("k1"), id("a"), false)
	// the first read was at 0 s, now is 5 s: it leaves the window in 5 s.
	if d.Allowed || d.Remaining != 0 || d.RetryAfter != 5*time.Second || d.Reset != 5*time.Second {
		t.Fatalf("101st read: %+v", d)
	}
	if d := l.Allow(id("k2"), id("a"), false); !d.Allowed || d.Remaining != 99 {
		t.Errorf("another key is affected: %+v", d)
	}
	if d := l.Allow(id("k1"), id("a"), true); !d.Allowed || d.Limit != 50 || d.Remaining != 49 {
		t.Errorf("writes share the reads' window: %+v", d)
	}
	// the window slides: after the first read expires, exactly one more read fits.
	c.add(5 * time.Second)
	if d := l.Allow(id("k1"), id("a"), false); !d.Allowed || d.Remaining != 0 {
		t.Errorf("after the slide: %+v", d)
	}
	if d := l.Allow(id("k1"), id("a"), false); d.Allowed || d.RetryAfter != 50*time.Millisecond {
		t.Errorf("the slide freed more than one slot: %+v", d)
	}
	c.add(Window)
	if d := l.Allow(id("k1"), id("a"), false); !d.Allowed || d.Remaining != 99 {
		t.Errorf("after a quiet window: %+v", d)
	}
}

func TestWritesLimit(t *testing.T) {
	c := newClock()
	l := New(Limits{ReadsPer10s: 100, WritesPer10s: 50}, c.now)
	for i := range 50 {
		if d := l.Allow(id("k"), id("a"), true); !d.Allowed {
			t.Fatalf("write %d refused", i+1)
		}
	}
	if d := l.Allow(id("k"), id("a"), true); d.Allowed || d.RetryAfter != Window {
		t.Fatalf("51st write: %+v", d)
	}
	if d := l.Allow(id("k"), id("a"), false); !d.Allowed {
		t.Errorf("reads refused after writes ran out: %+v", d)
	}
}

func TestRefusedRequestsDoNotCount(t *testing.T) {
	c := newClock()
	l := New(Limits{WritesPer10s: 2}, c.now)
	l.Allow(id("k"), id("a"), true)
	l.Allow(id("k"), id("a"), true)
	for range 10 {
		l.Allow(id("k"), id("a"), true) // hammering while limited
	}
	c.add(Window)
	if d := l.Allow(id("k"), id("a"), true); !d.Allowed || d.Remaining != 1 {
		t.Errorf("refused requests were counted: %+v", d)
	}
}

func TestDisabled(t *testing.T) {
	c := newClock()
	l := New(Limits{}, c.now)
	for range 10_000 {
		if d := l.Allow(id("k"), id("a"), true); !d.Allowed || d.Limit != 0 || d.DayLimit != 0 {
			t.Fatalf("disabled limiter refused or reported limits: %+v", d)
		}
	}
}

func TestAccountDay(t *testing.T) {
	c := newClock()
	l := New(Limits{AccountPerDay: 3}, c.now)
	l.Allow(id("k1"), id("acct"), false)
	l.Allow(id("k2"), id("acct"), true)
	if d := l.Allow(id("k3"), id("acct"), false); !d.Allowed || d.DayRemaining != 0 || d.DayLimit != 3 {
		t.Fatalf("third: %+v", d)
	}
	d := l.Allow(id("k1"), id("acct"), false)
	if d.Allowed || d.RetryAfter != 14*time.Hour+30*time.Minute {
		t.Fatalf("fourth: %+v, want refused until midnight UTC", d)
	}
	if d := l.Allow(id("k9"), id("other"), false); !d.Allowed {
		t.Errorf("another account is affected: %+v", d)
	}
	c.add(14*time.Hour + 30*time.Minute)
	if d := l.Allow(id("k1"), id("acct"), false); !d.Allowed || d.DayRemaining != 2 {
		t.Errorf("next day: %+v", d)
	}
}

func TestIdleKeysAreForgotten(t *testing.T) {
	c := newClock()
	l := New(Limits{ReadsPer10s: 5, AccountPerDay: 10}, c.now)
	for i := range 1000 {
		l.Allow(ID{byte(i), byte(i >> 8)}, id("acct"), false)
	}
	c.add(2 * Window)
	l.Allow(id("fresh"), id("acct"), false)
	if n := len(l.windows); n != 1 {
		t.Errorf("%d windows kept after they went idle, want 1", n)
	}
}

// The sweep of idle state keeps the day's count and drops past days': an account that used
// its day before a sweep has no more of it after one, and yesterday's count is forgotten.
func TestTheSweepKeepsTodayAndForgetsPastDays(t *testing.T) {
	c := newClock()
	l := New(Limits{AccountPerDay: 3}, c.now)
	l.Allow(id("k"), id("yesterday"), false)
	c.add(15 * time.Hour) // past midnight UTC
	for range 3 {
		l.Allow(id("k"), id("acct"), false)
	}
	c.add(2 * Window) // the next request sweeps
	if d := l.Allow(id("k2"), id("acct"), false); d.Allowed || d.DayRemaining != 0 {
		t.Errorf("after a sweep the used day came back: %+v", d)
	}
	if _, kept := l.days[id("yesterday")]; kept {
		t.Error("yesterday's count survived the sweep")
	}
}
