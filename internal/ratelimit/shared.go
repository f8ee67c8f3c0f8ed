package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
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

// Shared enforces the limits across every contactd process through Redis, with the algorithm
// of Limiter: each key's sliding 10-second window is a sorted set of its admitted requests'
// times (Redis's clock, so every process agrees), each account's UTC day a counter per day
// (INCR, expiring after the day). A key's burst and steady rate are therefore the same with
// Redis or without. When Redis cannot answer, the process falls back to its own Limiter, so
// traffic goes on; fallbacks are logged (once a minute) and counted.
type Shared struct {
	pool     *redis.Pool
	limits   Limits
	now      func() time.Time
	local    *Limiter
	log      *slog.Logger
	fallback func() // counts a fallback (metrics)
	timeout  time.Duration
	warned   atomic.Int64
	member   string        // this process's prefix of the window's members, unique with seq
	seq      atomic.Uint64 // two requests in one microsecond are two members
}

// decide is one decision in one round trip: the account's day counted first (INCRBY, taken
// back when over its limit), then Limiter's window kept in Redis, which drops the times that
// left the window and admits the request when the day did and fewer than the limit remain;
// a request the window refuses is taken back from the day. It returns whether the day
// admitted it, the day's count after it, whether the window did, how many the window holds,
// and the microseconds until the oldest leaves (-1: none). A limit of 0 is off. (Both keys in
// one script: a single Redis, not a Redis Cluster, whose slots would part them.)
var decide = redis.NewScript(2, `
local wkey, dkey = KEYS[1], KEYS[2]
local limit, window, daylimit, daycost, member, dayttl =
  tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
local dayok, used = 1, 0
if daylimit > 0 then
  used = redis.call('INCRBY', dkey, daycost)
  if used == daycost then redis.call('EXPIRE', dkey, dayttl) end
  if used > daylimit then
    redis.call('DECRBY', dkey, daycost)
    dayok = 0
  end
end
local allowed, n, reset = 1, 0, -1
if limit > 0 then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  redis.call('ZREMRANGEBYSCORE', wkey, '-inf', now - window)
  n = redis.call('ZCARD', wkey)
  allowed = 0
  if dayok == 1 and n < limit then
    redis.call('ZADD', wkey, now, member)
    redis.call('PEXPIRE', wkey, math.ceil(window / 1000))
    n, allowed = n + 1, 1
  end
  local oldest = redis.call('ZRANGE', wkey, 0, 0, 'WITHSCORES')
  if #oldest > 0 then reset = tonumber(oldest[2]) + window - now end
  if dayok == 1 and allowed == 0 and daylimit > 0 then
    redis.call('DECRBY', dkey, daycost)
    used = used - daycost
  end
end
return {dayok, used, allowed, n, reset}
`)

// NewShared connects to the Redis at rawURL: redis://[:password@]host:port/db (rediss:// for
// TLS), or unix:///path/to/redis.sock?db=N.
func NewShared(rawURL string, l Limits, o SharedOptions) (*Shared, error) {
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
	dial, err := dialer(rawURL, redis.DialConnectTimeout(o.Timeout), redis.DialReadTimeout(o.Timeout),
		redis.DialWriteTimeout(o.Timeout))
	if err != nil {
		return nil, err
	}
	// no retries: a retry would double the wait before the fallback; a connection that failed
	// is closed, not put back
	pool := &redis.Pool{DialContext: dial, MaxIdle: 10 * runtime.GOMAXPROCS(0), IdleTimeout: 5 * time.Minute}
	var prefix [8]byte
	_, _ = rand.Read(prefix[:])
	return &Shared{pool: pool, limits: l, now: o.Now, local: New(l, o.Now), log: o.Log,
		fallback: o.Fallback, timeout: o.Timeout, member: hex.EncodeToString(prefix[:]) + ":"}, nil
}

// dialer connects to the Redis that rawURL names.
func dialer(rawURL string, opts ...redis.DialOption) (func(context.Context) (redis.Conn, error), error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redis URL: %w", err)
	}
	switch u.Scheme {
	case "redis", "rediss":
		return func(ctx context.Context) (redis.Conn, error) {
			return redis.DialURLContext(ctx, rawURL, opts...)
		}, nil
	case "unix":
		if db := u.Query().Get("db"); db != "" {
			n, err := strconv.Atoi(db)
			if err != nil {
				return nil, fmt.Errorf("redis URL: db %q is not a number", db)
			}
			opts = append(opts, redis.DialDatabase(n))
		}
		if p, ok := u.User.Password(); ok {
			opts = append(opts, redis.DialPassword(p))
		}
		return func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "unix", u.Path, opts...)
		}, nil
	}
	return nil, fmt.Errorf("redis URL: scheme %q is none of redis, rediss, unix", u.Scheme)
}

// Close closes the connections to Redis.
func (s *Shared) Close() error { return s.pool.Close() }

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
	if limit <= 0 && d.DayLimit <= 0 {
		return d, nil
	}
	conn, err := s.pool.GetContext(ctx)
	if err != nil {
		return Decision{}, err
	}
	defer conn.Close()
	now := s.now().UTC()
	dayKey := "contactd:rl:day:" + hex.EncodeToString(account[:]) + ":" + now.Format(time.DateOnly)
	res, err := redis.Int64s(decide.DoContext(ctx, conn, "contactd:rl:"+kind+":"+hex.EncodeToString(key[:]), dayKey,
		limit, Window.Microseconds(), d.DayLimit, dayCost, s.member+strconv.FormatUint(s.seq.Add(1), 36),
		int((25 * time.Hour).Seconds())))
	if err == nil && len(res) != 5 {
		err = fmt.Errorf("rate limit script answered %d values, want 5", len(res))
	}
	if err != nil {
		return d, err
	}
	dayAdmitted, used, admitted, held, reset := res[0] == 1, int(res[1]), res[2] == 1, int(res[3]), time.Duration(res[4])*time.Microsecond
	if d.DayLimit > 0 {
		if dayAdmitted {
			d.DayRemaining = d.DayLimit - used
		} else {
			tomorrow := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
			d.Allowed, d.RetryAfter = false, tomorrow.Sub(now)
		}
	}
	if limit > 0 {
		d.Remaining = limit - held
		if reset >= 0 {
			d.Reset = reset
		}
		if d.Allowed && !admitted {
			d.Allowed, d.RetryAfter = false, d.Reset
		}
	}
	return d, nil
}
