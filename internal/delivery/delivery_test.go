package delivery_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

type setup struct {
	a        *testkit.API
	key      string
	rc       *testkit.Receiver
	sub      api.WebhookSubscription
	contact  string
	received time.Time
}

// newSetup subscribes a loopback receiver to TagsAdded.
func newSetup(t *testing.T, workers bool, opts ...testkit.Option) *setup {
	t.Helper()
	s := &setup{a: testkit.NewAPI(t, append([]testkit.Option{testkit.LocalDelivery}, opts...)...), rc: testkit.NewReceiver(t)}
	_, s.key = s.a.Account("acme")
	r := s.a.Do("POST", "/public/v1/webhooks", s.key, map[string]any{"url": s.rc.URL, "eventType": "TagsAdded"})
	if r.Status != 200 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &s.sub)
	if workers {
		s.a.StartWorkers()
	}
	return s
}

// addTags creates a contact with tags and returns when the API answered.
func (s *setup) addTags(t *testing.T, email string, tags ...string) time.Time {
	t.Helper()
	r := s.a.Do("POST", "/public/v1/contact", s.key, map[string]any{"email": email, "tags": tags})
	if r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var c api.CreateContactResult
	r.JSON(t, &c)
	s.contact = c.Contact.ContactId
	return time.Now()
}

func (s *setup) attempts(t *testing.T) []api.DeliveryAttempt {
	t.Helper()
	r := s.a.Do("GET", "/public/v1/webhooks/"+s.sub.SubscriptionId+"/deliveries", s.key, nil)
	var out api.DeliveryAttemptList
	r.JSON(t, &out)
	return out.Attempts
}

func (s *setup) waitAttempts(t *testing.T, n int) []api.DeliveryAttempt {
	t.Helper()
	var got []api.DeliveryAttempt
	testkit.Eventually(t, fmt.Sprintf("%d attempts recorded", n), func() bool {
		got = s.attempts(t)
		return len(got) >= n
	})
	return got
}

func (s *setup) subscriptionStatus(t *testing.T) api.SubscriptionStatus {
	var list api.WebhookList
	s.a.Do("GET", "/public/v1/webhooks", s.key, nil).JSON(t, &list)
	for _, w := range list.Webhooks {
		if w.SubscriptionId == s.sub.SubscriptionId {
			return w.Status
		}
	}
	t.Fatal("subscription not listed")
	return ""
}

// How soon a delivery follows its commit is TestCommitWakesTheWorkers' proof and make bench's
// figure; this is what arrives.
func TestSignedDelivery(t *testing.T) {
	t.Parallel()
	s := newSetup(t, true)
	s.addTags(t, "jane@example.com", "lead", "vip")
	d := s.rc.Next(t)
	wh, err := standardwebhooks.NewWebhook(*s.sub.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(d.Body, d.Header); err != nil {
		t.Errorf("signature does not verify with the Standard Webhooks library: %v", err)
	}
	testkit.ValidatePayload(t, d.Body)
	var p api.WebhookPayload
	if err := json.Unmarshal(d.Body, &p); err != nil || len(p.Events) != 1 {
		t.Fatalf("payload %s", d.Body)
	}
	ev := p.Events[0]
	if ev.EventType != api.EventTypeTagsAdded || ev.EventId != d.Header.Get("webhook-id") ||
		ev.Data.ContactInfo.ContactId != s.contact || ev.Data.ContactInfo.EmailId != "jane@example.com" ||
		ev.Data.TagsAddedInfo == nil || strings.Join(ev.Data.TagsAddedInfo.TagsAdded, ",") != "lead,vip" {
		t.Errorf("event %+v", ev)
	}
	if ct := d.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("content type %q", ct)
	}
	att := s.waitAttempts(t, 1)
	if att[0].Attempt != 1 || att[0].ResponseStatus == nil || *att[0].ResponseStatus != 204 || att[0].Error != nil ||
		att[0].EventId != ev.EventId || att[0].NextAttemptAt != nil {
		t.Errorf("attempt %+v", att[0])
	}
	s.a.DeliveriesSettled(t)
	s.rc.None(t)
}

func TestRetryAfterFailureKeepsTheID(t *testing.T) {
	t.Parallel()
	s := newSetup(t, true)
	s.rc.Respond = func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}
	s.addTags(t, "retry@example.com", "x")
	first := s.rc.Next(t)
	second := s.rc.Next(t)
	// the retry is due 5 s (±20 %) after the failure was recorded: never sooner, and how late
	// it came depends on the machine, so the schedule is read from the recorded attempt
	if gap := second.At.Sub(first.At); gap < 4*time.Second-time.Millisecond { // times kept to the millisecond
		t.Errorf("retry came %v after the failure, want at least 4s", gap)
	}
	if first.Header.Get("webhook-id") != second.Header.Get("webhook-id") || string(first.Body) != string(second.Body) {
		t.Errorf("retry differs: %s vs %s", first.Header.Get("webhook-id"), second.Header.Get("webhook-id"))
	}
	att := s.waitAttempts(t, 2)
	if att[0].Attempt != 2 || *att[0].ResponseStatus != 200 || att[1].Attempt != 1 || *att[1].ResponseStatus != 503 ||
		att[1].NextAttemptAt == nil || att[1].Error == nil {
		t.Fatalf("attempts newest first: %+v", att)
	}
	// timestamps are kept to the microsecond and shown to the millisecond
	if delay := att[1].NextAttemptAt.Sub(att[1].AttemptedAt.Time); delay < 4*time.Second-time.Millisecond || delay > 6*time.Second+time.Millisecond {
		t.Errorf("retry scheduled %v after the failed attempt, want 5s ±20%%", delay)
	}
}

func TestGoneRemovesSubscription(t *testing.T) {
	t.Parallel()
	s := newSetup(t, true)
	s.rc.Respond = func(int, http.ResponseWriter, *http.Request) {}
	s.rc.Respond = func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGone) }
	s.addTags(t, "gone@example.com", "x")
	s.rc.Next(t)
	s.waitAttempts(t, 1)
	if st := s.subscriptionStatus(t); st != api.Removed {
		t.Errorf("status %s, want Removed", st)
	}
	if att := s.attempts(t); att[0].NextAttemptAt != nil {
		t.Errorf("a 410 was scheduled for retry: %+v", att[0])
	}
	s.addTags(t, "gone2@example.com", "y")
	s.a.DeliveriesSettled(t)
	s.rc.None(t)
}

func TestRedirectIsAFailure(t *testing.T) {
	t.Parallel()
	s := newSetup(t, true)
	s.rc.Respond = func(_ int, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}
	s.addTags(t, "redirect@example.com", "x")
	s.rc.Next(t)
	att := s.waitAttempts(t, 1)
	if *att[0].ResponseStatus != 302 || att[0].NextAttemptAt == nil {
		t.Errorf("attempt %+v, want a failed 302 with a retry scheduled", att[0])
	}
	s.a.DeliveriesSettled(t) // the attempt ended, its retry is 5 s away
	s.rc.None(t)             // the redirect was not followed
}

func TestHangingReceiverTimesOutAndIsRetried(t *testing.T) {
	t.Parallel()
	s := newSetup(t, true)
	s.rc.Respond = func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	}
	s.addTags(t, "hang@example.com", "x")
	s.rc.Next(t)
	att := s.waitAttempts(t, 1)
	if att[0].ResponseStatus != nil || att[0].Error == nil || !strings.Contains(*att[0].Error, "timed out") || att[0].LatencyMs < 900 {
		t.Errorf("attempt %+v, want a timeout after ~1s", att[0])
	}
	s.rc.Next(t)
	if att := s.waitAttempts(t, 2); *att[0].ResponseStatus != 200 {
		t.Errorf("retry %+v", att[0])
	}
}

func TestLoopbackRefusedWithoutAllowance(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, func(c *testkit.Config) { c.WebhookAllowHTTP = true })
	rc := testkit.NewReceiver(t)
	_, key := a.Account("acme")
	var sub api.WebhookSubscription
	a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": rc.URL, "eventType": "TagsAdded"}).JSON(t, &sub)
	a.StartWorkers()
	s := &setup{a: a, key: key, rc: rc, sub: sub}
	s.addTags(t, "ssrf@example.com", "x")
	att := s.waitAttempts(t, 1)
	if att[0].ResponseStatus != nil || att[0].Error == nil || !strings.Contains(*att[0].Error, "refused") {
		t.Errorf("attempt %+v, want refused", att[0])
	}
	a.DeliveriesSettled(t)
	rc.None(t)
}

// A change committed while no worker runs is delivered once one starts.
func TestCommittedBeforeWorkersStartIsDelivered(t *testing.T) {
	t.Parallel()
	s := newSetup(t, false)
	s.addTags(t, "early@example.com", "x")
	if n := s.a.Count(t, `SELECT count(*) FROM webhook_deliveries WHERE status = 'Pending' AND attempts = 0`); n != 1 {
		t.Fatalf("%d deliveries waiting, want 1", n)
	}
	s.a.StartWorkers()
	d := s.rc.Next(t)
	testkit.ValidatePayload(t, d.Body)
}

// Two worker processes on one database never deliver the same attempt twice.
func TestTwoWorkerPoolsDeliverEachEventOnce(t *testing.T) {
	t.Parallel()
	s := newSetup(t, true)
	second := testkit.SecondDeliveryService(t, s.a, 8)
	second.Start()
	testkit.StopAtEnd(t, second.Stop)
	const n = 60
	for i := range n {
		s.addTags(t, "many"+string(rune('a'+i%26))+string(rune('a'+i/26))+"@example.com", "t")
	}
	seen := map[string]int{}
	for range n {
		d := s.rc.Next(t)
		seen[d.Header.Get("webhook-id")]++
	}
	s.a.DeliveriesSettled(t)
	s.rc.None(t)
	for id, c := range seen {
		if c != 1 {
			t.Errorf("%s delivered %d times", id, c)
		}
	}
	if len(seen) != n {
		t.Errorf("%d distinct events, want %d", len(seen), n)
	}
}
