package delivery_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contactd/contactd/gen/api"
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

// A throttled subscription gets its deliveries at its pace, across processes; PATCH sets
// and lifts the throttle, and the listing shows it.
func TestThrottledSubscription(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, testkit.LocalDelivery)
	_, key := a.Account("acme")
	rc := testkit.NewReceiver(t)
	r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": rc.URL, "eventType": "TagsAdded", "maxDeliveriesPerSecond": 4})
	var sub api.WebhookSubscription
	r.JSON(t, &sub)
	if r.Status != 200 || sub.MaxDeliveriesPerSecond == nil || *sub.MaxDeliveriesPerSecond != 4 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	for i := range 12 {
		a.Do("POST", "/public/v1/contact", key, map[string]any{"email": fmt.Sprintf("t%d@example.com", i), "tags": []string{"x"}})
	}
	a.StartWorkers()
	second := testkit.SecondDeliveryService(t, a, 8) // the pace holds across processes
	second.UsePolling(100 * time.Millisecond)
	second.Start()
	t.Cleanup(func() { _ = second.Stop(context.Background()) })
	first := rc.Next(t, 5*time.Second).At
	var within1s int
	for range 11 {
		if d := rc.Next(t, 10*time.Second); d.At.Sub(first) < time.Second {
			within1s++
		}
	}
	if within1s > 5 { // 4 a second, one claim's worth of slack
		t.Errorf("%d deliveries in the first second at 4 a second", within1s+1)
	}

	path := "/public/v1/webhooks/" + sub.SubscriptionId
	if r := a.Do("PATCH", path, key, map[string]any{"maxDeliveriesPerSecond": nil}); r.Status != 200 || strings.Contains(string(r.Body), "maxDeliveriesPerSecond") {
		t.Errorf("lifting the throttle: %d %s", r.Status, r.Body)
	}
	if r := a.Do("PATCH", path, key, map[string]any{"maxDeliveriesPerSecond": 20}); r.Status != 200 || !strings.Contains(string(r.Body), `"maxDeliveriesPerSecond":20`) {
		t.Errorf("setting it: %d %s", r.Status, r.Body)
	}
	if r := a.Do("GET", "/public/v1/webhooks", key, nil); !strings.Contains(string(r.Body), `"maxDeliveriesPerSecond":20`) {
		t.Errorf("listed without its throttle: %s", r.Body)
	}
	if r := a.Do("PATCH", path, key, map[string]any{}); r.Status != 200 || !strings.Contains(string(r.Body), `"maxDeliveriesPerSecond":20`) {
		t.Errorf("an empty PATCH changed something: %d %s", r.Status, r.Body)
	}
	for _, bad := range []any{0, 1001, "fast"} {
		if r := a.Do("PATCH", path, key, map[string]any{"maxDeliveriesPerSecond": bad}); r.Status != 400 {
			t.Errorf("maxDeliveriesPerSecond %v: %d", bad, r.Status)
		}
	}
	_, other := a.Account("other")
	if r := a.Do("PATCH", path, other, map[string]any{"maxDeliveriesPerSecond": 1}); r.Status != 404 {
		t.Errorf("another account: %d", r.Status)
	}
}

// A receiver's Retry-After holds back its subscription's next deliveries, not only the
// refused one.
func TestRetryAfterHoldsBackTheSubscription(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, testkit.LocalDelivery)
	_, key := a.Account("acme")
	rc := testkit.NewReceiver(t)
	rc.Respond = func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
	r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": rc.URL, "eventType": "TagsAdded"})
	var sub api.WebhookSubscription
	r.JSON(t, &sub)
	a.StartWorkers()
	a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "one@example.com", "tags": []string{"x"}})
	refused := rc.Next(t, 5*time.Second).At
	// the refusal is recorded (and the hold with it) before the next event exists
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var l api.DeliveryAttemptList
		a.Do("GET", "/public/v1/webhooks/"+sub.SubscriptionId+"/deliveries", key, nil).JSON(t, &l)
		if len(l.Attempts) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the refused attempt was not recorded")
		}
	}
	a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "two@example.com", "tags": []string{"x"}})
	next := rc.Next(t, 10*time.Second)
	if wait := next.At.Sub(refused); wait < 1500*time.Millisecond {
		t.Errorf("the next delivery came %v after a Retry-After of 2 s", wait)
	}
}
