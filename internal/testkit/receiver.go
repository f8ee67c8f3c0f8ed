package testkit

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/contactd/contactd/internal/config"
)

// Delivered is one request a Receiver got.
type Delivered struct {
	Header http.Header
	Body   []byte
	At     time.Time
}

// Receiver is a webhook receiver on loopback. Every body it gets is checked against the
// spec's WebhookPayload schema. Respond decides each answer from the 1-based count of
// requests so far and the request (its body readable again); the default answers 204.
type Receiver struct {
	URL     string
	Got     chan Delivered
	mu      sync.Mutex
	n       int
	Respond func(n int, w http.ResponseWriter, r *http.Request)
}

// NewReceiver starts a receiver for one test.
func NewReceiver(t testing.TB) *Receiver {
	rc := &Receiver{Got: make(chan Delivered, 1000)}
	closing := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ValidatePayload(t, body)
		rc.mu.Lock()
		rc.n++
		n, respond := rc.n, rc.Respond
		rc.mu.Unlock()
		got := Delivered{Header: r.Header.Clone(), Body: body, At: time.Now()}
		select {
		case rc.Got <- got: // while there is room, every request is kept, its sender gone or not
		default:
			select { // a request nobody takes is left when its sender or the test has gone
			case rc.Got <- got:
			case <-r.Context().Done():
				return
			case <-closing:
				return
			}
		}
		if respond == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		respond(n, w, r)
	}))
	t.Cleanup(func() {
		close(closing)
		srv.Close()
	})
	rc.URL = srv.URL + "/hook"
	return rc
}

// Next waits for the next request (for Patience at most: a guard, not a claim of speed).
func (rc *Receiver) Next(t testing.TB) Delivered {
	t.Helper()
	select {
	case d := <-rc.Got:
		return d
	case <-time.After(time.Until(deadline(t))):
		t.Fatalf("no delivery within %v", Patience)
		return Delivered{}
	}
}

// None fails the test when the receiver holds a request nobody took. Call it once what would
// have to happen first has happened (API.DeliveriesSettled: every due attempt made), so that
// "nothing was sent" is proven by the queue's state, not by a quiet moment.
func (rc *Receiver) None(t testing.TB) {
	t.Helper()
	select {
	case got := <-rc.Got:
		t.Errorf("unexpected delivery: %s", got.Body)
	default:
	}
}

// LocalDelivery lets webhooks reach loopback receivers quickly: plain http, 127.0.0.0/8
// exempt from the SSRF guard, a short attempt timeout.
func LocalDelivery(c *config.Config) {
	c.WebhookAllowHTTP = true
	c.WebhookAllowedRaw = "127.0.0.0/8"
	c.WebhookTimeout = time.Second
	c.WebhookRescueAfter = 12 * time.Second
}

// StartWorkers runs the API's workers (deliveries, enrichment, periodic tasks) until the
// test ends.
func (a *API) StartWorkers() {
	a.t.Helper()
	a.Svc.StartWorkers()
	StopAtEnd(a.t, a.Svc.StopWorkers)
}

// StopAtEnd stops a started service when the test ends, giving its work 5 seconds. Work that
// ignores its cancellation would hold the test's end forever (a stop waits for it): after
// Patience the test fails instead, and its failure is reported.
func StopAtEnd(t testing.TB, stop func(context.Context) error) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			_ = stop(ctx)
		}()
		select {
		case <-stopped:
		case <-time.After(Patience):
			t.Errorf("the workers had not stopped %v after they were told to: work that ignores its cancellation", Patience)
		}
	})
}
