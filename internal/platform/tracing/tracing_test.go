package tracing_test

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/contactd/contactd/internal/config"
	"github.com/contactd/contactd/internal/platform/tracing"
	"github.com/contactd/contactd/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// collector is an OTLP/HTTP trace receiver: what contactd's exporter sends, decoded.
type collector struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	resource []*commonpb.KeyValue
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rs := range req.ResourceSpans {
		c.resource = append(c.resource, rs.GetResource().GetAttributes()...)
		for _, ss := range rs.ScopeSpans {
			c.spans = append(c.spans, ss.Spans...)
		}
	}
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write([]byte{})
}

// One trace follows a create from a trusted proxy's traceparent: the request's span, the group
// commit it waited for, its event's span, and the delivery attempt made by a worker (a child of
// the event's span with a link to it), whose traceparent the receiver gets. No attribute
// anywhere carries the contact's email, name or phone, even from a lookup by email.
func TestOneTraceFromRequestToAttempt(t *testing.T) {
	col := &collector{}
	srv := httptest.NewServer(col)
	t.Cleanup(srv.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	shutdown, err := tracing.Setup(context.Background(), "contactd-test", "test")
	if err != nil {
		t.Fatal(err)
	}
	flushed := false
	t.Cleanup(func() {
		if !flushed {
			_ = shutdown(context.Background())
		}
	})

	a := testkit.NewAPI(t, testkit.LocalDelivery, behindProxy)
	_, key := a.Account("acme")
	rc := testkit.NewReceiver(t)
	if r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": rc.URL, "eventType": "TagsAdded"}); r.Status != 200 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	a.StartWorkers()
	const clientTrace, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	const email, name, phone = "priya.piiperson@example.com", "Priya Piiperson", "+15555550123"
	r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": email, "name": name, "phone": phone, "tags": []string{"vip"}},
		"traceparent", "00-"+clientTrace+"-"+clientSpan+"-01")
	if r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	if r := a.Do("GET", "/public/v1/contact?emailId="+email, key, nil); r.Status != 200 {
		t.Fatalf("lookup: %d %s", r.Status, r.Body)
	}
	got := rc.Next(t)
	a.DeliveriesSettled(t)
	if err := shutdown(context.Background()); err != nil { // flushes every ended span
		t.Fatal(err)
	}
	flushed = true

	col.mu.Lock()
	defer col.mu.Unlock()
	byName := map[string]*tracepb.Span{}
	for _, s := range col.spans {
		if hex.EncodeToString(s.TraceId) == clientTrace {
			byName[s.Name] = s
		}
	}
	request, group, event, attempt := byName["createContact"], byName["db.group contact_create"], byName["event TagsAdded"], byName["webhook attempt TagsAdded"]
	if request == nil || group == nil || event == nil || attempt == nil {
		names := []string{}
		for _, s := range col.spans {
			names = append(names, s.Name+"/"+hex.EncodeToString(s.TraceId))
		}
		t.Fatalf("the client's trace lacks a span: request %v, group %v, event %v, attempt %v; spans: %v",
			request != nil, group != nil, event != nil, attempt != nil, names)
	}
	parent := func(child, of *tracepb.Span) bool {
		return hex.EncodeToString(child.ParentSpanId) == hex.EncodeToString(of.SpanId)
	}
	if hex.EncodeToString(request.ParentSpanId) != clientSpan || request.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("the request's span is not the client's child: parent %x, kind %v", request.ParentSpanId, request.Kind)
	}
	if !parent(group, request) || !parent(event, request) || event.Kind != tracepb.Span_SPAN_KIND_PRODUCER {
		t.Errorf("the group commit and the event are not the request's children")
	}
	if !parent(attempt, event) || attempt.Kind != tracepb.Span_SPAN_KIND_CLIENT || len(attempt.Links) != 1 ||
		hex.EncodeToString(attempt.Links[0].SpanId) != hex.EncodeToString(event.SpanId) {
		t.Errorf("the attempt is not the event's child with a link to it: parent %x, links %v", attempt.ParentSpanId, attempt.Links)
	}
	if want := "00-" + clientTrace + "-" + hex.EncodeToString(attempt.SpanId) + "-01"; got.Header.Get("traceparent") != want {
		t.Errorf("the receiver got traceparent %q, want the attempt's %q", got.Header.Get("traceparent"), want)
	}
	if attr(attempt, "http.response.status_code") != "204" || attr(attempt, "contactd.event_type") != "TagsAdded" ||
		attr(request, "http.route") != "/public/v1/contact" || attr(request, "http.response.status_code") != "200" {
		t.Errorf("attributes: attempt %v, request %v", attempt.Attributes, request.Attributes)
	}

	// nothing of the person, anywhere: span attributes, events, links, the resource
	var all []string
	for _, s := range col.spans {
		all = append(all, s.Name, s.String())
	}
	for _, kv := range col.resource {
		all = append(all, kv.String())
	}
	text := strings.Join(all, "\n")
	for _, secret := range []string{"piiperson", "Piiperson", "5555550123", "priya", "Priya", key} {
		if strings.Contains(text, secret) {
			t.Errorf("a span carries %q", secret)
		}
	}
	if len(col.spans) < 6 {
		t.Errorf("only %d spans exported", len(col.spans))
	}
}

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			v := kv.Value
			switch {
			case v.GetStringValue() != "":
				return v.GetStringValue()
			default:
				return strings.TrimPrefix(strings.TrimSpace(v.String()), "int_value:")
			}
		}
	}
	return ""
}

// behindProxy makes the test's client (on loopback) the operator's trusted proxy.
func behindProxy(c *config.Config) { c.TrustedProxiesRaw = "127.0.0.1/32" }

// startTracing sets tracing up to a collector of its own with the given sampler, and returns
// the collector and the function that flushes every ended span into it.
func startTracing(t *testing.T, sampler string) (*collector, func()) {
	t.Helper()
	col := &collector{}
	srv := httptest.NewServer(col)
	t.Cleanup(srv.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_TRACES_SAMPLER", sampler)
	shutdown, err := tracing.Setup(context.Background(), "contactd-test", "test")
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	flush := func() {
		once.Do(func() {
			if err := shutdown(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(flush)
	return col, flush
}

// A client that is not the operator's proxy does not decide its traces: its traceparent is a
// link on a new root span (it neither joins the operator's trace nor names it), and the
// operator's sampler decides: with parent-based sampling off at the root, its sampled flag
// samples nothing, while the same header from a trusted proxy is honoured.
func TestUntrustedClientsDoNotDecideTheirTraces(t *testing.T) {
	const clientTrace, clientSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	header := []string{"traceparent", "00-" + clientTrace + "-" + clientSpan + "-01"}
	t.Run("a new root with a link", func(t *testing.T) {
		col, flush := startTracing(t, "parentbased_always_on")
		a := testkit.NewAPI(t)
		_, key := a.Account("acme")
		if r := a.Do("GET", "/public/v1/webhooks", key, nil, header...); r.Status != 200 {
			t.Fatal(r.Status)
		}
		flush()
		col.mu.Lock()
		defer col.mu.Unlock()
		var request *tracepb.Span
		for _, s := range col.spans {
			if s.Name == "listWebhooks" {
				request = s
			}
		}
		if request == nil || hex.EncodeToString(request.TraceId) == clientTrace || len(request.ParentSpanId) != 0 ||
			len(request.Links) != 1 || hex.EncodeToString(request.Links[0].TraceId) != clientTrace ||
			hex.EncodeToString(request.Links[0].SpanId) != clientSpan {
			t.Errorf("the request's span: %v", request)
		}
	})
	t.Run("the operator's sampler decides", func(t *testing.T) {
		col, flush := startTracing(t, "parentbased_always_off")
		untrusted, trusted := testkit.NewAPI(t), testkit.NewAPI(t, behindProxy)
		_, key := untrusted.Account("acme")
		_, key2 := trusted.Account("acme")
		if r := untrusted.Do("GET", "/public/v1/webhooks", key, nil, header...); r.Status != 200 {
			t.Fatal(r.Status)
		}
		if r := trusted.Do("GET", "/public/v1/event-types", key2, nil, header...); r.Status != 200 {
			t.Fatal(r.Status)
		}
		flush()
		col.mu.Lock()
		defer col.mu.Unlock()
		var names []string
		for _, s := range col.spans {
			names = append(names, s.Name)
			if hex.EncodeToString(s.TraceId) != clientTrace {
				t.Errorf("a span outside the proxy's trace: %s", s.Name)
			}
		}
		if !slices.Contains(names, "listEventTypes") || slices.Contains(names, "listWebhooks") {
			t.Errorf("spans %v: want the trusted proxy's request sampled by its parent, the client's not", names)
		}
	})
}
