// Package delivery sends stored events to subscribers: workers claim due deliveries from
// their table (queue.go), POST the signed payload through an SSRF-guarded client, record the
// attempt, move the subscription between Active, Failing and Removed, and schedule the next
// attempt on the delivery itself.
package delivery

import (
	"net/http"
	"strconv"
	"time"
)

// Steps are the waits before each retry: attempt n+1 runs Steps[n-1] after attempt n
// failed. With the first attempt at once, attempts run at 0, 5 s, 5 min, 30 min, 2 h, 5 h,
// 10 h and 10 h: about 27.5 hours in all.
var Steps = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
	5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// MaxAttempts is the first attempt plus one per step.
var MaxAttempts = len(Steps) + 1

// Jitter is the spread around each step, ±20 %.
const Jitter = 0.2

// NextDelay is the wait after attempt (1-based) failed, or ok=false when it was the last.
// rnd returns a number in [0, 1). A Retry-After from the receiver is honoured, up to the
// jittered step.
func NextDelay(attempt int, retryAfter time.Duration, rnd func() float64) (time.Duration, bool) {
	if attempt < 1 || attempt > len(Steps) {
		return 0, false
	}
	step := Steps[attempt-1]
	d := time.Duration(float64(step) * (1 - Jitter + 2*Jitter*rnd()))
	if retryAfter > 0 && retryAfter < d {
		d = retryAfter
	}
	return d, true
}

// retryAfter reads a Retry-After header (seconds or an HTTP date) of a 429 or 503.
func retryAfter(resp *http.Response, now time.Time) time.Duration {
	if resp == nil || (resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
		return 0
	}
	v := resp.Header.Get("Retry-After")
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
