package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/auth"
	"github.com/contactd/contactd/internal/testkit"
)

// A key may not sign in from outside its networks: the console refuses the sign-in itself,
// as the API refuses the key, and starts no session; a key whose networks hold the client
// signs in.
func TestSignInKeepsTheKeysNetworks(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	account, _ := a.Account("acme")
	keyWith := func(network string) string {
		key, err := a.Svc.Auth.CreateKeyWith(context.Background(), account, auth.KeyOptions{Name: network,
			Networks: []netip.Prefix{netip.MustParsePrefix(network)}})
		if err != nil {
			t.Fatal(err)
		}
		return key
	}
	elsewhere, here := keyWith("10.0.0.0/8"), keyWith("127.0.0.0/8")
	b := &browser{t: t, base: a.URL}
	if p := b.do("POST", "/console/login", url.Values{"key": {elsewhere}}); p.status != http.StatusUnauthorized || b.cookie != nil {
		t.Errorf("signing in from outside the key's networks: %d, a session %v", p.status, b.cookie != nil)
	}
	b.signIn(here) // the same but for its networks
}

// A form the console's own page sent is taken whatever the browser says of its origin: an
// Origin of the console's host, or a Referer of it where the Origin is "null". Another
// host's is refused.
func TestFormsFromTheConsolesOwnPages(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	id := createContact(t, a, key, "mine@example.com")
	b := &browser{t: t, base: a.URL}
	b.signIn(key)
	token := b.csrf("/console/contacts/" + id)
	page := a.URL + "/console/contacts/" + id
	for i, headers := range [][]string{{"Origin", a.URL}, {"Origin", "null", "Referer", page}, {"Referer", page}} {
		form := url.Values{"tag": {fmt.Sprintf("own%d", i)}, "csrf": {token}}
		if p := b.do("POST", "/console/contacts/"+id+"/tags", form, headers...); p.status != http.StatusSeeOther {
			t.Errorf("a form with %v: %d %s", headers, p.status, p.body)
		}
	}
	if p := b.do("POST", "/console/contacts/"+id+"/tags", url.Values{"tag": {"x"}, "csrf": {token}}, "Referer", "https://evil.example/page"); p.status != http.StatusForbidden {
		t.Errorf("a form referred by another site: %d", p.status)
	}
	body := b.do("GET", "/console/contacts/"+id, nil).body
	for _, tag := range []string{"own0", "own1", "own2"} {
		if !strings.Contains(body, `<span class="tag">`+tag+`</span>`) {
			t.Errorf("tag %s, added by the console's own form, is not on the contact", tag)
		}
	}
	if strings.Contains(body, `<span class="tag">x</span>`) {
		t.Error("the refused form added its tag")
	}
}

// The contact list filters as its form says (email status, record status, lowest lead
// score) and pages 25 at a time, the next page keeping the filters; the contact page shows
// each event's own details.
func TestConsoleListFiltersAndPages(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	for i := range 30 {
		createContact(t, a, key, fmt.Sprintf("c%02d@example.com", i))
	}
	// c00: Valid, c01: NonMarketing, c02: four form submissions (a lead score of 54); the
	// rest as created
	for _, set := range []string{`email_status = 'Valid' WHERE email = 'c00@example.com'`,
		`record_status = 'NonMarketing' WHERE email = 'c01@example.com'`} {
		if _, err := a.Store.Pool.Exec(context.Background(), `UPDATE contacts SET `+set); err != nil {
			t.Fatal(err)
		}
	}
	var c02 string
	if err := a.Store.Pool.QueryRow(context.Background(), `SELECT contact_id::text FROM contacts WHERE email = 'c02@example.com'`).Scan(&c02); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if r := a.Do("POST", "/public/v1/contact/"+c02+"/activity", key, map[string]any{"type": "FormSubmission"}); r.Status != 200 {
			t.Fatalf("activity: %d %s", r.Status, r.Body)
		}
	}
	b := &browser{t: t, base: a.URL}
	b.signIn(key)
	listed := regexp.MustCompile(`c\d\d@example\.com`)
	for query, want := range map[string]string{"emailStatus=Valid": "c00", "recordStatus=NonMarketing": "c01", "minLeadScore=50": "c02"} {
		got := listed.FindAllString(b.do("GET", "/console/contacts?"+query, nil).body, -1)
		if len(got) != 1 || got[0] != want+"@example.com" {
			t.Errorf("listed with %s: %v, want %s only", query, got, want)
		}
	}
	first := b.do("GET", "/console/contacts?emailStatus=Pending", nil).body
	next := regexp.MustCompile(`href="(/console/contacts\?[^"]*cursor=[^"]+)"`).FindStringSubmatch(first)
	if next == nil {
		t.Fatalf("no link to the next page of 29 Pending contacts")
	}
	nextURL := strings.ReplaceAll(next[1], "&amp;", "&")
	if !strings.Contains(nextURL, "emailStatus=Pending") {
		t.Errorf("the next page's link %s drops the filter", nextURL)
	}
	seen := map[string]bool{}
	for _, e := range append(listed.FindAllString(first, -1), listed.FindAllString(b.do("GET", nextURL, nil).body, -1)...) {
		if seen[e] {
			t.Errorf("%s listed twice across the pages", e)
		}
		seen[e] = true
	}
	if len(seen) != 29 || seen["c00@example.com"] {
		t.Errorf("the two pages list %d contacts (c00 among them: %v), want the 29 Pending ones", len(seen), seen["c00@example.com"])
	}

	id := createContact(t, a, key, "tagged@example.com")
	a.Do("POST", "/public/v1/contact/"+id+"/tags", key, map[string]any{"tags": []string{"vip"}})
	if p := b.do("GET", "/console/contacts/"+id, nil); !strings.Contains(p.body, "tagsAddedInfo: {") || !strings.Contains(p.body, "&#34;vip&#34;") {
		t.Errorf("the TagsAdded event's details are not on the contact's page:\n%s", p.body)
	}
}

// Rotating a subscription's secret in the console shows the new secret once and signs with
// it from then on; pausing and resuming there does what PATCH paused does.
func TestConsoleRotatesAndPauses(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	var sub struct {
		SubscriptionId string `json:"subscriptionId"`
	}
	a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": "https://hooks.example.com/x", "eventType": "TagsAdded"}).JSON(t, &sub)
	sealed := func() string {
		var s string
		if err := a.Store.Pool.QueryRow(context.Background(), `SELECT secret_sealed FROM webhook_subscriptions WHERE subscription_id = $1`, sub.SubscriptionId).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := sealed()
	b := &browser{t: t, base: a.URL}
	b.signIn(key)
	path := "/console/webhooks/" + sub.SubscriptionId
	token := b.csrf(path)
	if p := b.do("POST", path+"/secret", url.Values{"csrf": {token}}); p.status != http.StatusOK || !regexp.MustCompile(`<code>whsec_[^<]{40,}</code>`).MatchString(p.body) {
		t.Errorf("rotate: %d, want the page with the new secret\n%s", p.status, p.body)
	}
	if sealed() == before {
		t.Error("the subscription's secret is the same after the rotation")
	}
	paused := func() bool {
		var p bool
		if err := a.Store.Pool.QueryRow(context.Background(), `SELECT paused_at IS NOT NULL FROM webhook_subscriptions WHERE subscription_id = $1`, sub.SubscriptionId).Scan(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, want := range []bool{true, false} {
		if p := b.do("POST", path+"/pause", url.Values{"paused": {fmt.Sprint(want)}, "csrf": {token}}); p.status != http.StatusSeeOther || paused() != want {
			t.Errorf("paused=%v in the console: %d, the subscription's paused %v", want, p.status, !want)
		}
	}
}

// A contact's page shows its custom fields, an archived one only where the contact has a
// value; a key with contacts:write changes one from the page's form, under the API's rules.
func TestConsoleEditsCustomFields(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	for _, f := range []map[string]any{
		{"key": "seats", "label": "Seats", "type": "number"},
		{"key": "tier", "label": "Tier", "type": "enum", "options": []map[string]any{{"value": "gold", "label": "Gold"}, {"value": "silver", "label": "Silver"}}},
		{"key": "old", "label": "Old", "type": "text"},
		{"key": "gone", "label": "Gone", "type": "text"},
	} {
		if r := a.Do("POST", "/public/v1/fields", key, f); r.Status != 200 {
			t.Fatalf("define: %d %s", r.Status, r.Body)
		}
	}
	r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "jane@example.com", "customFields": map[string]any{"seats": 3, "old": "kept"}})
	var created api.CreateContactResult
	r.JSON(t, &created)
	id := created.Contact.ContactId
	for _, k := range []string{"old", "gone"} {
		a.Do("POST", "/public/v1/fields/"+k+"/archive", key, nil)
	}
	b := &browser{t: t, base: a.URL}
	b.signIn(key)
	body := b.do("GET", "/console/contacts/"+id, nil).body
	for _, want := range []string{`data-key="seats">3</td>`, `data-key="tier"></td>`, `Old (archived)`, `data-key="old">kept</td>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the contact's page lacks %s", want)
		}
	}
	if strings.Contains(body, `data-key="gone"`) {
		t.Error("an archived field without a value is shown")
	}
	token := b.csrf("/console/contacts/" + id)
	for _, form := range []url.Values{{"key": {"seats"}, "value": {"12.5"}}, {"key": {"tier"}, "value": {"silver"}}} {
		form.Set("csrf", token)
		if p := b.do("POST", "/console/contacts/"+id+"/fields", form, "Origin", a.URL); p.status != http.StatusSeeOther {
			t.Errorf("save %v: %d %s", form, p.status, p.body)
		}
	}
	if p := b.do("POST", "/console/contacts/"+id+"/fields", url.Values{"key": {"seats"}, "value": {"many"}, "csrf": {token}}, "Origin", a.URL); p.status != http.StatusBadRequest ||
		!strings.Contains(p.body, "customFields.seats") {
		t.Errorf("a value the field refuses: %d %s", p.status, p.body)
	}
	var c api.Contact
	a.Do("GET", "/public/v1/contact?contactId="+id, key, nil).JSON(t, &c)
	if c.CustomFields == nil || !strings.Contains(string(*c.CustomFields), `"tier":"silver"`) || !strings.Contains(string(*c.CustomFields), `"seats":12.5`) {
		t.Errorf("after the console's saves: %s", *c.CustomFields)
	}
}
