package delivery_test

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contactd/contactd/internal/testkit"
)

// One account's three receivers hang until the attempt times out; another account's receiver
// answers at once. The healthy one gets every one of its deliveries while the others still
// hang, and no receiver ever has more than its limit of attempts at once.
func TestHangingReceiversDelayOnlyThemselves(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, testkit.LocalDelivery, func(c *testkit.Config) {
		c.WebhookTimeout, c.WebhookRescueAfter, c.WebhookWorkers, c.WebhookMaxInFlight = 5*time.Second, 20*time.Second, 16, 4
	})
	_, key := a.Account("acme")
	release := make(chan struct{})
	var firstTimeout atomic.Int64 // unix nanos of the first hanging attempt that ended
	type hanging struct{ now, peak atomic.Int32 }
	hangs := make([]*hanging, 3)
	for i := range hangs {
		h := &hanging{}
		hangs[i] = h
		rc := testkit.NewReceiver(t)
		rc.Respond = func(_ int, w http.ResponseWriter, r *http.Request) {
			n := h.now.Add(1)
			for p := h.peak.Load(); n > p && !h.peak.CompareAndSwap(p, n); p = h.peak.Load() {
			}
			select {
			case <-release:
			case <-r.Context().Done(): // the attempt timed out
				firstTimeout.CompareAndSwap(0, time.Now().UnixNano())
			}
			h.now.Add(-1)
		}
		if r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": fmt.Sprintf("%s?hang=%d", rc.URL, i), "eventType": "TagsAdded"}); r.Status != 200 {
			t.Fatalf("subscribe: %d %s", r.Status, r.Body)
		}
	}
	_, otherKey := a.Account("other")
	healthy := testkit.NewReceiver(t)
	if r := a.Do("POST", "/public/v1/webhooks", otherKey, map[string]any{"url": healthy.URL, "eventType": "TagsAdded"}); r.Status != 200 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	a.StartWorkers()
	t.Cleanup(func() { close(release) }) // before the workers stop: cleanups run last first
	const n = 60
	var wg sync.WaitGroup
	for i := range n {
		for _, k := range []string{key, otherKey} { // the hanging account's events first, each time
			wg.Go(func() {
				if r := a.Do("POST", "/public/v1/contact", k, map[string]any{"email": fmt.Sprintf("h%d@example.com", i), "tags": []string{"x"}}); r.Status != 200 {
					t.Errorf("create: %d %s", r.Status, r.Body)
				}
			})
		}
	}
	wg.Wait()
	for range n {
		healthy.Next(t, 20*time.Second)
	}
	done := time.Now().UnixNano()
	if ft := firstTimeout.Load(); ft != 0 && ft < done {
		t.Errorf("the healthy receiver's last delivery came %v after a hanging attempt had timed out: it waited for them",
			time.Duration(done-ft))
	}
	for i, h := range hangs {
		if p := h.peak.Load(); p > 4 || p == 0 {
			t.Errorf("hanging receiver %d had %d attempts at once, want 1 to 4", i, p)
		}
	}
}
