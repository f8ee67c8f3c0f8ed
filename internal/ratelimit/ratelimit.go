// Package ratelimit counts requests per API key in a sliding 10-second window (reads and
// writes apart) and per account per UTC day. Limiter keeps them in the process: each contactd
// process has its own windows, so N processes behind a balancer admit up to N times the
// limits. Shared keeps the same windows in Redis, for every process at once.
package ratelimit

import (
	"sync"
	"time"
)

// Window is the length of the sliding window.
const Window = 10 * time.Second

// Limits are the allowances; 0 disables one.
type Limits struct {
	ReadsPer10s, WritesPer10s int
	AccountPerDay             int
}

// Decision is the outcome of one request against the limits, with what the headers show.
type Decision struct {
	Allowed bool
	// Limit and Remaining of the 10-second window; Limit 0 when that limit is off.
	Limit, Remaining int
	// DayLimit and DayRemaining of the account's day; DayLimit 0 when off.
	DayLimit, DayRemaining int
	// RetryAfter is when a refused request may be retried.
	RetryAfter time.Duration
	// Reset is when the 10-second window frees a slot: when its oldest request leaves it
	// (0 when it holds none). Clients pace themselves on it (RateLimit-Reset).
	Reset time.Duration
}

// ID names a key or an account (a UUID's bytes): a map key that costs no allocation.
type ID = [16]byte

// Limiter holds the windows of every key and account seen recently.
type Limiter struct {
	limits Limits
	now    func() time.Time

	mu        sync.Mutex
	windows   map[windowKey]*slidingLog
	days      map[ID]*dayCount
	lastSweep time.Time
}

type windowKey struct {
	key   ID
	write bool
}

// slidingLog keeps the times of the admitted requests of the last Window, oldest first, in
// a ring of capacity limit: memory is bounded by the limit, not by the traffic.
type slidingLog struct {
	times      []time.Time
	start, len int
}

type dayCount struct {
	day   string
	count int
}

// New returns a limiter; now is injected for tests.
func New(l Limits, now func() time.Time) *Limiter {
	return &Limiter{limits: l, now: now, windows: map[windowKey]*slidingLog{}, days: map[ID]*dayCount{}}
}

// Allow counts one request of key (in account) if the limits admit it.
func (l *Limiter) Allow(key, account ID, write bool) Decision {
	return l.AllowN(key, account, write, 1)
}

// AllowN counts one request of key in its 10-second window and dayCost requests in the
// account's day (a batch of N items costs N there), if the limits admit it.
func (l *Limiter) AllowN(key, account ID, write bool, dayCost int) Decision {
	now := l.now()
	limit := l.limits.ReadsPer10s
	if write {
		limit = l.limits.WritesPer10s
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	d := Decision{Allowed: true, Limit: limit, DayLimit: l.limits.AccountPerDay}
	var w *slidingLog
	if limit > 0 {
		w = l.window(windowKey{key, write}, limit)
		w.expire(now)
		d.Remaining = limit - w.len
		if w.len > 0 {
			d.Reset = w.oldest().Add(Window).Sub(now)
		}
		if w.len >= limit {
			d.Allowed, d.RetryAfter = false, d.Reset
		}
	}
	var dc *dayCount
	if l.limits.AccountPerDay > 0 {
		dc = l.day(account, now)
		d.DayRemaining = l.limits.AccountPerDay - dc.count
		if dc.count+dayCost > l.limits.AccountPerDay {
			tomorrow := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
			d.Allowed, d.RetryAfter = false, max(d.RetryAfter, tomorrow.Sub(now))
		}
	}
	if !d.Allowed {
		return d
	}
	if w != nil {
		w.push(now)
		d.Remaining--
		d.Reset = w.oldest().Add(Window).Sub(now)
	}
	if dc != nil {
		dc.count += dayCost
		d.DayRemaining -= dayCost
	}
	return d
}

// Full reports whether key's 10-second window (of reads, or of writes) admits nothing more
// now, and when it will, without counting anything.
func (l *Limiter) Full(key ID, write bool) (full bool, retryAfter time.Duration) {
	limit := l.limits.ReadsPer10s
	if write {
		limit = l.limits.WritesPer10s
	}
	if limit == 0 {
		return false, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.windows[windowKey{key, write}]
	if w == nil || len(w.times) != limit {
		return false, 0
	}
	if w.expire(now); w.len < limit {
		return false, 0
	}
	return true, w.oldest().Add(Window).Sub(now)
}

func (l *Limiter) window(k windowKey, limit int) *slidingLog {
	w := l.windows[k]
	if w == nil || len(w.times) != limit {
		w = &slidingLog{times: make([]time.Time, limit)}
		l.windows[k] = w
	}
	return w
}

func (l *Limiter) day(account ID, now time.Time) *dayCount {
	today := now.UTC().Format(time.DateOnly)
	dc := l.days[account]
	if dc == nil || dc.day != today {
		dc = &dayCount{day: today}
		l.days[account] = dc
	}
	return dc
}

// sweep drops windows with nothing in them and past days, at most once per Window, so idle
// keys do not accumulate.
func (l *Limiter) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < Window {
		return
	}
	l.lastSweep = now
	for k, w := range l.windows {
		if w.expire(now); w.len == 0 {
			delete(l.windows, k)
		}
	}
	today := now.UTC().Format(time.DateOnly)
	for a, dc := range l.days {
		if dc.day != today {
			delete(l.days, a)
		}
	}
}

func (w *slidingLog) oldest() time.Time { return w.times[w.start] }

func (w *slidingLog) expire(now time.Time) {
	for w.len > 0 && !w.oldest().Add(Window).After(now) {
		w.start = (w.start + 1) % len(w.times)
		w.len--
	}
}

func (w *slidingLog) push(t time.Time) {
	w.times[(w.start+w.len)%len(w.times)] = t
	w.len++
}
