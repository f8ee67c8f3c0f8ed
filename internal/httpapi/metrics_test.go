package httpapi_test

import (
	"strings"
	"testing"

	"github.com/contactd/contactd/internal/config"
	"github.com/contactd/contactd/internal/testkit"
)

func scrape(t *testing.T, a *testkit.API) string {
	t.Helper()
	r := a.Do("GET", "/metrics", "", nil)
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: %d %v", r.Status, r.Header)
	}
	return string(r.Body)
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, testkit.LocalDelivery)
	_, key := a.Account("acme")
	rc := listen(t, a, key, "TagsAdded")
	id := createContact(t, a, key, map[string]any{"email": "m@example.com", "tags": []string{"x"}}).Contact.ContactId
	a.Do("GET", "/public/v1/contact?contactId="+id, key, nil)
	a.Do("GET", "/public/v1/contact?contactId=01939d3c-0000-7000-8000-000000000000", key, nil)
	a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "nope"})
	a.Do("GET", "/healthz", "", nil)

	text := scrape(t, a)
	for _, want := range []string{
		`contactd_http_requests_total{operation="createContact",status="200"} 1`,
		`contactd_http_requests_total{operation="createContact",status="400"} 1`,
		`contactd_http_requests_total{operation="getContact",status="200"} 1`,
		`contactd_http_requests_total{operation="getContact",status="404"} 1`,
		`contactd_http_requests_total{operation="other",status="200"} 1`,
		`contactd_http_request_duration_seconds_bucket{operation="getContact",status="200",le="+Inf"} 1`,
		`contactd_db_pool_max_connections 16`,
		// the two reads were groups of one each (the create too, its delivery with it).
		`contactd_db_group_size_count{group="contact_get_by_id"} 2`,
		`contactd_db_group_size_bucket{group="contact_get_by_id",le="1"} 2`,
		`contactd_db_pool_connections{state="idle"}`,
		"contactd_db_groups_refused_total 0",
		// workers are not running yet: the delivery and the enrichment wait in their queues.
		`contactd_job_queue_depth{queue="webhooks",state="available"} 1`,
		`contactd_job_queue_depth{queue="enrichment",state="available"} 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s\n%s", want, grep(text, "contactd_http_requests"))
		}
	}
	a.StartWorkers()
	rc.Next(t)
	testkit.Eventually(t, "a successful attempt counted", func() bool {
		text = scrape(t, a)
		return strings.Contains(text, `contactd_webhook_attempts_total{outcome="success"} 1`)
	})
	if !strings.Contains(text, `contactd_webhook_attempt_duration_seconds_count 1`) {
		t.Errorf("attempt latency not observed:\n%s", grep(text, "contactd_webhook"))
	}
}

func grep(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// /metrics shows every tenant's traffic and queues: only the operator reads it. A client
// elsewhere (here, named by a trusted proxy) is refused without the token, and with the token
// configured only the token opens it. The TCP peer decides, never X-Forwarded-For.
func TestMetricsAreTheOperators(t *testing.T) {
	t.Parallel()
	behind := testkit.NewAPI(t, func(c *config.Config) { c.TrustedProxiesRaw = "127.0.0.1/32" })
	if r := behind.Do("GET", "/metrics", "", nil); r.Status != 200 {
		t.Errorf("from this machine: %d", r.Status)
	}
	if r := behind.Do("GET", "/metrics", "", nil, "X-Forwarded-For", "203.0.113.9"); r.Status != 403 || r.Error(t).Code != "Forbidden" ||
		strings.Contains(string(r.Body), "contactd_") {
		t.Errorf("from elsewhere, through the proxy: %d %s", r.Status, r.Body)
	}
	// what the proxy forwards is refused whatever client it names: a forwarded header can
	// refuse, never admit
	if r := behind.Do("GET", "/metrics", "", nil, "X-Forwarded-For", "127.0.0.1"); r.Status != 403 || strings.Contains(string(r.Body), "contactd_") {
		t.Errorf("through the proxy, claiming loopback: %d", r.Status)
	}
	direct := testkit.NewAPI(t)
	if r := direct.Do("GET", "/metrics", "", nil, "X-Forwarded-For", "203.0.113.9"); r.Status != 200 {
		t.Errorf("a loopback peer with no proxy configured, whatever its header: %d", r.Status)
	}
	withToken := testkit.NewAPI(t, func(c *config.Config) { c.MetricsToken = "s3cret-scrape" })
	for name, tc := range map[string]struct {
		auth string
		want int
	}{"no token": {"", 401}, "a wrong token": {"Bearer nope", 401}, "the token": {"Bearer s3cret-scrape", 200}} {
		if r := withToken.Do("GET", "/metrics", "", nil, "Authorization", tc.auth); r.Status != tc.want {
			t.Errorf("%s: %d, want %d", name, r.Status, tc.want)
		}
	}
}
