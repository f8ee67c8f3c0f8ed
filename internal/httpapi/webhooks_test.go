package httpapi_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/config"
	"github.com/contactd/contactd/internal/testkit"
)

func subscribe(t *testing.T, a *testkit.API, key, url, typ string) *testkit.Response {
	t.Helper()
	return a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": url, "eventType": typ})
}

func TestCreateAndListWebhooks(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	r := subscribe(t, a, key, "https://hooks.example.com/a", "TagsAdded")
	var first api.WebhookSubscription
	r.JSON(t, &first)
	if r.Status != 200 || first.Status != api.Active || first.EventType != api.EventTypeTagsAdded || first.Url != "https://hooks.example.com/a" {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	if first.Secret == nil || !regexp.MustCompile(`^whsec_[A-Za-z0-9+/]{43}=$`).MatchString(*first.Secret) {
		t.Errorf("secret = %v, want whsec_ + base64 of 32 bytes", first.Secret)
	}
	if first.CreatedAt != first.UpdatedAt || !timestampRe.MatchString(first.CreatedAt.String()) {
		t.Errorf("timestamps %s %s", first.CreatedAt, first.UpdatedAt)
	}
	second := subscribe(t, a, key, "https://hooks.example.com/b", "EmailClick")
	var list api.WebhookList
	r = a.Do("GET", "/public/v1/webhooks", key, nil)
	r.JSON(t, &list)
	if r.Status != 200 || len(list.Webhooks) != 2 || list.Webhooks[1].SubscriptionId != first.SubscriptionId ||
		list.Webhooks[0].Url != "https://hooks.example.com/b" || second.Status != 200 {
		t.Fatalf("list = %d %s, want newest first", r.Status, r.Body)
	}
	for _, w := range list.Webhooks {
		if w.Secret != nil {
			t.Errorf("list shows a secret")
		}
	}
	// stored sealed, never in clear (the delivery tests show it opens to the secret returned)
	var inClear *string
	var sealed string
	if err := a.Store.Pool.QueryRow(context.Background(), "SELECT secret, secret_sealed FROM webhook_subscriptions WHERE subscription_id = $1",
		first.SubscriptionId).Scan(&inClear, &sealed); err != nil {
		t.Fatal(err)
	}
	if inClear != nil || !strings.HasPrefix(sealed, "v1.") || strings.Contains(sealed, strings.TrimPrefix(*first.Secret, "whsec_")) {
		t.Errorf("stored secret: in clear %v, sealed %q", inClear, sealed)
	}
}

func TestWebhookURLRules(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	for _, tc := range []struct {
		url, field string
	}{
		{"http://hooks.example.com/x", "body.url"},
		{"ftp://hooks.example.com/x", "body.url"},
		{"/relative", "body.url"},
		{"https://", "body.url"},
		{"https://user:pw@hooks.example.com/", "body.url"},
		{"https://hooks.example.com/" + string(make([]byte, 240)), "body.url"},
		{"", "body.url"},
	} {
		r := subscribe(t, a, key, tc.url, "TagsAdded")
		if e := r.Error(t); r.Status != 400 || e.Code != api.ErrorCodeInvalidRequest || (*e.Data.Errors)[0].Field != tc.field {
			t.Errorf("url %q: %d %s", tc.url, r.Status, r.Body)
		}
	}
	for _, body := range []map[string]any{{"url": "https://h.example.com"}, {"eventType": "TagsAdded"}, {"url": "https://h.example.com", "eventType": "Nope"}} {
		if r := a.Do("POST", "/public/v1/webhooks", key, body); r.Status != 400 {
			t.Errorf("%v: %d %s", body, r.Status, r.Body)
		}
	}
	allowHTTP := testkit.NewAPI(t, func(c *config.Config) { c.WebhookAllowHTTP = true })
	_, key2 := allowHTTP.Account("dev")
	if r := subscribe(t, allowHTTP, key2, "http://127.0.0.1:9999/hook", "TagsAdded"); r.Status != 200 {
		t.Errorf("http with the operator switch: %d %s", r.Status, r.Body)
	}
}

func TestWebhookLimitPerEventType(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	for i := range 3 {
		if r := subscribe(t, a, key, "https://hooks.example.com/"+string(rune('a'+i)), "TagsAdded"); r.Status != 200 {
			t.Fatalf("subscription %d: %d %s", i, r.Status, r.Body)
		}
	}
	r := subscribe(t, a, key, "https://hooks.example.com/d", "TagsAdded")
	if e := r.Error(t); r.Status != 400 || e.Code != api.ErrorCodeInvalidRequest || (*e.Data.Errors)[0].Field != "body.eventType" {
		t.Errorf("4th: %d %s", r.Status, r.Body)
	}
	if r := subscribe(t, a, key, "https://hooks.example.com/d", "TagsRemoved"); r.Status != 200 {
		t.Errorf("another type: %d %s", r.Status, r.Body)
	}
	// Removed subscriptions do not count.
	if _, err := a.Store.Pool.Exec(context.Background(), "UPDATE webhook_subscriptions SET status = 'Removed' WHERE url = 'https://hooks.example.com/a'"); err != nil {
		t.Fatal(err)
	}
	if r := subscribe(t, a, key, "https://hooks.example.com/e", "TagsAdded"); r.Status != 200 {
		t.Errorf("after one was removed: %d %s", r.Status, r.Body)
	}
	// another account has its own limit.
	_, other := a.Account("other")
	if r := subscribe(t, a, other, "https://hooks.example.com/a", "TagsAdded"); r.Status != 200 {
		t.Errorf("other account: %d %s", r.Status, r.Body)
	}
}

// A "subscribe to everything" script of the original service subscribes to its ten event
// types, FelixAIHandoff included, and finds them all listed.
func TestSubscribeToEveryEventType(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	all := []string{"FormSubmission", "ContactEnriched", "DashboardClick", "EmailClick", "PostcardScan",
		"ContactUnsubscribed", "ContactDetailsUpdated", "TagsAdded", "TagsRemoved", "FelixAIHandoff"}
	for _, typ := range all {
		if r := subscribe(t, a, key, "https://hooks.example.com/all", typ); r.Status != 200 {
			t.Errorf("subscribe to %s: %d %s", typ, r.Status, r.Body)
		}
	}
	var list api.WebhookList
	a.Do("GET", "/public/v1/webhooks", key, nil).JSON(t, &list)
	listed := map[api.EventType]bool{}
	for _, w := range list.Webhooks {
		listed[w.EventType] = true
	}
	if len(listed) != len(all) {
		t.Errorf("listed event types %v, want the %d subscribed", listed, len(all))
	}
}
