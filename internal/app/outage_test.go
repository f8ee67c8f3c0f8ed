package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/testkit"
)

// When PostgreSQL goes away, requests fail fast with 503 and the documented body, /readyz
// says not ready, and service resumes by itself when PostgreSQL is back, webhook deliveries
// included. Not parallel: it stops the package's PostgreSQL, which parallel tests would also
// be using.
func TestDatabaseOutage(t *testing.T) {
	a := testkit.NewAPI(t, testkit.LocalDelivery)
	_, key := a.Account("acme")
	rc := testkit.NewReceiver(t)
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

	cluster := testkit.Cluster()
	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
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
		// how fast is the machine's business; that it answers at all (no wait on a database
		// that is not there) is the behaviour
		start := time.Now()
		r := a.Do(probe.method, probe.path, key, probe.body)
		if e := r.Error(t); r.Status != http.StatusServiceUnavailable || e.Code != api.ErrorCodeServiceUnavailable {
			t.Errorf("%s %s during the outage: %d %s", probe.method, probe.path, r.Status, r.Body)
		}
		t.Logf("%s %s failed in %v", probe.method, probe.path, time.Since(start).Round(time.Millisecond))
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
	if d := rc.Next(t); !strings.Contains(string(d.Body), "after@example.com") {
		t.Errorf("delivered after recovery: %s", d.Body)
	}
	if r := a.Do("GET", "/public/v1/contact?emailId=during%40example.com", key, nil); r.Status != 404 {
		t.Errorf("the create refused during the outage exists: %d", r.Status)
	}
}
