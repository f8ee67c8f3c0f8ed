package app

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"
)

// Drain is how a stopping serve leaves its place behind a balancer without failing a request.
// Once started, /readyz answers 503, so the balancer's checks take the process out, and every
// answer closes its connection after it. No connection is closed under the balancer meanwhile:
// one it holds idle may carry a request at any moment until it has acted on its checks, and a
// request sent on a connection closed as it arrives is lost to its client, who sees the
// connection end and no answer (a POST is not retried by anyone).
//
// The drain is over after its time or, given a count of checks, once /readyz has answered
// that many with 503: a balancer checks a server one check at a time, so the check that comes
// after the one that took the process out is sent only once the balancer acted on it.
type Drain struct {
	on     atomic.Bool
	checks atomic.Int64 // /readyz answered 503 since the drain started
	want   int64        // the checks that end the drain; 0: only its time does
	enough chan struct{}
}

var errDraining = errors.New("draining: stopping")

// Run starts the drain and returns when it is over: after wait, or once /readyz has answered
// checks of them with 503 (checks > 0), or when stop is closed.
func (d *Drain) Run(wait time.Duration, checks int, stop <-chan struct{}) {
	d.want, d.enough = int64(checks), make(chan struct{})
	d.on.Store(true) // publishes want and enough to the probes that see it
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-d.enough:
	case <-stop:
	}
}

// Checks is how many checks /readyz has answered with 503 since the drain started.
func (d *Drain) Checks() int64 { return d.checks.Load() }

// Ready is check until the drain starts, then not ready.
func (d *Drain) Ready(check func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if !d.on.Load() {
			return check(ctx)
		}
		if n := d.checks.Add(1); n == d.want {
			close(d.enough)
		}
		return errDraining
	}
}

// Handler is h, whose answers close their connection once the drain has started.
func (d *Drain) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.on.Load() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}
