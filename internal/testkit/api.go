package testkit

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/apicore"
	"github.com/contactd/contactd/internal/app"
	"github.com/contactd/contactd/internal/config"
	"github.com/contactd/contactd/internal/delivery"
	"github.com/contactd/contactd/internal/docs"
	"github.com/contactd/contactd/internal/enrich"
	"github.com/contactd/contactd/internal/platform/seal"
	"github.com/contactd/contactd/internal/platform/store"
)

// API is contactd's real HTTP stack on a loopback port over a fresh database.
type API struct {
	t   testing.TB
	URL string
	// DatabaseURL is the test's own database, for processes started by the test.
	DatabaseURL string
	Store       *store.Store
	Svc         *app.Services
	Cfg         config.Config
	// DNS is the enrichment's resolver: it knows no domain until told.
	DNS *enrich.FakeResolver
	// Logs is everything the API logged (JSON lines), for tests of what must never be logged.
	Logs *LogBuffer
	// Handler is the service's handler behind URL, for benchmarks that leave the network out.
	Handler http.Handler
	// RateClock is the clock of the request rate limits (without Redis): a test passes a
	// window by moving it on.
	RateClock *Clock

	seededMemberships string // SeededMemberships' reason
}

// Clock is the wall clock moved on by what Advance added.
type Clock struct{ ahead atomic.Int64 }

// Now is the wall clock's time plus what Advance added.
func (c *Clock) Now() time.Time { return time.Now().Add(time.Duration(c.ahead.Load())) }

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) { c.ahead.Add(int64(d)) }

// LogBuffer collects log lines; safe for concurrent use.
type LogBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	expect []string // substrings of the ERROR lines the test declared it causes
}

// ExpectErrors declares that the test makes the service log ERROR lines containing one of
// substrings (a fault it injects): any other ERROR fails the test.
func (a *API) ExpectErrors(substrings ...string) {
	a.Logs.mu.Lock()
	defer a.Logs.mu.Unlock()
	a.Logs.expect = append(a.Logs.expect, substrings...)
}

func (l *LogBuffer) expected(line string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.expect {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// Held is the memory the buffer holds: a test that measures the process's heap takes it out
// (the service's logs go to a file or a pipe, never to its heap).
func (l *LogBuffer) Held() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return uint64(l.b.Cap())
}

// String is what was logged so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// reportErrors logs the service's warnings and errors into a failed test's output: a 500 in a
// test is otherwise only its request id, and a flake's cause is gone with its run. An ERROR
// the test did not declare (API.ExpectErrors) fails it: a service that logs an error is broken
// somewhere, whether or not the test looked at the state the error left.
func (l *LogBuffer) reportErrors(t testing.TB) {
	if !t.Failed() {
		for line := range strings.Lines(l.String()) {
			if strings.Contains(line, `"level":"ERROR"`) && !l.expected(line) {
				t.Errorf("the service logged an ERROR the test did not expect (API.ExpectErrors): %s", strings.TrimSpace(line))
			}
		}
		if !t.Failed() {
			return
		}
	}
	for line := range strings.Lines(l.String()) {
		if strings.Contains(line, `"level":"ERROR"`) || strings.Contains(line, `"level":"WARN"`) {
			t.Log("service: " + strings.TrimSpace(line))
		}
	}
}

// Option adjusts the configuration of a test API.
type Option func(*config.Config)

// NewAPI starts the API for one test, on a fresh database of the test cluster.
func NewAPI(t testing.TB, opts ...Option) *API {
	t.Helper()
	url := NewDatabase(t)
	recordSubscriptionDefinitions(t, url)
	return NewAPIOn(t, url, opts...)
}

// NewAPIOn starts the API for one test on the migrated database at dbURL: one of another
// cluster than the test cluster (a restored one).
func NewAPIOn(t testing.TB, dbURL string, opts ...Option) *API {
	t.Helper()
	cfg := config.Default()
	cfg.Addr = "127.0.0.1:0"
	cfg.PublicURL = "http://contactd.test"
	// tests create faster than any client would; TestRateLimit turns the limits back on.
	cfg.RateReadsPer10s, cfg.RateWritesPer10s, cfg.RateAccountPerDay = 0, 0, 0
	cfg.SecretKey = seal.NewKey() // each test's database has its own sealing key
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	stOpts := app.StoreOptions(cfg)
	stOpts.MaxConns, stOpts.StatementTimeout, stOpts.ReplicaLookEvery = 16, 0, 20*time.Millisecond
	st, err := store.Open(context.Background(), dbURL, stOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	t.Cleanup(func() { CheckInvariants(t, st) })
	logs := &LogBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	t.Cleanup(func() { logs.reportErrors(t) })
	keys, err := SecretKeys(cfg)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := app.NewServices(cfg, st, keys, log)
	if err != nil {
		t.Fatal(err)
	}
	clock := &Clock{}
	svc.RateClock = clock.Now
	dns := enrich.NewFakeResolver()
	svc.Enrich.UseResolver(dns, 100*time.Millisecond)
	svc.Enrich.UsePolling(20 * time.Millisecond)
	h, err := app.Handler(cfg, st, svc, log)
	if err != nil {
		t.Fatal(err)
	}
	listening, stopListening := context.WithCancel(context.Background())
	go svc.Listen(listening, st, log)
	t.Cleanup(stopListening)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	a := &API{t: t, URL: srv.URL, DatabaseURL: dbURL, Store: st, Svc: svc, Cfg: cfg, DNS: dns, Logs: logs, Handler: h, RateClock: clock}
	t.Cleanup(func() { a.CheckSegmentMembership(t) })
	return a
}

// Account creates an account and a key for it, returning the account id and the key.
func (a *API) Account(name string) (uuid.UUID, string) {
	a.t.Helper()
	ctx := context.Background()
	id, err := a.Svc.Auth.CreateAccount(ctx, name)
	if err != nil {
		a.t.Fatal(err)
	}
	key, err := a.Svc.Auth.CreateKey(ctx, id, name+"-key")
	if err != nil {
		a.t.Fatal(err)
	}
	return id, key
}

// Response is a response whose body has been read and checked against the spec.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test when it does not decode.
func (r *Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Error decodes an error body.
func (r *Response) Error(t testing.TB) api.Error {
	t.Helper()
	var e api.Error
	r.JSON(t, &e)
	return e
}

// With is the same API reporting to t: for fuzz targets and subtests, whose failures belong
// to their own testing.T.
func (a *API) With(t testing.TB) *API {
	c := *a
	c.t = t
	return &c
}

// Do sends a request with key as x-api-key (none when empty) and body as JSON (a string or
// []byte is sent verbatim), and validates the response against openapi.yaml.
func (a *API) Do(method, path, key string, body any, headers ...string) *Response {
	a.t.Helper()
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			a.t.Fatal(err)
		}
	}
	req, err := http.NewRequest(method, a.URL+path, bytes.NewReader(raw))
	if err != nil {
		a.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	// a request that never gets its answer (a turn or a lock never given back) fails the test
	// by name, instead of hanging it until go test's timeout
	resp, err := (&http.Client{Transport: ValidatingTransport(a.t), Timeout: Patience}).Do(req)
	if err != nil {
		a.t.Fatalf("%s %s (waited at most %v): %v", method, path, Patience, err)
	}
	out, _ := io.ReadAll(resp.Body) // already read and validated by the transport
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: out}
}

var (
	specOnce   sync.Once
	spec       *openapi3.T
	specRouter routers.Router
)

func loadSpec(t testing.TB) {
	specOnce.Do(func() {
		s, err := api.GetSwagger()
		if err != nil {
			panic(err)
		}
		s.Servers = nil
		// the consent page is HTML: validated as a string, like text/plain.
		openapi3filter.RegisterBodyDecoder("text/html", func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
			b, err := io.ReadAll(body)
			return string(b), err
		})
		// the export: CSV as a string; NDJSON line by line, each line a Contact of the spec.
		openapi3filter.RegisterBodyDecoder("text/csv", func(body io.Reader, h http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
			b, err := readBody(body, h)
			return string(b), err
		})
		openapi3filter.RegisterBodyDecoder("application/x-ndjson", func(body io.Reader, h http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
			b, err := readBody(body, h)
			if err != nil {
				return nil, err
			}
			for i, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
				if len(line) == 0 && len(b) == 0 {
					break
				}
				var v any
				if err := json.Unmarshal(line, &v); err != nil {
					return nil, fmt.Errorf("line %d: %w", i+1, err)
				}
				if err := s.Components.Schemas["Contact"].Value.VisitJSON(v, apicore.FormatOptions()...); err != nil {
					return nil, fmt.Errorf("line %d is not a Contact: %w", i+1, err)
				}
			}
			return string(b), nil
		})
		r, err := gorillamux.NewRouter(s)
		if err != nil {
			panic(err)
		}
		spec, specRouter = s, r
	})
}

// readBody is a response body, gunzipped when it was sent compressed.
func readBody(body io.Reader, h http.Header) ([]byte, error) {
	if h.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			return nil, err
		}
		body = zr
	}
	return io.ReadAll(body)
}

// ValidateResponse fails the test when the response is not one the spec documents for the
// request: an undocumented status, a body off-schema, or a wrong content type. Responses to
// paths outside the spec must still be the documented Error body.
func ValidateResponse(t testing.TB, req *http.Request, r *Response) {
	t.Helper()
	loadSpec(t)
	if r.Header.Get("X-Request-Id") == "" {
		t.Errorf("%s %s: no X-Request-Id header", req.Method, req.URL.Path)
	}
	route, params, err := specRouter.FindRoute(req)
	if err != nil {
		isDescription := req.URL.Path == docs.SpecYAMLPath || req.URL.Path == docs.SpecJSONPath
		if strings.HasPrefix(req.URL.Path, "/public/") && !(isDescription && r.Status == http.StatusOK) {
			checkErrorBody(t, req, r)
		}
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
		Status: r.Status, Header: r.Header, Body: io.NopCloser(bytes.NewReader(r.Body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true,
			SchemaValidationOptions: apicore.FormatOptions()},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s -> %d does not match openapi.yaml: %v\nbody: %s", req.Method, req.URL.Path, r.Status, err, r.Body)
	}
}

// ValidatingTransport is an http.RoundTripper for clients under test (a generated client, say):
// every response it returns has been validated against openapi.yaml like Do's.
func ValidatingTransport(t testing.TB) http.RoundTripper {
	return ValidatingTransportOver(t, http.DefaultTransport)
}

// ValidatingTransportOver is ValidatingTransport sending through base: a test that needs its
// own connections (one kept alive, say) keeps its answers checked against openapi.yaml.
func ValidatingTransportOver(t testing.TB, base http.RoundTripper) http.RoundTripper {
	return validatingTransport{t: t, base: base}
}

type validatingTransport struct {
	t    testing.TB
	base http.RoundTripper
}

func (v validatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := v.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	ValidateResponse(v.t, req, &Response{Status: resp.StatusCode, Header: resp.Header, Body: body})
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

func checkErrorBody(t testing.TB, req *http.Request, r *Response) {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s %s -> %d: content type %q, want application/json", req.Method, req.URL.Path, r.Status, ct)
	}
	var v any
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Errorf("%s %s -> %d: body is not JSON: %s", req.Method, req.URL.Path, r.Status, r.Body)
		return
	}
	if err := spec.Components.Schemas["Error"].Value.VisitJSON(v); err != nil {
		t.Errorf("%s %s -> %d: body is not an Error: %v", req.Method, req.URL.Path, r.Status, err)
	}
}

// ValidatePayload fails the test when a webhook body does not match the spec's
// WebhookPayload schema, or an event in it its type's schema in the event catalog. It never
// stops the test, so a receiver's handler may call it.
func ValidatePayload(t testing.TB, body []byte) {
	t.Helper()
	loadSpec(t)
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Errorf("payload is not JSON: %s", body)
		return
	}
	if err := spec.Components.Schemas["WebhookPayload"].Value.VisitJSON(v, apicore.FormatOptions()...); err != nil {
		t.Errorf("payload does not match openapi.yaml WebhookPayload: %v\n%s", err, body)
		return
	}
	// and each event its own type's schema, from the event catalog: data has the type's member
	// and no other type's
	catalog, err := apicore.Catalog()
	if err != nil {
		t.Errorf("event catalog: %v", err)
		return
	}
	var payload struct{ Events []json.RawMessage }
	if err := json.Unmarshal(body, &payload); err != nil {
		t.Errorf("payload: %v", err)
	}
	for _, ev := range payload.Events {
		if err := catalog.Validate(ev); err != nil {
			t.Errorf("event does not match its type's schema in GET /public/v1/event-types: %v\n%s", err, ev)
		}
	}
}

// SecretKeys is the keyring of a test API's configuration.
func SecretKeys(cfg config.Config) (*seal.Keyring, error) {
	current, err := seal.ParseKey(cfg.SecretKey)
	if err != nil {
		return nil, err
	}
	older, err := seal.ParseKeys(cfg.OldSecretKeys())
	if err != nil {
		return nil, err
	}
	return seal.NewKeyring(current, older...)
}

// Config is the configuration type test options change.
type Config = config.Config

// SecondDeliveryService is another set of delivery workers on the API's database, as a
// second worker process would run.
func SecondDeliveryService(t testing.TB, a *API, workers int) *delivery.Service {
	t.Helper()
	return delivery.New(a.Store, delivery.Options{Timeout: a.Cfg.WebhookTimeout,
		AllowedNetworks: a.Cfg.WebhookAllowedNetworks, Workers: workers, RescueAfter: a.Cfg.WebhookRescueAfter,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Secrets: a.Svc.Secrets})
}

// SecondProcess is another API process on the same database: its own services, caches and
// handler, as a second `contactd serve` behind a balancer would have; opts adjust its
// configuration (the first process's, otherwise).
func (a *API) SecondProcess(opts ...Option) *API {
	a.t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := a.Cfg
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.Finish(); err != nil {
		a.t.Fatal(err)
	}
	keys, err := SecretKeys(cfg)
	if err != nil {
		a.t.Fatal(err)
	}
	svc, err := app.NewServices(cfg, a.Store, keys, log)
	if err != nil {
		a.t.Fatal(err)
	}
	svc.RateClock = a.RateClock.Now
	h, err := app.Handler(cfg, a.Store, svc, log)
	if err != nil {
		a.t.Fatal(err)
	}
	listening, stopListening := context.WithCancel(context.Background())
	go svc.Listen(listening, a.Store, log)
	a.t.Cleanup(stopListening)
	srv := httptest.NewServer(h)
	a.t.Cleanup(srv.Close)
	second := *a
	second.URL, second.Svc, second.Cfg = srv.URL, svc, cfg
	return &second
}
