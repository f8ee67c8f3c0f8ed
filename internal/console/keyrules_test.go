package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/contactd/contactd/internal/auth"
	"github.com/contactd/contactd/internal/testkit"
)

// A console session lasts no longer than its key's right to be used: the key's expiry ends
// it, and so does a client outside the key's networks.
func TestConsoleSessionFollowsItsKey(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	b := &browser{t: t, base: a.URL}
	b.signIn(key)
	if p := b.do("GET", "/console/contacts", nil); p.status != 200 {
		t.Fatalf("signed in: %d", p.status)
	}
	if err := a.Svc.Auth.ExpireKey(context.Background(), key[:11], time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if p := b.do("GET", "/console/contacts", nil); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/login" {
		t.Errorf("after the key expired: %d %v, want sent to sign in", p.status, p.header.Get("Location"))
	}

	_, key2 := a.Account("globex")
	b = &browser{t: t, base: a.URL}
	b.signIn(key2)
	if _, err := a.Store.Pool.Exec(context.Background(), `UPDATE api_keys SET allowed_networks = '{10.0.0.0/8}' WHERE prefix = $1`, key2[:11]); err != nil {
		t.Fatal(err)
	}
	if p := b.do("GET", "/console/contacts", nil); p.status != http.StatusForbidden || !strings.Contains(p.body, "may not be used from your network") {
		t.Errorf("from outside the key's networks: %d", p.status)
	}
	if p := b.do("POST", "/console/contacts/x/tags", url.Values{"tag": {"x"}}); p.status != http.StatusForbidden {
		t.Errorf("a form from outside the key's networks: %d", p.status)
	}
}

// consoleScopes is every console page and action on an account's data with the scope it needs:
// a reviewed table, as the API's is.
var consoleScopes = map[string]string{
	"GET /console/contacts":                                     "contacts:read",
	"GET /console/contacts/:id":                                 "contacts:read",
	"POST /console/contacts/:id/tags":                           "contacts:write",
	"POST /console/contacts/:id/tags/remove":                    "contacts:write",
	"POST /console/contacts/:id/fields":                         "contacts:write",
	"POST /console/contacts/:id/properties":                     "contacts:write",
	"POST /console/contacts/:id/properties/:property/archive":   "contacts:write",
	"GET /console/segments":                                     "contacts:read",
	"GET /console/segments/:id":                                 "contacts:read",
	"GET /console/webhooks":                                     "webhooks:read",
	"GET /console/webhooks/:id":                                 "webhooks:read",
	"GET /console/event-types":                                  "webhooks:read",
	"POST /console/webhooks/:id/deliveries/:delivery/redeliver": "webhooks:write",
	"POST /console/webhooks/:id/secret":                         "webhooks:write",
	"POST /console/webhooks/:id/delete":                         "webhooks:write",
	"POST /console/webhooks/:id/pause":                          "webhooks:write",
	"POST /console/webhooks/:id/test":                           "webhooks:write",
}

// Every console page and action is refused to a signed-in key that has every scope but the
// one it needs, and the refused action changes nothing.
func TestConsoleActionsNeedTheirScope(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	account, key := a.Account("acme")
	id := createContact(t, a, key, "mine@example.com")
	var withProperty struct {
		Properties []struct {
			PropertyId string `json:"propertyId"`
		} `json:"properties"`
	}
	a.Do("POST", "/public/v1/contact/"+id+"/property", key, map[string]any{"address": "1 Main St, Springfield, IL 62704"}).JSON(t, &withProperty)
	var sub struct {
		SubscriptionId string `json:"subscriptionId"`
	}
	a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": "https://hooks.example.com/x", "eventType": "TagsAdded"}).JSON(t, &sub)
	a.Do("POST", "/public/v1/contact/"+id+"/tags", key, map[string]any{"tags": []string{"t"}})
	delivery := ""
	if err := a.Store.Pool.QueryRow(context.Background(), "SELECT delivery_id::text FROM webhook_deliveries").Scan(&delivery); err != nil {
		t.Fatal(err)
	}
	fill := strings.NewReplacer(":id", id, ":property", withProperty.Properties[0].PropertyId, ":delivery", delivery)
	before := a.Count(t, `SELECT count(*) FROM webhook_subscriptions WHERE status = 'Active' AND paused_at IS NULL`)

	e := echo.New()
	a.Svc.Console.Register(e, passThrough, passThrough)
	all := []string{"contacts:read", "contacts:write", "events:read", "webhooks:read", "webhooks:write"}
	for _, r := range e.Routes() {
		if !strings.Contains(r.Path, "/contacts") && !strings.Contains(r.Path, "/webhooks") {
			continue
		}
		route := r.Method + " " + r.Path
		need, ok := consoleScopes[route]
		if !ok {
			t.Errorf("the console's %s is not in the reviewed scope table", route)
			continue
		}
		k, err := a.Svc.Auth.CreateKeyWith(context.Background(), account, auth.KeyOptions{Name: "without " + need,
			Scopes: slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == need })})
		if err != nil {
			t.Fatal(err)
		}
		b := &browser{t: t, base: a.URL}
		b.signIn(k)
		path := fill.Replace(r.Path)
		if strings.HasPrefix(r.Path, "/console/webhooks/:id") {
			path = strings.Replace(path, id, sub.SubscriptionId, 1)
		}
		var form url.Values
		if r.Method == http.MethodPost {
			form = url.Values{"tag": {"t"}, "address": {"2 Main St, Springfield, IL 62704"}, "csrf": {anyCSRF(b)}}
		}
		if p := b.do(r.Method, path, form); p.status != http.StatusForbidden || !strings.Contains(p.body, "lacks the scope "+need) {
			t.Errorf("%s by a key without %s: %d", route, need, p.status)
		}
	}
	if after := a.Count(t, `SELECT count(*) FROM webhook_subscriptions WHERE status = 'Active' AND paused_at IS NULL`); after != before {
		t.Errorf("refused actions changed the subscriptions: %d active before, %d after", before, after)
	}
	if r := a.Do("GET", "/public/v1/contact?contactId="+id, key, nil); !strings.Contains(string(r.Body), `"tags":["t"]`) {
		t.Errorf("refused actions changed the contact: %s", r.Body)
	}
}

// anyCSRF is the form token of the first console page the key may open.
func anyCSRF(b *browser) string {
	b.t.Helper()
	for _, path := range []string{"/console/contacts", "/console/webhooks"} {
		if m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(b.do("GET", path, nil).body); m != nil {
			return m[1]
		}
	}
	b.t.Fatal("no console page with a form token")
	return ""
}
