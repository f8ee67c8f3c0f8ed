package delivery_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/contactd/contactd/internal/testkit"
)

// A change committed in the worker's own process, and a redelivery asked of it, are sent at
// once: the commit wakes the workers, which otherwise would look only every hour here, so a
// delivery after the first look can only have been woken (the test never waits an hour).
func TestCommitWakesTheWorkers(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	s.a.Svc.Deliveries.UsePolling(time.Hour)
	s.a.StartWorkers()
	testkit.Eventually(t, "the workers' first look", func() bool { return s.a.Svc.Deliveries.Claims() >= 1 })
	s.addTags(t, "wake@example.com", "x")
	first := s.rc.Next(t)
	att := s.waitAttempts(t, 1)
	r := s.a.Do("POST", "/public/v1/webhooks/"+s.sub.SubscriptionId+"/deliveries/"+att[0].DeliveryId+"/redeliver", s.key, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("redeliver: %d %s", r.Status, r.Body)
	}
	again := s.rc.Next(t)
	if again.Header.Get("webhook-id") != first.Header.Get("webhook-id") {
		t.Errorf("redelivered %s, want %s", again.Header.Get("webhook-id"), first.Header.Get("webhook-id"))
	}
	if att := s.waitAttempts(t, 2); att[0].Attempt != 2 || att[0].ResponseStatus == nil || *att[0].ResponseStatus != 204 {
		t.Errorf("attempts newest first: %+v", att)
	}
}

// More deliveries due than workers: each worker takes the next as it finishes, and every
// delivery is made once, by the workers of one process.
func TestBacklogLargerThanTheWorkers(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	const n = 40
	for i := range n {
		s.addTags(t, "backlog"+string(rune('a'+i%26))+string(rune('a'+i/26))+"@example.com", "t")
	}
	second := testkit.SecondDeliveryService(t, s.a, 3) // three workers for forty deliveries, polling hourly
	second.UsePolling(time.Hour)
	second.Start()
	testkit.StopAtEnd(t, second.Stop)
	seen := map[string]int{}
	for range n {
		seen[s.rc.Next(t).Header.Get("webhook-id")]++
	}
	s.a.DeliveriesSettled(t)
	s.rc.None(t)
	if len(seen) != n {
		t.Errorf("%d distinct events, want %d", len(seen), n)
	}
	if pending := s.a.Count(t, `SELECT count(*) FROM webhook_deliveries WHERE status <> 'Succeeded'`); pending != 0 {
		t.Errorf("%d deliveries not Succeeded", pending)
	}
}

// A worker's turn with a delivery ends with its record: a process with one worker sends a
// second delivery only once that worker has left the first, so the second request its
// receiver gets is the second delivery, never the first again.
func TestTheOnlyWorkerLeavesADeliveryOnceRecorded(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false, func(c *testkit.Config) { c.WebhookWorkers = 1 })
	s.a.StartWorkers()
	s.addTags(t, "first@example.com", "x")
	first := s.rc.Next(t).Header.Get("webhook-id")
	s.a.DeliveriesSettled(t)
	s.addTags(t, "second@example.com", "x")
	if second := s.rc.Next(t).Header.Get("webhook-id"); second == first {
		t.Fatalf("%s, recorded Succeeded, was sent again: the only worker did not leave it", first)
	}
	s.a.DeliveriesSettled(t)
	s.rc.None(t)
}
