package app_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/testkit"
)

// When PostgreSQL goes away, requests fail fast with 503 and the documented body, /readyz
// says not ready, and service resumes by itself when PostgreSQL is back, webhook deliveries
// included. A delivery in flight when it went (its receiver answering while the database is
// away, so its success cannot be recorded) is made again once its lease ends. Not parallel: it stops the package's PostgreSQL, which parallel tests would also
// be using.
func TestDatabaseOutage(t *testing.T) {
	a := testkit.NewAPI(t, testkit.LocalDelivery)
	_, key := a.Account("acme")
	rc := testkit.NewReceiver(t)
	release := make(chan struct{})
	rc.Respond = func(_ int, w http.ResponseWriter, r *http.Request) {
		if body, _ := io.ReadAll(r.Body); strings.Contains(string(body), "inflight@example.com") {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}
	if r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": rc.URL, "eventType": "TagsAdded"}); r.Status != 200 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	a.StartWorkers()
	r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "before@example.com"})
	if r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var created api.CreateContactResult
	r.JSON(t, &created)
	ready := func() int {
		resp, err := http.Get(a.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := ready(); s != 200 {
		t.Fatalf("/readyz before the outage: %d", s)
	}

	if r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "inflight@example.com", "tags": []string{"held"}}); r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	inflight := rc.Next(t) // held by the receiver until the database is gone

	cluster := testkit.Cluster()
	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	close(release)
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = cluster.Start(context.Background())
		}
	})
	for _, probe := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/public/v1/contact?contactId=" + created.Contact.ContactId, nil},
		{"POST", "/public/v1/contact", map[string]any{"email": "during@example.com"}},
		{"POST", "/public/v1/contact/" + created.Contact.ContactId + "/tags", map[string]any{"tags": []string{"x"}}},
	} {
		// an outage is answered at once (no wait on a database that is not there): the bound is
		// the promise, generous (a millisecond here), not a timing of the machine
		start := time.Now()
		r := a.Do(probe.method, probe.path, key, probe.body)
		if e := r.Error(t); r.Status != http.StatusServiceUnavailable || e.Code != api.ErrorCodeServiceUnavailable {
			t.Errorf("%s %s during the outage: %d %s", probe.method, probe.path, r.Status, r.Body)
		}
		if took := time.Since(start); took >= 2*time.Second {
			t.Errorf("%s %s answered the outage in %v, want under 2 s", probe.method, probe.path, took.Round(time.Millisecond))
		}
	}
	// a readiness answer serves the probes of the next half second: the outage shows after it
	testkit.Eventually(t, "/readyz saying not ready during the outage", func() bool { return ready() == http.StatusServiceUnavailable })

	if err := cluster.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	restarted = true
	testkit.Eventually(t, "ready after PostgreSQL came back", func() bool { return ready() == 200 })
	if r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "after@example.com", "tags": []string{"back"}}); r.Status != 200 {
		t.Errorf("create after recovery: %d %s", r.Status, r.Body)
	}
	var again, after bool
	for range 2 {
		switch d := rc.Next(t); {
		case strings.Contains(string(d.Body), "after@example.com"):
			after = true
		case d.Header.Get("webhook-id") == inflight.Header.Get("webhook-id"):
			again = true
		default:
			t.Errorf("delivered after recovery: %s", d.Body)
		}
	}
	if !after || !again {
		t.Errorf("after recovery: the new create delivered %t, the one in flight made again %t", after, again)
	}
	testkit.Eventually(t, "both deliveries recorded", func() bool {
		return a.Count(t, `SELECT count(*) FROM webhook_deliveries WHERE status = 'Succeeded'`) == 2
	})
	if n := a.Count(t, `SELECT count(*) FROM webhook_attempts`); n != 2 {
		t.Errorf("%d attempts recorded for two deliveries that each succeeded once recorded", n)
	}
	if r := a.Do("GET", "/public/v1/contact?emailId=during%40example.com", key, nil); r.Status != 404 {
		t.Errorf("the create refused during the outage exists: %d", r.Status)
	}
}
