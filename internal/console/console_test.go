package console_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/contactd/contactd/internal/auth"
	"github.com/contactd/contactd/internal/config"
	"github.com/contactd/contactd/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// browser is a cookie-keeping client that does not follow redirects.
type browser struct {
	t      *testing.T
	base   string
	cookie *http.Cookie
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(method, path string, form url.Values, headers ...string) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, b.base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if b.cookie != nil {
		req.AddCookie(b.cookie)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	for _, c := range resp.Cookies() {
		if c.Name == "contactd_console" || c.Name == "__Host-contactd_console" {
			if c.MaxAge < 0 {
				b.cookie = nil
			} else {
				b.cookie = c
			}
		}
	}
	return page{resp.StatusCode, resp.Header, string(raw)}
}

func (b *browser) signIn(key string) page {
	b.t.Helper()
	p := b.do("POST", "/console/login", url.Values{"key": {key}})
	if p.status != http.StatusSeeOther || b.cookie == nil {
		b.t.Fatalf("sign in: %d %s", p.status, p.body)
	}
	return p
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *browser) csrf(path string) string {
	b.t.Helper()
	m := csrfField.FindStringSubmatch(b.do("GET", path, nil).body)
	if m == nil {
		b.t.Fatalf("no form token on %s", path)
	}
	return m[1]
}

func TestSignInAndSessions(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	b := &browser{t: t, base: a.URL}

	if p := b.do("GET", "/console/contacts", nil); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/login" {
		t.Errorf("without a session: %d %v", p.status, p.header)
	}
	if p := b.do("POST", "/console/contacts/x/tags", url.Values{"tag": {"x"}}); p.status != http.StatusForbidden {
		t.Errorf("a form without a session: %d", p.status)
	}
	login := b.do("GET", "/console/login", nil)
	if login.status != 200 || !strings.Contains(login.body, `<label for="key">API key</label>`) {
		t.Fatalf("login page: %d %s", login.status, login.body)
	}
	for name, want := range map[string]string{
		"Content-Security-Policy": "default-src 'none'; script-src 'self'", "X-Frame-Options": "DENY", "Cache-Control": "no-store",
	} {
		if !strings.Contains(login.header.Get(name), want) {
			t.Errorf("%s: %q", name, login.header.Get(name))
		}
	}
	if p := b.do("POST", "/console/login", url.Values{"key": {"ck_nope"}}); p.status != http.StatusUnauthorized || b.cookie != nil ||
		strings.Contains(p.body, "ck_nope") {
		t.Errorf("a wrong key: %d, cookie %v", p.status, b.cookie)
	}
	b.signIn(key)
	if c := b.cookie; !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/console" || c.Secure {
		t.Errorf("cookie %+v", c)
	}
	var stored int
	if err := testkit.Pool(a.Store).QueryRow(context.Background(), "SELECT count(*) FROM console_sessions WHERE session_hash = $1",
		sha(b.cookie.Value)).Scan(&stored); err != nil || stored != 1 {
		t.Errorf("the session is stored by its hash: %d %v", stored, err)
	}
	p := b.do("GET", "/console/contacts", nil)
	if p.status != 200 || strings.Contains(p.body, key) || !strings.Contains(p.body, "acme-key") {
		t.Errorf("contacts page: %d (the key must never be rendered)", p.status)
	}
	// a session ends after its time
	if _, err := testkit.Pool(a.Store).Exec(context.Background(), "UPDATE console_sessions SET expires_at = now() - interval '1 second'"); err != nil {
		t.Fatal(err)
	}
	if p := b.do("GET", "/console/contacts", nil); p.status != http.StatusSeeOther {
		t.Errorf("an expired session: %d", p.status)
	}
	b.signIn(key)
	// revoking the key ends its sessions
	if err := a.Svc.Auth.RevokeKey(context.Background(), key[:11]); err != nil {
		t.Fatal(err)
	}
	if p := b.do("GET", "/console/contacts", nil); p.status != http.StatusSeeOther {
		t.Errorf("after the key's revocation: %d", p.status)
	}

	if logs := a.Logs.String(); !strings.Contains(logs, "/console/login") || strings.Contains(logs, key) ||
		strings.Contains(logs, b.cookie.Value) {
		t.Errorf("the logs show the key or the session token (or nothing was logged):\n%s", logs)
	}

	// sign out ends the session for good, even for a copy of the cookie
	_, key2 := a.Account("globex")
	b.signIn(key2)
	copied := *b.cookie
	token := b.csrf("/console/contacts")
	if p := b.do("POST", "/console/logout", url.Values{"csrf": {token}}); p.status != http.StatusSeeOther || b.cookie != nil {
		t.Errorf("sign out: %d %v", p.status, b.cookie)
	}
	b.cookie = &copied
	if p := b.do("GET", "/console/contacts", nil); p.status != http.StatusSeeOther {
		t.Errorf("an old cookie after sign-out: %d", p.status)
	}
}

// The console is the API's client in all but name: its pages count against the key's rate
// limit (429 with Retry-After), and its forms have the API's body limit.
func TestConsoleHasTheAPIsLimits(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, func(c *config.Config) { c.RateReadsPer10s, c.RateWritesPer10s, c.MaxBodyBytes = 3, 3, 1024 })
	_, key := a.Account("acme")
	b := &browser{t: t, base: a.URL}
	b.signIn(key)
	for i := range 3 {
		if p := b.do("GET", "/console/contacts", nil); p.status != http.StatusOK {
			t.Fatalf("page %d: %d", i+1, p.status)
		}
	}
	p := b.do("GET", "/console/contacts", nil)
	if retry, err := strconv.Atoi(p.header.Get("Retry-After")); p.status != http.StatusTooManyRequests || err != nil || retry < 1 {
		t.Errorf("a 4th page in the window: %d, Retry-After %q", p.status, p.header.Get("Retry-After"))
	}
	// the same key's API reads share the window
	if r := a.Do("GET", "/public/v1/contacts", key, nil); r.Status != http.StatusTooManyRequests {
		t.Errorf("the API after the console spent the key's reads: %d", r.Status)
	}
	big := url.Values{"tag": {strings.Repeat("x", 2048)}, "csrf": {"whatever"}}
	if p := b.do("POST", "/console/contacts/01939d3c-0000-7000-8000-000000000000/tags", big); p.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a form over the body limit: %d", p.status)
	}
	if p := b.do("POST", "/console/login", big); p.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a sign-in form over the body limit: %d", p.status)
	}
}

func TestSecureCookieOverHTTPS(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, func(c *config.Config) { c.PublicURL = "https://contacts.example.com" })
	_, key := a.Account("acme")
	b := &browser{t: t, base: a.URL}
	b.signIn(key)
	if c := b.cookie; c.Name != "__Host-contactd_console" || !c.Secure || c.Path != "/" || c.Domain != "" || !c.HttpOnly ||
		c.SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie over https is not a Secure __Host- cookie for / on this host alone: %+v", c)
	}
	if p := b.do("GET", "/console/contacts", nil); p.status != http.StatusOK {
		t.Errorf("the session with its __Host- cookie: %d", p.status)
	}
	// the unprefixed name, as a plain-http page or a sibling host could plant it, is no session
	planted := *b.cookie
	planted.Name = "contactd_console"
	b.cookie = &planted
	if p := b.do("GET", "/console/contacts", nil); p.status != http.StatusSeeOther {
		t.Errorf("an unprefixed cookie over https: %d", p.status)
	}
}

func TestFormsNeedTheirToken(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	id := createContact(t, a, key, "mine@example.com")
	b := &browser{t: t, base: a.URL}
	b.signIn(key)
	token := b.csrf("/console/contacts/" + id)
	other := &browser{t: t, base: a.URL}
	_, key2 := a.Account("globex")
	other.signIn(key2)
	foreign := other.csrf("/console/contacts")
	for name, form := range map[string]url.Values{
		"no token":              {"tag": {"x"}},
		"another session's one": {"tag": {"x"}, "csrf": {foreign}},
	} {
		if p := b.do("POST", "/console/contacts/"+id+"/tags", form); p.status != http.StatusForbidden {
			t.Errorf("%s: %d", name, p.status)
		}
	}
	if p := b.do("POST", "/console/contacts/"+id+"/tags", url.Values{"tag": {"x"}, "csrf": {token}}, "Origin", "https://evil.example"); p.status != http.StatusForbidden {
		t.Errorf("from another site: %d", p.status)
	}
	if r := a.Do("GET", "/public/v1/contact?contactId="+id, key, nil); strings.Contains(string(r.Body), `"x"`) {
		t.Errorf("a refused form changed the tags: %s", r.Body)
	}
	if p := b.do("POST", "/console/contacts/"+id+"/tags", url.Values{"tag": {"vip"}, "csrf": {token}}); p.status != http.StatusSeeOther {
		t.Errorf("with its token: %d %s", p.status, p.body)
	}
	if p := b.do("GET", "/console/contacts/"+id, nil); !strings.Contains(p.body, `<span class="tag">vip</span>`) || !strings.Contains(p.body, "TagsAdded") {
		t.Errorf("the tag and its event on the contact's page:\n%s", p.body)
	}
	// properties: add one, refuse a bad one with the API's words, archive it
	if p := b.do("POST", "/console/contacts/"+id+"/properties", url.Values{"address": {"500 E Capitol Ave, Springfield, IL 62701"}, "csrf": {token}}); p.status != http.StatusSeeOther {
		t.Errorf("add an address: %d %s", p.status, p.body)
	}
	if p := b.do("POST", "/console/contacts/"+id+"/properties", url.Values{"address": {"nowhere"}, "csrf": {token}}); p.status != http.StatusBadRequest ||
		!strings.Contains(p.body, "could not be parsed") {
		t.Errorf("a bad address: %d %s", p.status, p.body)
	}
	m := regexp.MustCompile(`/properties/([0-9a-f-]{36})/archive`).FindStringSubmatch(b.do("GET", "/console/contacts/"+id, nil).body)
	if m == nil {
		t.Fatal("no archive button")
	}
	if p := b.do("POST", "/console/contacts/"+id+"/properties/"+m[1]+"/archive", url.Values{"csrf": {token}}); p.status != http.StatusSeeOther ||
		strings.Contains(b.do("GET", "/console/contacts/"+id, nil).body, "500 E Capitol Ave") {
		t.Errorf("archive: %d", p.status)
	}
}

// The tenant matrix of the console: another account's session sees none of A's pages or
// actions; a read-only key sees but does not change.
func TestConsoleTenantsAndScopes(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, testkit.LocalDelivery)
	accountA, keyA := a.Account("a")
	id := createContact(t, a, keyA, "mine@example.com")
	rc := testkit.NewReceiver(t)
	var sub struct {
		SubscriptionId string `json:"subscriptionId"`
	}
	a.Do("POST", "/public/v1/webhooks", keyA, map[string]any{"url": rc.URL, "eventType": "TagsAdded"}).JSON(t, &sub)
	a.Do("POST", "/public/v1/contact/"+id+"/tags", keyA, map[string]any{"tags": []string{"t"}})
	var delivery string
	if err := testkit.Pool(a.Store).QueryRow(context.Background(), "SELECT delivery_id::text FROM webhook_deliveries").Scan(&delivery); err != nil {
		t.Fatal(err)
	}
	var withProperty struct {
		Properties []struct {
			PropertyId string `json:"propertyId"`
		} `json:"properties"`
	}
	a.Do("POST", "/public/v1/contact/"+id+"/property", keyA, map[string]any{"address": "1 Main St, Springfield, IL 62704"}).JSON(t, &withProperty)
	property := withProperty.Properties[0].PropertyId
	var mine struct {
		SegmentID string `json:"segmentId"`
	}
	a.Do("POST", "/public/v1/segments", keyA, map[string]any{"name": "Mine only", "filter": map[string]any{"groups": []any{
		map[string]any{"conditions": []any{map[string]any{"attribute": "tags", "operator": "contains", "value": "t"}}}}}}).JSON(t, &mine)
	_, keyB := a.Account("b")
	for _, k := range []string{keyA, keyB} { // B has the field too: its post fails on A's contact, not on the key
		a.Do("POST", "/public/v1/fields", k, map[string]any{"key": "seats", "label": "Seats", "type": "number"})
	}
	b := &browser{t: t, base: a.URL}
	b.signIn(keyB)
	token := b.csrf("/console/contacts")
	gets := []string{"/console/contacts/" + id, "/console/webhooks/" + sub.SubscriptionId, "/console/segments/" + mine.SegmentID}
	for _, path := range gets {
		if p := b.do("GET", path, nil); p.status != http.StatusNotFound || strings.Contains(p.body, "mine@example.com") {
			t.Errorf("B reading %s: %d", path, p.status)
		}
	}
	if p := b.do("GET", "/console/contacts", nil); strings.Contains(p.body, "mine@example.com") {
		t.Error("B's contact list shows A's contact")
	}
	if p := b.do("GET", "/console/segments", nil); p.status != http.StatusOK || strings.Contains(p.body, "Mine only") {
		t.Errorf("B's segments page: %d, A's segment shown: %v", p.status, strings.Contains(p.body, "Mine only"))
	}
	posts := []string{"/console/contacts/" + id + "/tags", "/console/contacts/" + id + "/tags/remove",
		"/console/contacts/" + id + "/properties", "/console/contacts/" + id + "/properties/" + property + "/archive",
		"/console/contacts/" + id + "/fields",
		"/console/webhooks/" + sub.SubscriptionId + "/secret", "/console/webhooks/" + sub.SubscriptionId + "/delete",
		"/console/webhooks/" + sub.SubscriptionId + "/pause", "/console/webhooks/" + sub.SubscriptionId + "/test",
		"/console/webhooks/" + sub.SubscriptionId + "/deliveries/" + delivery + "/redeliver"}
	// every console action on an account's data is in the list above
	e := echo.New()
	a.Svc.Console.Register(e, passThrough, passThrough)
	for _, r := range e.Routes() {
		if !strings.Contains(r.Path, ":") {
			continue
		}
		re := regexp.MustCompile("^" + regexp.MustCompile(`:[a-z]+`).ReplaceAllString(r.Path, "[^/]+") + "$")
		if list := map[string][]string{http.MethodPost: posts, http.MethodGet: gets}[r.Method]; !slices.ContainsFunc(list, re.MatchString) {
			t.Errorf("the console's %s %s is not in the tenant test", r.Method, r.Path)
		}
	}
	for _, path := range posts {
		form := url.Values{"tag": {"t"}, "address": {"2 Main St, Springfield, IL 62704"}, "key": {"seats"}, "value": {"1"}, "csrf": {token}}
		if p := b.do("POST", path, form); p.status != http.StatusNotFound {
			t.Errorf("B posting %s: %d", path, p.status)
		}
	}
	if r := a.Do("GET", "/public/v1/webhooks", keyA, nil); !strings.Contains(string(r.Body), `"status":"Active"`) {
		t.Errorf("A's subscription after B's attempts: %s", r.Body)
	}

	reader, err := a.Svc.Auth.CreateKeyWith(context.Background(), accountA, auth.KeyOptions{Name: "reader", Scopes: []string{"contacts:read"}})
	if err != nil {
		t.Fatal(err)
	}
	r := &browser{t: t, base: a.URL}
	r.signIn(reader)
	page := r.do("GET", "/console/contacts/"+id, nil)
	if page.status != 200 || strings.Contains(page.body, "Add tag") || !strings.Contains(page.body, "lacks the scope events:read") {
		t.Errorf("a read-only key's contact page: %d", page.status)
	}
	if p := r.do("POST", "/console/contacts/"+id+"/tags", url.Values{"tag": {"x"}, "csrf": {csrfField.FindStringSubmatch(page.body)[1]}}); p.status != http.StatusForbidden {
		t.Errorf("a read-only key adding a tag: %d", p.status)
	}
	if p := r.do("GET", "/console/webhooks", nil); p.status != http.StatusForbidden {
		t.Errorf("a contacts-only key on webhooks: %d", p.status)
	}
}

func TestVendoredHtmxIsTheRecordedOne(t *testing.T) {
	b, err := os.ReadFile("static/htmx.min.js")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("static/HTMX.md")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if !strings.Contains(string(doc), "sha256 of htmx.min.js: "+hex.EncodeToString(sum[:])) {
		t.Errorf("static/htmx.min.js (sha256 %x) is not the file static/HTMX.md records", sum)
	}
}

func sha(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

func createContact(t *testing.T, a *testkit.API, key, email string) string {
	t.Helper()
	var out struct {
		Contact struct {
			ContactId string `json:"contactId"`
		} `json:"contact"`
	}
	a.Do("POST", "/public/v1/contact", key, map[string]any{"email": email}).JSON(t, &out)
	return out.Contact.ContactId
}

// passThrough stands for the API's guards where a test only lists the console's routes.
func passThrough(next echo.HandlerFunc) echo.HandlerFunc { return next }

// The console shows a subscription's filter and what it left out, and the event catalog.
func TestConsoleShowsFiltersAndTheCatalog(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	var sub struct {
		SubscriptionId string `json:"subscriptionId"`
	}
	a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": "https://hooks.example.com/vip", "eventType": "TagsAdded",
		"filter": map[string]any{"data.tagsAddedInfo.tagsAdded": "vip"}}).JSON(t, &sub)
	if r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "cold@example.com", "tags": []string{"cold"}}); r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	if err := a.Svc.Filtered.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := &browser{t: t, base: a.URL}
	b.signIn(key)
	p := b.do("GET", "/console/webhooks/"+sub.SubscriptionId, nil)
	if p.status != 200 || !strings.Contains(p.body, "<dt>Events filtered out</dt><dd>1 (no delivery") ||
		!strings.Contains(p.body, `<code>{&#34;data.tagsAddedInfo.tagsAdded&#34;: &#34;vip&#34;}</code>`) {
		t.Errorf("the subscription's page: %d\n%s", p.status, p.body)
	}
	if r := a.Do("POST", "/public/v1/segments", key, map[string]any{"name": "Illinois <leads>", "filter": map[string]any{"groups": []any{
		map[string]any{"conditions": []any{map[string]any{"attribute": "address.state", "operator": "eq", "value": "IL"},
			map[string]any{"attribute": "tags", "operator": "notContains", "value": "Customer"}}},
		map[string]any{"conditions": []any{map[string]any{"attribute": "customFields.seats", "operator": "exists"}}}}}}); r.Status != 400 {
		t.Errorf("a segment on a field the account lacks: %d %s", r.Status, r.Body)
	}
	if r := a.Do("POST", "/public/v1/fields", key, map[string]any{"key": "seats", "label": "Seats", "type": "number"}); r.Status != 200 {
		t.Fatalf("field: %d %s", r.Status, r.Body)
	}
	if r := a.Do("POST", "/public/v1/segments", key, map[string]any{"name": "Illinois <leads>", "filter": map[string]any{"groups": []any{
		map[string]any{"conditions": []any{map[string]any{"attribute": "address.state", "operator": "eq", "value": "IL"},
			map[string]any{"attribute": "tags", "operator": "notContains", "value": "Customer"}}},
		map[string]any{"conditions": []any{map[string]any{"attribute": "customFields.seats", "operator": "gte", "value": 2}}}}}}); r.Status != 200 {
		t.Fatalf("segment: %d %s", r.Status, r.Body)
	}
	var illinois struct {
		SegmentID string `json:"segmentId"`
	}
	a.Do("GET", "/public/v1/segments", key, nil)
	if err := testkit.Pool(a.Store).QueryRow(context.Background(), "SELECT segment_id::text FROM segments WHERE name = 'Illinois <leads>'").Scan(&illinois.SegmentID); err != nil {
		t.Fatal(err)
	}
	p = b.do("GET", "/console/segments", nil)
	for _, want := range []string{`<h2><a href="/console/segments/` + illinois.SegmentID + `">Illinois &lt;leads&gt;</a> <small>(dynamic, backfilling)</small></h2>`,
		`<li><code>address.state eq &#34;IL&#34;</code></li>`,
		`<li><code>tags notContains &#34;customer&#34;</code></li>`, `<p class="or">or</p>`, `<li><code>customFields.seats gte 2</code></li>`} {
		if p.status != 200 || !strings.Contains(p.body, want) {
			t.Errorf("the segments page lacks %s: %d\n%s", want, p.status, p.body)
		}
	}
	a.Backfill(t)
	var il struct {
		Contact struct {
			ContactID string `json:"contactId"`
		} `json:"contact"`
	}
	a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "il@example.com", "address": "1 Main St, Springfield, IL 62704"}).JSON(t, &il)
	p = b.do("GET", "/console/segments/"+illinois.SegmentID, nil)
	for _, want := range []string{"<small>(dynamic, ready)</small>", "<p>1 members", `<a href="/console/contacts/` + il.Contact.ContactID + `">`} {
		if p.status != 200 || !strings.Contains(p.body, want) {
			t.Errorf("the segment's page lacks %s: %d\n%s", want, p.status, p.body)
		}
	}
	if p := b.do("GET", "/console/segments/"+illinois.SegmentID+"?after=nope", nil); p.status != http.StatusBadRequest {
		t.Errorf("a page after something that is not an id: %d", p.status)
	}
	p = b.do("GET", "/console/event-types", nil)
	for _, want := range []string{`<h2 id="type-TagsAdded">TagsAdded</h2>`, `<h2 id="type-ContactsMerged">ContactsMerged</h2>`,
		"Tags were added to a contact", "data.tagsAddedInfo", `&#34;$schema&#34;`} {
		if p.status != 200 || !strings.Contains(p.body, want) {
			t.Errorf("the event types page lacks %s: %d", want, p.status)
		}
	}
}

// A Failing subscription shows a banner on the webhooks page and its own, with when it will be
// removed; a removed one says why.
func TestConsoleWarnsOfFailingSubscriptions(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	var sub struct {
		SubscriptionId string `json:"subscriptionId"`
	}
	a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": "https://hooks.example.com/down", "eventType": "TagsAdded"}).JSON(t, &sub)
	if _, err := testkit.Pool(a.Store).Exec(context.Background(), `UPDATE webhook_subscriptions SET status = 'Failing', consecutive_failures = 3,
		failing_since = '2030-01-01T00:00:00Z', last_failure_at = '2030-01-01T00:00:00Z', last_failure = 'HTTP 503',
		created_at = '2029-12-31T00:00:00Z'`); err != nil {
		t.Fatal(err)
	}
	b := &browser{t: t, base: a.URL}
	b.signIn(key)
	for _, path := range []string{"/console/webhooks", "/console/webhooks/" + sub.SubscriptionId} {
		p := b.do("GET", path, nil)
		if p.status != 200 || !strings.Contains(p.body, `class="banner warning" role="alert"`) || !strings.Contains(p.body, "2030-01-05") {
			t.Errorf("%s: no banner with the removal date: %d\n%s", path, p.status, p.body)
		}
	}
	if p := b.do("GET", "/console/webhooks/"+sub.SubscriptionId, nil); !strings.Contains(p.body, "3 failures in a row") || !strings.Contains(p.body, "(HTTP 503)") {
		t.Errorf("the health line is missing:\n%s", p.body)
	}
	if r := a.Do("DELETE", "/public/v1/webhooks/"+sub.SubscriptionId, key, nil); r.Status != 204 {
		t.Fatal(r.Status)
	}
	if p := b.do("GET", "/console/webhooks/"+sub.SubscriptionId, nil); strings.Contains(p.body, "banner warning") || !strings.Contains(p.body, "· deleted") {
		t.Errorf("a deleted subscription's page:\n%s", p.body)
	}
}

// A subscription's page shows what receivers answered only to a key that reads events: a
// receiver may echo what it received.
func TestConsoleShowsExcerptsOnlyWithEventsRead(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, testkit.LocalDelivery)
	a.StartWorkers()
	account, key := a.Account("a")
	rc := testkit.NewReceiver(t)
	rc.Respond = func(_ int, w http.ResponseWriter, _ *http.Request) { w.Write([]byte("echoed-back-by-the-receiver")) }
	var sub struct {
		SubscriptionId string `json:"subscriptionId"`
	}
	a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": rc.URL, "eventType": "TagsAdded"}).JSON(t, &sub)
	id := createContact(t, a, key, "mine@example.com")
	a.Do("POST", "/public/v1/contact/"+id+"/tags", key, map[string]any{"tags": []string{"t"}})
	rc.Next(t)
	a.DeliveriesSettled(t)
	for _, scopes := range [][]string{{"webhooks:read"}, {"webhooks:read", "events:read"}} {
		k, err := a.Svc.Auth.CreateKeyWith(context.Background(), account, auth.KeyOptions{Name: strings.Join(scopes, "+"), Scopes: scopes})
		if err != nil {
			t.Fatal(err)
		}
		b := &browser{t: t, base: a.URL}
		b.signIn(k)
		p := b.do("GET", "/console/webhooks/"+sub.SubscriptionId, nil)
		if shown, want := strings.Contains(p.body, "echoed-back-by-the-receiver"), len(scopes) == 2; p.status != 200 || shown != want ||
			!strings.Contains(p.body, "<td>200</td>") {
			t.Errorf("a key with %v: %d, the excerpt shown %v, want %v", scopes, p.status, shown, want)
		}
	}
}
