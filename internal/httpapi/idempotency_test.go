package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/internal/testkit"
)

func countRows(t *testing.T, a *testkit.API, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := testkit.Pool(a.Store).QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestIdempotencyReplaysTheFirstResponse(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	body := map[string]any{"email": "once@example.com", "tags": []string{"lead"}}
	first := a.Do("POST", "/public/v1/contact", key, body, "Idempotency-Key", "k-1")
	if first.Status != 200 || first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %v %s", first.Status, first.Header, first.Body)
	}
	// another process, later: the same answer, not a DuplicateContact, and nothing written twice
	second := a.SecondProcess().Do("POST", "/public/v1/contact", key, body, "Idempotency-Key", "k-1")
	if second.Status != 200 || !bytes.Equal(second.Body, first.Body) || second.Header.Get("Idempotent-Replayed") != "true" ||
		second.Header.Get("Content-Type") != first.Header.Get("Content-Type") || second.Header.Get("X-Request-Id") == first.Header.Get("X-Request-Id") {
		t.Errorf("retry: %d %v\n%s\nfirst: %s", second.Status, second.Header, second.Body, first.Body)
	}
	if n := countRows(t, a, "SELECT count(*) FROM contacts"); n != 1 {
		t.Errorf("%d contacts", n)
	}
	if n := countRows(t, a, "SELECT count(*) FROM webhook_events"); n != 1 {
		t.Errorf("%d events, want the one TagsAdded", n)
	}

	// the key names that request only
	for name, r := range map[string]*testkit.Response{
		"another body":   a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "twice@example.com"}, "Idempotency-Key", "k-1"),
		"another path":   a.Do("POST", "/public/v1/contacts/batch", key, map[string]any{"contacts": []any{body}}, "Idempotency-Key", "k-1"),
		"another method": a.Do("PATCH", "/public/v1/contact/01939d3c-0000-7000-8000-000000000000", key, map[string]any{"name": "x"}, "Idempotency-Key", "k-1"),
	} {
		if r.Status != 422 || r.Error(t).Code != "IdempotencyKeyReused" {
			t.Errorf("%s under the same key: %d %s", name, r.Status, r.Body)
		}
	}
	// keys are per account
	_, other := a.Account("globex")
	if r := a.Do("POST", "/public/v1/contact", other, body, "Idempotency-Key", "k-1"); r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("another account's k-1: %d %v", r.Status, r.Header)
	}

	// a refusal that ran (a duplicate) is kept; a request refused before it ran is not
	dup := a.Do("POST", "/public/v1/contact", key, body, "Idempotency-Key", "k-2")
	again := a.Do("POST", "/public/v1/contact", key, body, "Idempotency-Key", "k-2")
	if dup.Status != 400 || dup.Error(t).Code != "DuplicateContact" || again.Status != 400 ||
		!bytes.Equal(again.Body, dup.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("a duplicate under k-2: %d %s, then %d %v", dup.Status, dup.Body, again.Status, again.Header)
	}
	if r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "nope"}, "Idempotency-Key", "k-3"); r.Status != 400 {
		t.Fatalf("invalid: %d", r.Status)
	}
	if r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "fixed@example.com"}, "Idempotency-Key", "k-3"); r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("k-3 after an invalid request: %d %v %s", r.Status, r.Header, r.Body)
	}
	for _, bad := range []string{"has space", strings.Repeat("k", 256)} {
		if r := a.Do("POST", "/public/v1/contact", key, body, "Idempotency-Key", bad); r.Status != 400 {
			t.Errorf("key %q: %d %s", bad, r.Status, r.Body)
		}
	}
	// a read ignores the header
	if r := a.Do("GET", "/public/v1/contacts", key, nil, "Idempotency-Key", "k-1"); r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("GET with a key: %d %v", r.Status, r.Header)
	}
}

// Duplicates racing with one Idempotency-Key: one runs, and every other that comes while it
// runs is 409 IdempotencyKeyInProgress; the key's answer is then replayed. The race is
// proven: the test's open transaction holds the contact's email, so the request that runs
// waits for it, and it lets go only once every other request has been answered.
func TestIdempotencyRacingDuplicates(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	ctx := context.Background()
	account, key := a.Account("acme")
	body := map[string]any{"email": "race@example.com", "tags": []string{"a"}}
	hold := holdEmails(t, a, account, "race@example.com")
	const n = 20
	var wg sync.WaitGroup
	var answered atomic.Int32
	responses := make([]*testkit.Response, n)
	for i := range n {
		wg.Go(func() {
			responses[i] = a.With(t).Do("POST", "/public/v1/contact", key, body, "Idempotency-Key", "race")
			answered.Add(1)
		})
	}
	testkit.Eventually(t, "the running request waiting for the held email, every other answered", func() bool {
		return answered.Load() == n-1 && a.LockWaiters(t) == 1
	})
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	var ran *testkit.Response
	for _, r := range responses {
		switch {
		case r.Status == 200 && ran == nil:
			ran = r
		case r.Status == 409 && r.Error(t).Code == "IdempotencyKeyInProgress":
		default:
			t.Errorf("%d %s", r.Status, r.Body)
		}
	}
	if ran == nil {
		t.Fatal("no request ran")
	}
	again := a.Do("POST", "/public/v1/contact", key, body, "Idempotency-Key", "race")
	if again.Status != 200 || again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.Body, ran.Body) {
		t.Errorf("the key afterwards: %d %v %s, want the answer replayed", again.Status, again.Header, again.Body)
	}
	if c, e := countRows(t, a, "SELECT count(*) FROM contacts"), countRows(t, a, "SELECT count(*) FROM webhook_events"); c != 1 || e != 1 {
		t.Errorf("contacts %d, events %d, want one create", c, e)
	}
}

// send posts body with an Idempotency-Key and reports whether an answer arrived.
func send(t *testing.T, a *testkit.API, key, idemKey, path string, body any) (int, []byte, http.Header, error) {
	raw, _ := json.Marshal(body)
	// a body without GetBody: Go's transport would otherwise resend a request with an
	// Idempotency-Key by itself when its connection drops, hiding the crash from the test
	req, _ := http.NewRequest("POST", a.URL+path, io.NopCloser(bytes.NewReader(raw)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", key)
	req.Header.Set("Idempotency-Key", idemKey)
	resp, err := (&http.Client{Transport: testkit.ValidatingTransport(t)}).Do(req) // answers checked against openapi.yaml
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.Bytes(), resp.Header, err
}

// A process that dies just after its commit (the client gets no answer) and one that dies
// just before it: the retry gets the stored answer in the first case and runs afresh in the
// second, and either way the change is made once.
func TestIdempotencyAcrossACrash(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	var crash sync.Once
	die := func() { crash.Do(func() { panic(http.ErrAbortHandler) }) }

	a.Svc.Idempotency.CrashHooks(nil, die)
	body := map[string]any{"contacts": []any{map[string]any{"email": "after@example.com"}, map[string]any{"email": "x"}}}
	if _, _, _, err := send(t, a, key, "after-commit", "/public/v1/contacts/batch", body); err == nil {
		t.Fatal("the dying request answered")
	}
	status, got, h, err := send(t, a, key, "after-commit", "/public/v1/contacts/batch", body)
	if err != nil || status != 200 || h.Get("Idempotent-Replayed") != "true" || !bytes.Contains(got, []byte(`"status":"created"`)) {
		t.Errorf("retry after a crash past the commit: %d %v %s %v", status, h, got, err)
	}
	if n := countRows(t, a, "SELECT count(*) FROM contacts WHERE email = 'after@example.com'"); n != 1 {
		t.Errorf("%d contacts", n)
	}

	crash = sync.Once{}
	a.Svc.Idempotency.CrashHooks(die, nil)
	body = map[string]any{"email": "before@example.com"}
	if _, _, _, err := send(t, a, key, "before-commit", "/public/v1/contact", body); err == nil {
		t.Fatal("the dying request answered")
	}
	if n := countRows(t, a, "SELECT count(*) FROM contacts WHERE email = 'before@example.com'"); n != 0 {
		t.Errorf("a request that died before its commit left %d contacts", n)
	}
	status, _, h, err = send(t, a, key, "before-commit", "/public/v1/contact", body)
	if err != nil || status != 200 || h.Get("Idempotent-Replayed") != "" {
		t.Errorf("retry after a crash before the commit: %d %v %v", status, h, err)
	}
	if n := countRows(t, a, "SELECT count(*) FROM contacts WHERE email = 'before@example.com'"); n != 1 {
		t.Errorf("%d contacts", n)
	}
}

func TestIdempotencyInProgressAndExpiry(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	a.Svc.Idempotency.CrashHooks(func() { once.Do(func() { close(entered); <-release }) }, nil)
	body := map[string]any{"email": "slow@example.com"}
	done := make(chan int)
	go func() {
		status, _, _, _ := send(t, a, key, "slow", "/public/v1/contact", body)
		done <- status
	}()
	<-entered
	if r := a.Do("POST", "/public/v1/contact", key, body, "Idempotency-Key", "slow"); r.Status != 409 || r.Error(t).Code != "IdempotencyKeyInProgress" {
		t.Errorf("while the first runs: %d %s", r.Status, r.Body)
	}
	close(release)
	if status := <-done; status != 200 {
		t.Errorf("first: %d", status)
	}
	if r := a.Do("POST", "/public/v1/contact", key, body, "Idempotency-Key", "slow"); r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("after it: %d %v", r.Status, r.Header)
	}

	// 24 hours on, the key is free again and pruned
	if _, err := testkit.Pool(a.Store).Exec(context.Background(), "UPDATE idempotency_keys SET expires_at = now() - interval '1 second'"); err != nil {
		t.Fatal(err)
	}
	if r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "new@example.com"}, "Idempotency-Key", "slow"); r.Status != 200 || r.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("an expired key: %d %v %s", r.Status, r.Header, r.Body)
	}
	if _, err := testkit.Pool(a.Store).Exec(context.Background(), "UPDATE idempotency_keys SET expires_at = now() - interval '1 second'"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.Svc.Idempotency.PruneTask().Run(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, a, "SELECT count(*) FROM idempotency_keys"); n != 0 {
		t.Errorf("%d keys after pruning", n)
	}
}

// One run of the hourly prune deletes every expired key, batch after batch (5,000 a
// statement), and says how many; a key still live stays.
func TestIdempotencyPruneTakesEveryBatch(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	account, _ := a.Account("acme")
	if _, err := testkit.Pool(a.Store).Exec(context.Background(), `INSERT INTO idempotency_keys
		(account_id, key, fingerprint, method, path, status, headers, body, created_at, expires_at)
		SELECT $1, 'k' || n, '\x00', 'POST', '/public/v1/contact', 200, '{}', '\x00', now() - interval '2 days',
			now() - CASE WHEN n = 0 THEN interval '-1 hour' ELSE interval '1 second' END
		FROM generate_series(0, 12001) n`, account); err != nil {
		t.Fatal(err)
	}
	if err := a.Svc.Idempotency.PruneTask().Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var left []string
	rows, err := testkit.Pool(a.Store).Query(context.Background(), "SELECT key FROM idempotency_keys")
	if err == nil {
		left, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil || len(left) != 1 || left[0] != "k0" {
		t.Errorf("after one prune: %d keys left (%v), want the live one, k0", len(left), err)
	}
	if !strings.Contains(a.Logs.String(), `"msg":"idempotency keys pruned","keys":12001`) {
		t.Errorf("the prune's log line does not say 12,001 keys:\n%s", a.Logs.String())
	}
}

// A 5xx is never kept as a key's answer: the retry with the same key runs the request again
// and gets the answer the request deserves. (The table the write needs is renamed away behind
// contactd's back for the first attempt: an unexpected database error, a 500.)
func TestIdempotencyNeverKeepsA5xx(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	exec := func(sql string) {
		t.Helper()
		if _, err := testkit.Pool(a.Store).Exec(context.Background(), sql); err != nil {
			t.Fatal(err)
		}
	}
	body := map[string]any{"url": "https://hooks.example.com/once", "eventType": "TagsAdded"}
	a.ExpectErrors(`relation \"webhook_subscriptions\" does not exist`) // the fault made here
	exec(`ALTER TABLE webhook_subscriptions RENAME TO webhook_subscriptions_away`)
	r := a.Do("POST", "/public/v1/webhooks", key, body, "Idempotency-Key", "retry-after-500")
	if r.Status != http.StatusInternalServerError || r.Error(t).Code != "InternalError" {
		t.Fatalf("with the table away: %d %s, want 500 InternalError", r.Status, r.Body)
	}
	if n := countRows(t, a, `SELECT count(*) FROM idempotency_keys`); n != 0 {
		t.Errorf("%d idempotency records kept after a 500", n)
	}
	exec(`ALTER TABLE webhook_subscriptions_away RENAME TO webhook_subscriptions`)
	r = a.Do("POST", "/public/v1/webhooks", key, body, "Idempotency-Key", "retry-after-500")
	if r.Status != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the retry: %d (replayed %q) %s, want the request run again", r.Status, r.Header.Get("Idempotent-Replayed"), r.Body)
	}
	r = a.Do("POST", "/public/v1/webhooks", key, body, "Idempotency-Key", "retry-after-500")
	if r.Status != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the third try: %d (replayed %q), want the 200 replayed", r.Status, r.Header.Get("Idempotent-Replayed"))
	}
	if n := countRows(t, a, `SELECT count(*) FROM webhook_subscriptions`); n != 1 {
		t.Errorf("%d subscriptions, want 1", n)
	}
}

// A stored response is sealed at rest: a subscription's signing secret (shown once, in the
// create response) and a contact's email never sit in clear in idempotency_keys, and the
// retry still gets them back.
func TestIdempotentResponsesAreSealedAtRest(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	first := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": "https://hooks.example.com/s", "eventType": "TagsAdded"},
		"Idempotency-Key", "sealed-webhook")
	a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "private.person@example.com"}, "Idempotency-Key", "sealed-contact")
	var created struct {
		Secret string `json:"secret"`
	}
	first.JSON(t, &created)
	if first.Status != 200 || !strings.HasPrefix(created.Secret, "whsec_") {
		t.Fatalf("create: %d %s", first.Status, first.Body)
	}
	if n := countRows(t, a, `SELECT count(*) FROM idempotency_keys`); n != 2 {
		t.Fatalf("%d stored responses, want 2", n)
	}
	for _, clear := range []string{created.Secret, strings.TrimPrefix(created.Secret, "whsec_"), "private.person@example.com"} {
		if n := countRows(t, a, `SELECT count(*) FROM idempotency_keys WHERE position($1::bytea in body) > 0`, []byte(clear)); n != 0 {
			t.Errorf("%q is stored in clear", clear)
		}
	}
	again := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": "https://hooks.example.com/s", "eventType": "TagsAdded"},
		"Idempotency-Key", "sealed-webhook")
	if again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.Body, first.Body) {
		t.Errorf("replay: %v %s, want the first answer, secret included", again.Header, again.Body)
	}
}
