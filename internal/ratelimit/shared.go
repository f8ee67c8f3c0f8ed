package ratelimit

import (
	"context"
	"encoding/hex"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Allower decides a request against the limits: the process's own windows (Limiter), or the
// ones every process shares (Shared).
type Allower interface {
	// AllowN counts one request in the key's window and dayCost in the account's day.
	AllowN(key, account ID, write bool, dayCost int) Decision
}

var _ Allower = (*Limiter)(nil)

// SharedOptions configures NewShared.
type SharedOptions struct {
	// Timeout bounds each decision's round trips: a Redis slower than this is treated as away,
	// and the process decides alone (100 ms when zero).
	Timeout time.Duration
	Now     func() time.Time // time.Now when nil
	Log     *slog.Logger
	// Fallback counts a decision made alone (metrics); may be nil.
	Fallback func()
}

// Shared enforces the limits across every contactd process through Redis: each key's
// 10-second allowance with redis_rate's GCRA limiter (the allowance at once, then refilled
// evenly over the window), each account's UTC day with a counter per day (INCR, expiring after
// the day). When Redis cannot answer, the process falls back to its own Limiter, so traffic
// goes on; fallbacks are logged (once a minute) and counted.
type Shared struct {
	rdb      *redis.Client
	rl       *redis_rate.Limiter
	limits   Limits
	now      func() time.Time
	local    *Limiter
	log      *slog.Logger
	fallback func() // counts a fallback (metrics)
	timeout  time.Duration
	warned   atomic.Int64
}

// NewShared connects to the Redis at url (redis://host:port/db).
func NewShared(url string, l Limits, o SharedOptions) (*Shared, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = 100 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Fallback == nil {
		o.Fallback = func() {}
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = o.Timeout, o.Timeout, o.Timeout
	opt.MaxRetries = -1 // a retry would double the wait before the fallback
	rdb := redis.NewClient(opt)
	return &Shared{rdb: rdb, rl: redis_rate.NewLimiter(rdb), limits: l, now: o.Now, local: New(l, o.Now), log: o.Log,
		fallback: o.Fallback, timeout: o.Timeout}, nil
}

// Close closes the connections to Redis.
func (s *Shared) Close() error { return s.rdb.Close() }

// Allow counts one request of key (in account) if the shared limits admit it; when Redis is
// away, the process's own limits decide.
func (s *Shared) Allow(key, account ID, write bool) Decision { return s.AllowN(key, account, write, 1) }

// AllowN is Allow with dayCost requests counted in the account's day.
func (s *Shared) AllowN(key, account ID, write bool, dayCost int) Decision {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	d, err := s.allow(ctx, key, account, write, dayCost)
	if err != nil {
		s.fallback()
		if last := s.warned.Load(); time.Since(time.Unix(0, last)) > time.Minute && s.warned.CompareAndSwap(last, time.Now().UnixNano()) {
			s.log.Warn("rate limits: Redis unreachable, each process limits alone", slog.Any("error", err))
		}
		return s.local.AllowN(key, account, write, dayCost)
	}
	return d
}

func (s *Shared) allow(ctx context.Context, key, account ID, write bool, dayCost int) (Decision, error) {
	limit, kind := s.limits.ReadsPer10s, "r"
	if write {
		limit, kind = s.limits.WritesPer10s, "w"
	}
	d := Decision{Allowed: true, Limit: limit, DayLimit: s.limits.AccountPerDay}
	now := s.now().UTC()
	dayKey := "contactd:rl:day:" + hex.EncodeToString(account[:]) + ":" + now.Format(time.DateOnly)
	counted := false // the request is counted in the account's day, and must be taken back if refused
	if d.DayLimit > 0 {
		used, err := s.rdb.IncrBy(ctx, dayKey, int64(dayCost)).Result()
		if err != nil {
			return d, err
		}
		if used == int64(dayCost) {
			s.rdb.Expire(ctx, dayKey, 25*time.Hour)
		}
		if int(used) > d.DayLimit {
			s.rdb.DecrBy(ctx, dayKey, int64(dayCost))
			tomorrow := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
			d.Allowed, d.RetryAfter = false, tomorrow.Sub(now)
		} else {
			counted, d.DayRemaining = true, d.DayLimit-int(used)
		}
	}
	if limit > 0 {
		cost := 1
		if !d.Allowed {
			cost = 0 // refused by the day: the window is only shown
		}
		res, err := s.rl.AllowN(ctx, "contactd:rl:"+kind+":"+hex.EncodeToString(key[:]),
			redis_rate.Limit{Rate: limit, Burst: limit, Period: Window}, cost)
		if err != nil {
			return d, err
		}
		d.Remaining = res.Remaining
		// GCRA refills a slot every interval: the next one frees that much before the last
		interval := Window / time.Duration(limit)
		d.Reset = max(0, res.ResetAfter-time.Duration(limit-res.Remaining-1)*interval)
		if d.Allowed && res.Allowed == 0 {
			d.Allowed, d.RetryAfter = false, res.RetryAfter
			if counted {
				s.rdb.DecrBy(ctx, dayKey, int64(dayCost))
				d.DayRemaining += dayCost
			}
		}
	}
	return d, nil
}
