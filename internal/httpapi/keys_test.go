package httpapi_test

import (
	"context"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/auth"
	"github.com/contactd/contactd/internal/config"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/httpapi"
	"github.com/contactd/contactd/internal/testkit"
)

// Every operation, from the spec: a key with every scope but the one the operation names is
// refused with 403 naming it, and a key with only that scope is not.
// (An operation may name several scopes, all needed: each missing one is refused by name.)
func TestScopesFromTheSpec(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	account, _ := a.Account("acme")
	spec, err := api.GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	spec.Servers = nil
	router, err := gorillamux.NewRouter(spec)
	if err != nil {
		t.Fatal(err)
	}
	scopes, err := httpapi.Scopes()
	if err != nil || strings.Join(scopes, " ") != "contacts:erase contacts:read contacts:write events:read webhooks:read webhooks:write" {
		t.Fatalf("scopes %v %v", scopes, err)
	}
	keyWith := func(scopes ...string) string {
		k, err := a.Svc.Auth.CreateKeyWith(context.Background(), account, auth.KeyOptions{Name: strings.Join(scopes, "+"), Scopes: scopes})
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	allBut := map[string]string{}
	for _, s := range scopes {
		allBut[s] = keyWith(slices.DeleteFunc(slices.Clone(scopes), func(x string) bool { return x == s })...)
	}
	exactly := map[string]string{} // keys with exactly an operation's scopes
	for _, op := range operations {
		req, _ := http.NewRequest(op.method, a.URL+op.path, nil)
		route, _, err := router.FindRoute(req)
		if err != nil {
			t.Fatalf("%s %s: %v", op.method, op.path, err)
		}
		sec := *route.Operation.Security
		if len(sec) != 1 {
			t.Errorf("%s: security %v, want one requirement", route.Operation.OperationID, sec)
			continue
		}
		need := strings.Fields(op.scope)
		if got := sec[0]["ApiKeyAuth"]; !slices.Equal(got, need) {
			t.Errorf("%s: openapi.yaml asks for %v, the reviewed table for %v", route.Operation.OperationID, got, need)
		}
		for _, scope := range need {
			if r := a.Do(op.method, op.path, allBut[scope], op.body); r.Status != 403 || r.Error(t).Code != "Forbidden" ||
				!strings.Contains(r.Error(t).Message, scope) {
				t.Errorf("%s without %s: %d %s", route.Operation.OperationID, scope, r.Status, r.Body)
			}
		}
		if exactly[op.scope] == "" {
			exactly[op.scope] = keyWith(need...)
		}
		if r := a.Do(op.method, op.path, exactly[op.scope], op.body); r.Status == 403 {
			t.Errorf("%s with only %s: 403 %s", route.Operation.OperationID, op.scope, r.Body)
		}
	}
}

func TestKeyExpiryAndRotation(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	second := a.SecondProcess()
	testkit.Eventually(t, "both processes' key caches listening", func() bool { return a.Svc.Auth.Caching() && second.Svc.Auth.Caching() })
	account, old := a.Account("acme")
	ctx := context.Background()
	works := func(key string) map[string]int {
		return map[string]int{"first": a.Do("GET", "/public/v1/contacts", key, nil).Status,
			"second": second.Do("GET", "/public/v1/contacts", key, nil).Status}
	}
	if got := works(old); got["first"] != 200 || got["second"] != 200 {
		t.Fatalf("old key: %v", got)
	}
	// rotation: a new key, a grace period on the old one, then its revocation
	fresh, err := a.Svc.Auth.CreateKeyWith(ctx, account, auth.KeyOptions{Name: "new"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Svc.Auth.ExpireKey(ctx, old[:11], time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := works(old); got["first"] != 200 || got["second"] != 200 {
		t.Errorf("old key in its grace period: %v", got)
	}
	forgotten := []uint64{a.Svc.Auth.Invalidations(), second.Svc.Auth.Invalidations()}
	if err := a.Svc.Auth.ExpireKey(ctx, old[:11], time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	// both processes had the key cached: its expiry reaches them by notification, which the
	// caches' counts of what they forgot show (an entry's own expiry would leave them unchanged)
	testkit.Eventually(t, "the expired key refused by both processes", func() bool {
		r1 := a.Do("GET", "/public/v1/contacts", old, nil)
		r2 := second.Do("GET", "/public/v1/contacts", old, nil)
		if r1.Status == 401 && r2.Status == 401 {
			if msg := r2.Error(t).Message; !strings.Contains(msg, "expired at") {
				t.Errorf("expired key's message: %q", msg)
			}
			return true
		}
		return false
	})
	// a process whose entry was never stored (a lookup the grace period's own notification
	// overtook) refuses by its lookup, before the expiry's notification has arrived: wait
	// for it rather than read the counts once
	testkit.Eventually(t, "the expiry's notification heard by both processes", func() bool {
		return a.Svc.Auth.Invalidations() != forgotten[0] && second.Svc.Auth.Invalidations() != forgotten[1]
	})
	if got := works(fresh); got["first"] != 200 || got["second"] != 200 {
		t.Errorf("new key: %v", got)
	}
	if err := a.Svc.Auth.RevokeKey(ctx, old[:11]); err != nil {
		t.Fatal(err)
	}
}

func TestIPAllowList(t *testing.T) {
	t.Parallel()
	behind := testkit.NewAPI(t, func(c *config.Config) { c.TrustedProxiesRaw = "127.0.0.1/32" })
	direct := testkit.NewAPI(t)
	for name, a := range map[string]*testkit.API{"direct": direct, "behind a trusted proxy": behind} {
		account, _ := a.Account("acme")
		key := func(nets ...string) string {
			var ns []netip.Prefix
			for _, n := range nets {
				ns = append(ns, netip.MustParsePrefix(n))
			}
			k, err := a.Svc.Auth.CreateKeyWith(context.Background(), account, auth.KeyOptions{Name: "ip", Networks: ns})
			if err != nil {
				t.Fatal(err)
			}
			return k
		}
		office, loopback := key("10.0.0.0/8"), key("127.0.0.1/32", "::1/128")
		fromOffice := a.Do("GET", "/public/v1/contacts", office, nil, "X-Forwarded-For", "10.1.2.3")
		fromHere := a.Do("GET", "/public/v1/contacts", loopback, nil, "X-Forwarded-For", "10.1.2.3")
		if name == "direct" { // the header is not believed: the client is the TCP peer
			if fromOffice.Status != 403 || fromOffice.Error(t).Code != "Forbidden" || fromHere.Status != 200 {
				t.Errorf("%s: office key %d %s, loopback key %d", name, fromOffice.Status, fromOffice.Body, fromHere.Status)
			}
		} else { // the proxy says the client is 10.1.2.3
			if fromOffice.Status != 200 || fromHere.Status != 403 {
				t.Errorf("%s: office key %d, loopback key %d %s", name, fromOffice.Status, fromHere.Status, fromHere.Body)
			}
		}
	}
}

// A test key's contacts, subscriptions and events are its sandbox's: live keys never see
// them, and its deliveries say livemode false; sandbox reset empties it and keeps the key.
func TestSandbox(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, testkit.LocalDelivery)
	a.StartWorkers()
	ctx := context.Background()
	account, live := a.Account("acme")
	test, err := a.Svc.Auth.CreateKeyWith(ctx, account, auth.KeyOptions{Name: "sandbox", Test: true})
	if err != nil || !strings.HasPrefix(test, "ck_test_") {
		t.Fatal(test, err)
	}
	for _, k := range []struct{ key, email string }{{live, "live@example.com"}, {test, "test@example.com"}} {
		saveSegment(t, a, k.key, "tagged x", "dynamic", cond("tags", "contains", "x"))
		rc := testkit.NewReceiver(t)
		subscribe(t, a, k.key, rc.URL, "TagsAdded")
		createContact(t, a, k.key, map[string]any{"email": k.email, "tags": []string{"x"}})
		d := rc.Next(t)
		testkit.ValidatePayload(t, d.Body)
		wantLive := k.key == live
		if got := d.Header.Get("Contactd-Livemode"); got != map[bool]string{true: "true", false: "false"}[wantLive] ||
			!strings.Contains(string(d.Body), map[bool]string{true: `"livemode":true`, false: `"livemode":false`}[wantLive]) ||
			!strings.Contains(string(d.Body), k.email) {
			t.Errorf("delivery of %s: header %q body %s", k.email, got, d.Body)
		}
	}
	var list api.ContactList
	a.Do("GET", "/public/v1/contacts", live, nil).JSON(t, &list)
	if len(list.Contacts) != 1 || list.Contacts[0].Email != "live@example.com" {
		t.Errorf("live key lists %+v", list.Contacts)
	}
	a.Do("GET", "/public/v1/contacts", test, nil).JSON(t, &list)
	if len(list.Contacts) != 1 || list.Contacts[0].Email != "test@example.com" {
		t.Errorf("test key lists %+v", list.Contacts)
	}
	if r := a.Do("GET", "/public/v1/contact?emailId=test%40example.com", live, nil); r.Status != 404 {
		t.Errorf("live key reading the test contact: %d", r.Status)
	}

	sandbox, ok, err := a.Svc.Auth.Sandbox(ctx, account)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	sandboxRows := func() map[string]int {
		rows := map[string]int{}
		for _, table := range []string{"webhook_events", "webhook_deliveries", "webhook_attempts", "segment_members"} {
			rows[table] = a.Count(t, "SELECT count(*) FROM "+table+" WHERE account_id = $1", sandbox)
		}
		return rows
	}
	// the receiver has the sandbox's delivery; its attempt is recorded once the answer is read
	testkit.Eventually(t, "the sandbox's delivery and attempt recorded", func() bool {
		rows := sandboxRows()
		return rows["webhook_deliveries"] > 0 && rows["webhook_attempts"] > 0 && rows["segment_members"] > 0
	})
	if !a.Svc.Subscribers.MayHave(ctx, sandbox, event.TagsAdded) {
		t.Fatal("the sandbox's TagsAdded subscriber is not remembered before the reset")
	}
	forgotten := a.Svc.Subscribers.Invalidations() // expiry (SubscribersTTL) leaves it unchanged
	if err := a.Svc.Auth.ResetSandbox(ctx, sandbox); err != nil {
		t.Fatal(err)
	}
	// every process hears that the sandbox's subscriptions went, and stops planning deliveries
	testkit.Eventually(t, "the sandbox's subscribers forgotten", func() bool {
		return !a.Svc.Subscribers.MayHave(ctx, sandbox, event.TagsAdded)
	})
	if a.Svc.Subscribers.Invalidations() == forgotten {
		t.Error("the sandbox's subscribers were forgotten without a notification (the entry expired)")
	}
	if rows := sandboxRows(); rows["webhook_events"]+rows["webhook_deliveries"]+rows["webhook_attempts"]+rows["segment_members"] != 0 {
		t.Errorf("the sandbox keeps %v after its reset", rows)
	}
	if err := a.Svc.Auth.ResetSandbox(ctx, account); err == nil {
		t.Error("reset a live account")
	}
	a.Do("GET", "/public/v1/contacts", test, nil).JSON(t, &list)
	if r := a.Do("GET", "/public/v1/webhooks", test, nil); len(list.Contacts) != 0 || !strings.Contains(string(r.Body), `"webhooks":[]`) {
		t.Errorf("after reset: %d contacts, webhooks %s", len(list.Contacts), r.Body)
	}
	a.Do("GET", "/public/v1/contacts", live, nil).JSON(t, &list)
	if len(list.Contacts) != 1 {
		t.Errorf("reset touched live data: %d contacts", len(list.Contacts))
	}
}

// A sandbox reset while a change to one of its contacts is in flight (an enrichment recording
// its ContactEnriched event, held open here) waits for it, and leaves none of its events.
func TestSandboxResetWaitsForAChangeInFlight(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	ctx := context.Background()
	account, _ := a.Account("acme")
	test, err := a.Svc.Auth.CreateKeyWith(ctx, account, auth.KeyOptions{Name: "sandbox", Test: true})
	if err != nil {
		t.Fatal(err)
	}
	createContact(t, a, test, map[string]any{"email": "in-flight@example.com"})
	sandbox, _, err := a.Svc.Auth.Sandbox(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	// what an enrichment's transaction does: the contact locked, then its event written
	tx, err := a.Store.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	if _, err := tx.Exec(ctx, `SELECT 1 FROM contacts WHERE account_id = $1 FOR UPDATE`, sandbox); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO webhook_events (account_id, event_id, event_type, contact_id, payload, occurred_at)
		SELECT account_id, uuid_v7(now()), 'ContactEnriched', contact_id, '{}', now() FROM contacts WHERE account_id = $1`, sandbox); err != nil {
		t.Fatal(err)
	}
	reset := make(chan error, 1)
	go func() { reset <- a.Svc.Auth.ResetSandbox(ctx, sandbox) }()
	testkit.Eventually(t, "the reset waiting for the change's lock", func() bool {
		return a.Count(t, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`) > 0
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-reset; err != nil {
		t.Fatal(err)
	}
	if n := a.Count(t, `SELECT count(*) FROM webhook_events WHERE account_id = $1`, sandbox); n != 0 {
		t.Errorf("the sandbox keeps %d events after its reset", n)
	}
}
