package delivery_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/delivery"
	"github.com/contactd/contactd/internal/testkit"
)

// One account's three receivers answer their first delivery, then hang; another account's
// receiver answers at once. The hanging ones never time out here (their attempts end only when
// the test releases them), so the healthy receiver gets every one of its deliveries while
// they hang, whatever the machine's speed. Each hanging receiver, having succeeded once, holds
// exactly its limit of attempts at once (4), never more.
func TestHangingReceiversDelayOnlyThemselves(t *testing.T) {
	t.Parallel()
	const maxInFlight = 4
	a := testkit.NewAPI(t, testkit.LocalDelivery, func(c *testkit.Config) {
		c.WebhookTimeout, c.WebhookRescueAfter, c.WebhookWorkers, c.WebhookMaxInFlight = time.Hour, 2*time.Hour, 16, maxInFlight
	})
	_, key := a.Account("acme")
	release := make(chan struct{})
	type hanging struct{ now, peak atomic.Int32 }
	hangs := make([]*hanging, 3)
	for i := range hangs {
		h := &hanging{}
		hangs[i] = h
		rc := testkit.NewReceiver(t)
		rc.Respond = func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 { // a receiver that never succeeded gets one attempt at a time
				w.WriteHeader(http.StatusNoContent)
				return
			}
			n32 := h.now.Add(1)
			for p := h.peak.Load(); n32 > p && !h.peak.CompareAndSwap(p, n32); p = h.peak.Load() {
			}
			select {
			case <-release:
			case <-r.Context().Done():
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
		healthy.Next(t)
	}
	for i, h := range hangs {
		testkit.Eventually(t, fmt.Sprintf("hanging receiver %d holding %d attempts", i, maxInFlight),
			func() bool { return h.peak.Load() >= maxInFlight })
	}
	// every claim since has seen the three receivers full (12 of 16 workers hang)
	for i, h := range hangs {
		if p := h.peak.Load(); p != maxInFlight {
			t.Errorf("hanging receiver %d had %d attempts at once, want %d", i, p, maxInFlight)
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
	started := time.Now()
	a.StartWorkers()
	second := testkit.SecondDeliveryService(t, a, 8) // the pace holds across processes
	second.UsePolling(100 * time.Millisecond)
	second.Start()
	testkit.StopAtEnd(t, second.Stop)
	var last time.Time
	for range 12 {
		last = rc.Next(t).At
	}
	// 12 deliveries at 4 a second are claimed over at least 11/4 s less one claim's worth:
	// a busy machine can only spread them further (unthrottled, they take milliseconds)
	if took := last.Sub(started); took < 2500*time.Millisecond {
		t.Errorf("12 deliveries at 4 a second all arrived %v after the workers started", took)
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
	refused := rc.Next(t).At
	// the refusal is recorded (and the hold with it) before the next event exists
	testkit.Eventually(t, "the refused attempt recorded", func() bool {
		var l api.DeliveryAttemptList
		a.Do("GET", "/public/v1/webhooks/"+sub.SubscriptionId+"/deliveries", key, nil).JSON(t, &l)
		return len(l.Attempts) == 1
	})
	// held back, and the refusal counted against the receiver's health as any failure is
	if n := a.Count(t, `SELECT count(*) FROM webhook_subscriptions WHERE next_send_at IS NOT NULL AND consecutive_failures = 1`); n != 1 {
		t.Errorf("%d subscriptions held back with one failure counted, want 1", n)
	}
	a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "two@example.com", "tags": []string{"x"}})
	next := rc.Next(t)
	if wait := next.At.Sub(refused); wait < 1500*time.Millisecond {
		t.Errorf("the next delivery came %v after a Retry-After of 2 s", wait)
	}
}

// Workers are shared between accounts by what they hold, not by age: account A's three
// receivers each hold a worker (every one of the 3) with 57 more of its deliveries due
// behind them; account B's one delivery, due after all of them, is the next attempt made
// when one of A's ends. (Before, the freed worker went on with A's next delivery, and the
// dispatcher gave the next free one to A's oldest.)
func TestAnAccountsBacklogQueuesBehindItself(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, testkit.LocalDelivery, func(c *testkit.Config) {
		c.WebhookTimeout, c.WebhookRescueAfter, c.WebhookWorkers, c.WebhookMaxInFlight = time.Hour, 2*time.Hour, 3, 4
	})
	busy := holdBusyAccount(t, a)
	a.StartWorkers()
	t.Cleanup(func() { close(busy.release) }) // before the workers stop: cleanups run last first
	busy.waitHolding(t)
	busy.createB(t)
	busy.release <- struct{}{} // one of A's attempts ends: its worker is the only free one
	busy.b.Next(t)
	if got := <-busy.bArrivedAs; got != 4 {
		t.Errorf("B's delivery was attempt %d to arrive, want 4 (the first after A's three)", got)
	}
}

// The same, with B's delivery made where nothing tells these workers of it (another
// process's commit, a retry coming due) and no poll due for an hour: a worker freed while the
// last claim filled every worker goes back to the dispatcher, which claims again, rather
// than on with its own subscription's next delivery.
func TestAFreedWorkerGoesBackWhileEveryWorkerWasTaken(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, testkit.LocalDelivery)
	busy := holdBusyAccount(t, a)
	unwokenWorkers(t, a, 3, io.Discard)
	t.Cleanup(func() { close(busy.release) }) // before the workers stop: cleanups run last first
	busy.waitHolding(t)
	busy.createB(t) // the API's commit wakes the API's workers, which are not running
	busy.release <- struct{}{}
	testkit.Eventually(t, "a fourth attempt", func() bool { return busy.arrivals.Load() >= 4 })
	select {
	case got := <-busy.bArrivedAs:
		if got != 4 {
			t.Errorf("B's delivery was attempt %d to arrive, want 4 (the first after A's three)", got)
		}
	default:
		t.Error("the fourth attempt was A's: the freed worker went on with A's backlog, B's delivery waits behind it")
	}
}

// busyAccount is account A with three receivers that each hold their attempt until released,
// and 60 deliveries due to them, beside account B, subscribed, with nothing due yet.
type busyAccount struct {
	a          *testkit.API
	keyB       string
	b          *testkit.Receiver
	arrivals   atomic.Int32
	release    chan struct{}
	bArrivedAs chan int32
}

func holdBusyAccount(t *testing.T, a *testkit.API) *busyAccount {
	t.Helper()
	busy := &busyAccount{a: a, release: make(chan struct{}, 100), bArrivedAs: make(chan int32, 1)}
	_, keyA := a.Account("busy")
	_, busy.keyB = a.Account("quiet")
	for i := range 3 {
		rc := testkit.NewReceiver(t)
		rc.Respond = func(n int, w http.ResponseWriter, r *http.Request) {
			busy.arrivals.Add(1)
			select {
			case <-busy.release:
			case <-r.Context().Done():
			}
			w.WriteHeader(http.StatusNoContent)
		}
		if r := a.Do("POST", "/public/v1/webhooks", keyA, map[string]any{"url": fmt.Sprintf("%s?a=%d", rc.URL, i), "eventType": "TagsAdded"}); r.Status != 200 {
			t.Fatalf("subscribe: %d %s", r.Status, r.Body)
		}
	}
	busy.b = testkit.NewReceiver(t)
	// the receiver hands its request to Next before Respond runs: the order is sent from here
	busy.b.Respond = func(n int, w http.ResponseWriter, r *http.Request) {
		busy.bArrivedAs <- busy.arrivals.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}
	if r := a.Do("POST", "/public/v1/webhooks", busy.keyB, map[string]any{"url": busy.b.URL, "eventType": "TagsAdded"}); r.Status != 200 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	for i := range 20 {
		if r := a.Do("POST", "/public/v1/contact", keyA, map[string]any{"email": fmt.Sprintf("a%d@example.com", i), "tags": []string{"x"}}); r.Status != 200 {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
	}
	return busy
}

func (busy *busyAccount) waitHolding(t *testing.T) {
	t.Helper()
	testkit.Eventually(t, "A's receivers holding the 3 workers", func() bool { return busy.arrivals.Load() == 3 })
}

func (busy *busyAccount) createB(t *testing.T) {
	t.Helper()
	if r := busy.a.Do("POST", "/public/v1/contact", busy.keyB, map[string]any{"email": "b@example.com", "tags": []string{"x"}}); r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
}

// Workers that go on from a delivery to their subscription's next one swap their lease for the
// next in one transaction, side by side: three accounts' subscriptions on one receiver, events
// made while the workers deliver (so the dispatcher's claims come between the workers'), and
// the receiver never has more than its limit of attempts at once.
func TestAReceiversLimitHoldsWhileWorkersGoOn(t *testing.T) {
	t.Parallel()
	const maxInFlight = 2
	a := testkit.NewAPI(t, testkit.LocalDelivery, func(c *testkit.Config) {
		c.WebhookWorkers, c.WebhookMaxInFlight = 16, maxInFlight
	})
	var now, peak atomic.Int32
	rc := testkit.NewReceiver(t)
	rc.Respond = func(_ int, w http.ResponseWriter, _ *http.Request) {
		n := now.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		runtime.Gosched() // another attempt may arrive meanwhile
		now.Add(-1)
		w.WriteHeader(http.StatusNoContent)
	}
	keys := make([]string, 3)
	for i := range keys {
		_, keys[i] = a.Account(fmt.Sprintf("shared-receiver-%d", i))
		if r := a.Do("POST", "/public/v1/webhooks", keys[i], map[string]any{"url": rc.URL, "eventType": "TagsAdded"}); r.Status != 200 {
			t.Fatalf("subscribe: %d %s", r.Status, r.Body)
		}
	}
	a.StartWorkers()
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		for _, k := range keys {
			wg.Go(func() {
				if r := a.Do("POST", "/public/v1/contact", k, map[string]any{"email": fmt.Sprintf("s%d@example.com", i), "tags": []string{"x"}}); r.Status != 200 {
					t.Errorf("create: %d %s", r.Status, r.Body)
				}
			})
		}
	}
	wg.Wait()
	for range n * len(keys) {
		rc.Next(t)
	}
	if p := peak.Load(); p > maxInFlight {
		t.Errorf("the receiver had %d attempts at once, want at most %d", p, maxInFlight)
	}
	testkit.Eventually(t, "every delivery Succeeded, no lease left", func() bool {
		var open int
		if err := a.Store.Pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries
			WHERE leased_until IS NOT NULL OR status <> 'Succeeded'`).Scan(&open); err != nil {
			t.Fatal(err)
		}
		return open == 0
	})
}

// A worker goes on from a success to its subscription's next due delivery in the same
// transaction, without the dispatcher: 80 deliveries to one receiver (4 at once) by 8 workers
// take the dispatcher's claim that starts the 4 chains and a few more (one when each chain
// ends), not one per delivery. Nothing wakes these workers and their poll is an hour away, so
// every claim counted is one the queue made for itself.
func TestWorkersGoOnFromASuccessWithoutTheDispatcher(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false) // a receiver subscribed to TagsAdded
	a, key, rc := s.a, s.key, s.rc
	// a receiver that has succeeded before gets its 4 attempts at once from the start
	if _, err := a.Store.Pool.Exec(context.Background(), `UPDATE webhook_subscriptions SET last_success_at = now()`); err != nil {
		t.Fatal(err)
	}
	const n = 80
	for i := range n {
		if r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": fmt.Sprintf("c%d@example.com", i), "tags": []string{"x"}}); r.Status != 200 {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
	}
	var log testkit.LogBuffer
	workers := unwokenWorkers(t, a, 8, &log)
	for range n {
		rc.Next(t)
	}
	testkit.Eventually(t, "every delivery Succeeded, no lease left", func() bool {
		return a.Count(t, `SELECT count(*) FROM webhook_deliveries WHERE leased_until IS NOT NULL OR status <> 'Succeeded'`) == 0
	})
	if claims := workers.Claims(); claims > n/4 {
		t.Errorf("the dispatcher claimed %d times for %d deliveries: the workers did not go on by themselves", claims, n)
	}
	if strings.Contains(log.String(), "level=WARN") || strings.Contains(log.String(), "level=ERROR") {
		t.Errorf("the workers warned with nothing wrong:\n%s", log.String())
	}
}

// An attempt whose record fails (the database refuses it: here a trigger, in production the
// database away) is logged as a warning, and made again once its lease ends.
func TestAnAttemptNotRecordedIsLogged(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false) // a receiver subscribed to TagsAdded
	a, key, rc := s.a, s.key, s.rc
	if r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "unrecorded@example.com", "tags": []string{"x"}}); r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	if _, err := a.Store.Pool.Exec(context.Background(), `
		CREATE FUNCTION refuse_records() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$;
		CREATE TRIGGER refuse_records BEFORE UPDATE OF status ON webhook_deliveries FOR EACH ROW EXECUTE FUNCTION refuse_records()`); err != nil {
		t.Fatal(err)
	}
	var log testkit.LogBuffer
	unwokenWorkers(t, a, 2, &log)
	rc.Next(t)
	testkit.Eventually(t, "the warning that the attempt was not recorded", func() bool {
		return strings.Contains(log.String(), "recording an attempt failed")
	})
	if n := a.Count(t, `SELECT count(*) FROM webhook_deliveries WHERE status = 'Pending' AND leased_until IS NOT NULL`); n != 1 {
		t.Errorf("%d deliveries Pending under their lease, want 1 (made again when it ends)", n)
	}
}

// unwokenWorkers starts delivery workers on a's database (each receiver 4 attempts at once)
// that nothing in the test wakes and whose poll is an hour away: every claim they make, they
// make for themselves. They log to log, and stop when the test ends.
func unwokenWorkers(t *testing.T, a *testkit.API, workers int, log io.Writer) *delivery.Service {
	t.Helper()
	svc := delivery.New(a.Store, delivery.Options{Timeout: time.Hour, RescueAfter: 2 * time.Hour, Workers: workers, MaxInFlight: 4,
		PollEvery: time.Hour, AllowedNetworks: a.Cfg.WebhookAllowedNetworks, Secrets: a.Svc.Secrets,
		Log: slog.New(slog.NewTextHandler(log, nil))})
	svc.Start()
	testkit.StopAtEnd(t, svc.Stop)
	return svc
}
