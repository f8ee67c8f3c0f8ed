package costtest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/field"
	"github.com/contactd/contactd/internal/segment"
	"github.com/contactd/contactd/internal/testkit"
)

// request is one HTTP request of a worst case.
type request struct {
	method, path string
	body         any
	status       int
	public       bool   // sent without the key
	key          string // another account's key ("": the main account's)
}

// worstCase builds an operation's most expensive legal request (its preparation unmeasured)
// and says what it is; budget is what it may cost, in buffers; size is what the cost grows
// with beyond the request's own limits ("" when nothing does).
type worstCase struct {
	what   string
	size   string
	budget int64
	build  func(e *env) request
}

// accountContacts is the size of the account the worst cases run in: enough that a list page's
// walk reaches its limit and an export streams more than a page.
const accountContacts = 10_000

// TestEveryOperationHasAWorstCase: each operation of openapi.yaml that contactd serves has its
// most expensive legal request here, and docs/operations.md's cost table lists it with the
// same budget; each request, sent to an account of accountContacts contacts whose every event
// type has three subscriptions with the heaviest filter a subscription may save (and 199
// fields and 99 dynamic segments: the template), with the account's audience not in the
// process's cache, costs the database no more than its budget. Each case starts from a copy of
// the frozen template in a process of its own (prepareTemplate, warmUp): what it costs does
// not depend on the cases run before it, on their order, or on what the machine is doing.
func TestEveryOperationHasAWorstCase(t *testing.T) {
	spec, err := api.GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	table := docsTable(t)
	for _, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			c, ok := worstCases[op.OperationID]
			switch {
			case !ok:
				t.Errorf("%s has no worst case in the cost model", op.OperationID)
			case table[op.OperationID] != c.budget:
				t.Errorf("docs/operations.md lists %s's budget as %d buffers, the test %d", op.OperationID, table[op.OperationID], c.budget)
			}
		}
	}
	for _, w := range spec.Webhooks {
		for _, op := range w.Operations() {
			if _, ok := worstCases[op.OperationID]; ok {
				t.Errorf("%s is the receivers' operation: contactd serves no request of it", op.OperationID)
			}
		}
	}

	tmpl := prepareTemplate(t)
	names := make([]string, 0, len(worstCases))
	for name := range worstCases {
		names = append(names, name)
	}
	slices.Sort(names)
	defer reportMeter(t)
	for _, name := range names {
		c := worstCases[name]
		t.Run(name, func(t *testing.T) {
			// one at a time: a transaction open in another database holds back the horizon that
			// decides what a page's pruning may remove (it is the cluster's), and with it whether
			// a later update finds room on its page
			a := testkit.NewAPIOn(t, testkit.NewDatabaseFrom(t, tmpl.name), tmpl.sealed)
			a.SeededMemberships("the worst cases' contacts are put in every segment by hand")
			tmpl.warmUp(t, a)
			e := tmpl.env.on(t, a)
			m := newMeter(t, a)
			req := c.build(e)
			a.Svc.Subscribers.Forget(e.account) // cold: whether a notification came since is luck
			a.Svc.Subscribers.Forget(e.unique.account)
			key := e.key
			if req.key != "" {
				key = req.key
			}
			if req.public {
				key = ""
			} else if _, err := a.Svc.Auth.Authenticate(context.Background(), key, netip.Addr{}); err != nil {
				// warm: a key's lookup and its last use are written once a minute (auth.CacheTTL,
				// auth.TouchEvery), by whichever request comes first after it: not this one's cost
				t.Fatal(err)
			}
			got := m.measure(t, func() {
				if status, body := sendRaw(t, a, req.method, req.path, key, req.body); status != req.status {
					t.Fatalf("%s %s: %d %s, want %d", req.method, req.path, status, truncate(string(body)), req.status)
				}
			})
			t.Logf("%s: %d buffers in %d statements (budget %d); Go CPU %s, PostgreSQL %s, longest transaction %s: %s", name, got.buffers, got.statements,
				c.budget, got.goCPU.Round(time.Millisecond), got.pgExec.Round(time.Millisecond), got.longestTx.Round(time.Millisecond), c.what)
			meterMu.Lock()
			metered = append(metered, meterLine{name, got})
			meterMu.Unlock()
			if ceiling := cmp.Or(cpuCeilings[name], maxGoCPU); got.goCPU > ceiling {
				t.Errorf("%s took %s of Go CPU, over its ceiling of %s: %s", name, got.goCPU.Round(time.Millisecond), ceiling, c.what)
			}
			if got.buffers > c.budget {
				t.Errorf("%s cost %d buffers, over its budget of %d: %s", name, got.buffers, c.budget, c.what)
				for _, s := range got.each {
					t.Logf("  %6d buffers %3d calls  %s", s.buffers, s.calls, strings.Join(strings.Fields(s.query), " "))
				}
			}
		})
	}
}

// maxGoCPU is the ceiling of a worst case's Go CPU, and cpuCeilings the exceptions, each about
// three times what the case measures alone: CPU time, not wall time, so a busy machine moves
// it little; generous, they catch work that runs away (a pattern's backtracking, segments
// evaluated again and again), not a slower machine.
const maxGoCPU = time.Second

var cpuCeilings = map[string]time.Duration{
	// 1,000 items, each evaluated against 100 segments and claiming 20 values: about 2.5 s
	"batchContacts": 8 * time.Second,
	// 10,000 deliveries planned and written through the heaviest filters: about 0.8 s
	"replayWebhook": 3 * time.Second,
}

type meterLine struct {
	name string
	cost cost
}

var (
	meterMu sync.Mutex
	metered []meterLine
)

// reportMeter logs the five costliest worst cases by each of the meter's figures.
func reportMeter(t *testing.T) {
	meterMu.Lock()
	defer meterMu.Unlock()
	for _, by := range []struct {
		what string
		of   func(cost) time.Duration
	}{{"Go CPU", func(c cost) time.Duration { return c.goCPU }}, {"PostgreSQL time", func(c cost) time.Duration { return c.pgExec }},
		{"longest transaction", func(c cost) time.Duration { return c.longestTx }}} {
		lines := slices.Clone(metered)
		slices.SortFunc(lines, func(a, b meterLine) int { return cmp.Compare(by.of(b.cost), by.of(a.cost)) })
		var top []string
		for _, l := range lines[:min(5, len(lines))] {
			top = append(top, fmt.Sprintf("%s %s", l.name, by.of(l.cost).Round(time.Millisecond)))
		}
		t.Logf("the five costliest by %s: %s", by.what, strings.Join(top, ", "))
	}
}

// sendRaw sends a case's request and reads its answer, without the suite's validation of it
// against openapi.yaml: the meter counts the server's CPU, not the validator's.
func sendRaw(t *testing.T, a *testkit.API, method, path, key string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, a.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	resp, err := (&http.Client{Timeout: testkit.Patience}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// docsTable reads the cost table of docs/operations.md: operation -> budget.
func docsTable(t *testing.T) map[string]int64 {
	t.Helper()
	src, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(\\w+)` \\|[^\\n]*\\| ([0-9,]+) \\|$").FindAllStringSubmatch(string(src), -1) {
		n, _ := strconv.ParseInt(strings.ReplaceAll(m[2], ",", ""), 10, 64)
		out[m[1]] = n
	}
	return out
}

// eventTypes are the types every event written here can have: each gets three subscriptions.
var eventTypes = []string{"TagsAdded", "TagsRemoved", "ContactDetailsUpdated", "ContactUnsubscribed", "FormSubmission",
	"ContactEnriched", "ContactErased", "ContactsMerged"}

// subscribeAll gives each event type three subscriptions (the most an account may have) with
// the heaviest filter, that still wants every event: every event costs three deliveries and
// three evaluations of 32 conditions.
func (e *env) subscribeAll() {
	for _, typ := range eventTypes {
		for i := range 3 {
			e.do("POST", "/public/v1/webhooks", map[string]any{"url": fmt.Sprintf("https://hooks.example.com/%s/%d", typ, i),
				"eventType": typ, "filter": testkit.HeaviestFilter(typ)}, 200)
		}
	}
}

// settle marks every delivery delivered: a replay has room, and nothing queued by one case
// lingers into the next.
func (e *env) settle() {
	if _, err := e.a.Store.Pool.Exec(context.Background(), `UPDATE webhook_deliveries SET status = 'Succeeded', next_attempt_at = NULL
		WHERE status = 'Pending'`); err != nil {
		e.t.Fatal(err)
	}
}

// fullContact is a contact with every field at its longest, 500 tags (the most a contact has)
// and properties active properties; it returns its id and email.
func (e *env) fullContact(name string, properties int) (string, string) {
	return e.fullContactTagged(name, name, properties)
}

// fullContactTagged is fullContact with the tags made from tagged: contacts given the same one
// share their 500 tags.
func (e *env) fullContactTagged(name, tagged string, properties int) (string, string) {
	e.t.Helper()
	email := name + "-" + strings.Repeat("x", 60-len(name)) + "@" + strings.Repeat("d", 60) + ".example.com"
	e.phones++
	var created api.CreateContactResult
	e.do("POST", "/public/v1/contact", map[string]any{"email": email, "name": strings.Repeat("N", 64), "phone": fmt.Sprintf("+1 (555) 020-%04d", e.phones),
		"tags": tags(tagged+"a", 100), "assignedUserEmailId": "agent@example.com",
		"crmFields": map[string]any{"name": strings.Repeat("c", 64), "stage": "New"}}, 200).JSON(e.t, &created)
	id := created.Contact.ContactId
	for k := range 4 {
		e.do("POST", "/public/v1/contact/"+id+"/tags", map[string]any{"tags": tags(fmt.Sprintf("%s%c", tagged, 'b'+k), 100)}, 200)
	}
	for p := range properties {
		e.do("POST", "/public/v1/contact/"+id+"/property", map[string]any{"address": fmt.Sprintf("%d N Main St Apt %d, Springfield, IL 62704", 100+p, p)}, 200)
	}
	return id, email
}

// activities records n FormSubmission activities of the contact with details of size bytes.
func (e *env) activities(id string, n, size int) {
	e.t.Helper()
	for i := range n {
		e.do("POST", "/public/v1/contact/"+id+"/activity", map[string]any{"type": "FormSubmission", "activityId": fmt.Sprintf("a%d", i),
			"details": map[string]any{"note": strings.Repeat("n", size)}}, 200)
	}
}

// subscription is one of the account's subscriptions to typ.
func (e *env) subscription(typ string) string {
	e.t.Helper()
	var list api.WebhookList
	e.do("GET", "/public/v1/webhooks", nil, 200).JSON(e.t, &list)
	for _, s := range list.Webhooks {
		if string(s.EventType) == typ && s.Status != api.Removed {
			return s.SubscriptionId
		}
	}
	e.t.Fatalf("no live subscription to %s", typ)
	return ""
}

// detailsOfValues is an activity's details of n JSON values, the most a filter is evaluated on
// (2,000), within its 8 KiB.
func detailsOfValues(n int) map[string]any {
	return map[string]any{"a": make([]int, 998), "b": make([]int, n-2-999)}
}

// costliestPattern is a pattern of 444 instructions: 444,000 steps a value of 1,000
// characters, within field.MaxPatternSteps.
const costliestPattern = "[a-z]{440}"

func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

var worstCases = map[string]worstCase{
	"createContact": {what: "every field at its longest, 100 tags of 32 characters, an address, a value of 140 characters for each of 200 unique fields (200 values claimed; about 31 KB of values, as much as a contact holds), events to 3 subscriptions with the heaviest filter, in an account holding 20,000 unique values, entering the account's 100 dynamic segments of the costliest filter, read cold (100 memberships, 100 events)", size: "the account's values of unique fields (the depth of their index)", budget: 6500,
		build: func(e *env) request {
			u := e.uniqueAccount()
			return request{method: "POST", path: "/public/v1/contact", status: 200, key: u.key, body: map[string]any{
				"customFields": uniqueValues("created", 140),
				"email":        strings.Repeat("x", 64) + "@" + strings.Repeat("d", 60) + ".example.com", "name": strings.Repeat("N", 64),
				"phone": "+1 (555) 010-2030", "tags": tags("new", 100), "assignedUserEmailId": "agent@example.com",
				"address": "123 N Main St Apt 4, Springfield, IL 62704",
				"crmFields": map[string]any{"name": strings.Repeat("c", 64), "url": "https://crm.example.com/" + strings.Repeat("u", 200),
					"source": strings.Repeat("s", 64), "stage": strings.Repeat("g", 64), "createdDate": "2026-11-21T09:30:00.123Z"}}}
		}},
	"getContact": {what: "by email (case-insensitive), a contact of 500 tags and 50 active properties, with the segments it is in: all 100 of the account's (by email alone: 7 buffers)", budget: 800,
		build: func(e *env) request {
			id, email := e.fullContact("get", 50)
			e.dynamicSegments(segment.MaxPerAccount)
			if _, err := e.a.Store.Pool.Exec(context.Background(), `INSERT INTO segment_members (account_id, segment_id, contact_id, added_at)
				SELECT account_id, segment_id, $2::uuid, now() FROM segments WHERE account_id = $1`, e.account, id); err != nil {
				e.t.Fatal(err)
			}
			return request{method: "GET", path: "/public/v1/contact?include=segments&emailId=" + url.QueryEscape(strings.ToUpper(email)), status: 200}
		}},
	"listContacts": {what: "a page of 200 filtered by a custom field's value that the oldest 1,200 of 2,000 contacts hold, each contact holding 31 KB of values: the walk reads the newest 800 and their values, the custom fields' index finds 1,000 holders (too many to sort for a page), the walk reads 200 more (its limit, 2,000 rows read in all), and the page's 200 contacts are read (a tag that 1 in 200 of 10,000 contacts has, with a name prefix, the costliest search before custom fields, cost 3,186)", budget: 39_000,
		build: func(e *env) request {
			s := e.searchAccount()
			return request{method: "GET", path: "/public/v1/contacts?limit=200&field=t_31:eq:common", status: 200, key: s.key}
		}},
	"batchContacts": {what: "1,000 upserts (the most) of existing contacts, each adding 30 tags and an address and replacing 20 values of unique fields (20,000, the most a batch carries: 20,000 let go, 20,000 claimed), in an account of 100 dynamic segments of the costliest filter that every contact stays in (100,000 memberships read)", budget: 700_000,
		build: func(e *env) request {
			u := e.uniqueAccount()
			const n, perItem = uniqueHolders, uniquePerHolder
			items := make([]any, n)
			for i := range items {
				items[i] = map[string]any{"email": fmt.Sprintf("u%05d@example.com", i), "name": "Upserted",
					"tags": tags(fmt.Sprintf("b%d", i), 30), "address": fmt.Sprintf("%d Elm St, Springfield, IL 62704", i+1),
					"customFields": itemValues(i, perItem, "after")}
			}
			return request{method: "POST", path: "/public/v1/contacts/batch", status: 200, key: u.key, body: map[string]any{"mode": "upsert", "contacts": items}}
		}},
	"findDuplicateContacts": {what: "a page of 100 groups by phone (the account's contacts share 2,000 phones, 5 each)", budget: 2000,
		build: func(e *env) request {
			return request{method: "GET", path: "/public/v1/contacts/duplicates?limit=100&by=phone", status: 200}
		}},
	"mergeContacts": {what: "10 duplicates (the most) of 500 tags (the primary's: a contact keeps 500 at most) and 3 properties each into a primary of 500 tags", budget: 1150,
		build: func(e *env) request {
			primary, _ := e.fullContactTagged("primary", "merged", 3)
			var dups []string
			for i := range 10 {
				id, _ := e.fullContactTagged(fmt.Sprintf("dup%d", i), "merged", 3)
				dups = append(dups, id)
			}
			return request{method: "POST", path: "/public/v1/contacts/merge", status: 200,
				body: map[string]any{"primaryContactId": primary, "duplicateContactIds": dups}}
		}},
	"exportContacts": {what: "the whole account of 10,000 contacts, streamed: about 1 buffer a contact", size: "the account's contacts", budget: 12_000,
		build: func(e *env) request { return request{method: "GET", path: "/public/v1/contacts/export", status: 200} }},
	"listEvents": {what: "a page of 1,000 asked, of 8 KiB events: it ends at about 1 MiB", budget: 650,
		build: func(e *env) request {
			id, _ := e.fullContact("feed", 0)
			e.activities(id, 200, 8000)
			e.feedShowsAll()
			return request{method: "GET", path: "/public/v1/events?limit=1000&eventType=FormSubmission", status: 200}
		}},
	"getEvent": {what: "one event of 8 KiB", budget: 10,
		build: func(e *env) request {
			id, _ := e.fullContact("event", 0)
			e.activities(id, 1, 8000)
			e.feedShowsAll()
			var page api.EventList
			e.do("GET", "/public/v1/events?limit=1&eventType=FormSubmission", nil, 200).JSON(e.t, &page)
			return request{method: "GET", path: "/public/v1/events/" + page.Events[0].EventId, status: 200}
		}},
	"updateContact": {what: "every field changed on a contact of 500 tags and 50 properties, each of its 200 unique fields' values of 140 characters replaced (200 let go, 200 claimed; about 31 KB of values, as much as a contact holds), unsubscribing it: two events to 3 subscriptions each, in an account holding 20,000 unique values, leaving the account's 100 dynamic segments of the costliest filter (100 memberships, 100 events)", size: "the account's values of unique fields (the depth of their index)", budget: 7000,
		build: func(e *env) request {
			u := e.uniqueAccount()
			id, _ := u.fullContact("update", 50)
			u.do("PATCH", "/public/v1/contact/"+id, map[string]any{"customFields": uniqueValues("before", 140)}, 200)
			return request{method: "PATCH", path: "/public/v1/contact/" + id, status: 200, key: u.key, body: map[string]any{
				"customFields": uniqueValues("after", 140),
				"email":        "updated-" + strings.Repeat("u", 50) + "@example.com", "name": strings.Repeat("M", 64), "phone": "+1 (555) 010-9999",
				"assignedUserEmailId": "other@example.com", "recordStatus": "NonMarketing",
				"crmFields": map[string]any{"name": strings.Repeat("z", 64), "stage": "Won"}}}
		}},
	"deleteContact": {what: "a contact of 500 tags, 50 active and 450 archived properties, 200 activities", size: "the contact's activities", budget: 520,
		build: func(e *env) request {
			id, _ := e.fullContact("delete", 50)
			e.activities(id, 200, 100)
			return request{method: "DELETE", path: "/public/v1/contact/" + id, status: 204}
		}},
	"eraseContact": {what: "a contact of 500 tags, 50 properties and 200 activities: its 205 events redacted", size: "the contact's events and activities (TestErasureCostsThePersonsData)", budget: 6300,
		build: func(e *env) request {
			id, _ := e.fullContact("erase", 50)
			e.activities(id, 200, 100)
			return request{method: "POST", path: "/public/v1/contact/" + id + "/erase", status: 200}
		}},
	"replaceContactTags": {what: "100 new tags on a contact of 500: 500 removed, 100 added, two events", budget: 210,
		build: func(e *env) request {
			id, _ := e.fullContact("replace", 0)
			return request{method: "PUT", path: "/public/v1/contact/" + id + "/tags", status: 200, body: map[string]any{"tags": tags("put", 100)}}
		}},
	"addContactTags": {what: "100 tags added to a contact of 400", budget: 200,
		build: func(e *env) request {
			id, _ := e.fullContact("add", 0)
			e.do("DELETE", "/public/v1/contact/"+id+"/tags", map[string]any{"tags": tags("addb", 100)}, 200)
			return request{method: "POST", path: "/public/v1/contact/" + id + "/tags", status: 200, body: map[string]any{"tags": tags("post", 100)}}
		}},
	"removeContactTags": {what: "100 of a contact's 500 tags removed, in an account of 100 dynamic segments (the contact read again and its memberships)", budget: 180,
		build: func(e *env) request {
			id, _ := e.fullContact("remove", 0)
			return request{method: "DELETE", path: "/public/v1/contact/" + id + "/tags", status: 200, body: map[string]any{"tags": tags("removec", 100)}}
		}},
	"addContactProperty": {what: "the 50th active property of a contact (an address of 128 characters)", budget: 110,
		build: func(e *env) request {
			id, _ := e.fullContact("property", 49)
			return request{method: "POST", path: "/public/v1/contact/" + id + "/property", status: 200,
				body: map[string]any{"address": "9876 North Martin Luther King Junior Boulevard Building 12 Apt 3456, Springfield, IL 62704"}}
		}},
	"archiveProperty": {what: "one of a contact's 50 active properties", budget: 100,
		build: func(e *env) request {
			id, _ := e.fullContact("archive", 50)
			var c api.Contact
			e.do("GET", "/public/v1/contact?contactId="+id, nil, 200).JSON(e.t, &c)
			return request{method: "POST", path: "/public/v1/contact/property/" + c.Properties[0].PropertyId + "/archive", status: 200}
		}},
	"recordContactActivity": {what: "a FormSubmission with details of 2,000 JSON values, to 3 subscriptions with the heaviest filter", budget: 175,
		build: func(e *env) request {
			id, _ := e.fullContact("activity", 0)
			return request{method: "POST", path: "/public/v1/contact/" + id + "/activity", status: 200,
				body: map[string]any{"type": "FormSubmission", "details": detailsOfValues(2000)}}
		}},
	"createField": {what: "the account's 200th field: a text field with a pattern of 444,000 steps (the account's 199 definitions of 100 options read to price its patterns together; an enum of 100 options of 100 characters cost 37)", budget: 95,
		build: func(e *env) request {
			e.defineFields(field.MaxPerAccount - 1)
			e.fields++
			return request{method: "POST", path: "/public/v1/fields", status: 200, body: map[string]any{"key": "the_last",
				"label": strings.Repeat("l", 100), "description": strings.Repeat("d", 1000), "type": "text", "validation": map[string]any{"pattern": costliestPattern}}}
		}},
	"listFields": {what: "the account's 200 fields, archived ones too, each an enum of 100 options of 100 characters", budget: 50,
		build: func(e *env) request {
			e.defineFields(field.MaxPerAccount)
			return request{method: "GET", path: "/public/v1/fields?archived=true", status: 200}
		}},
	"getField": {what: "an enum field of 100 options of 100 characters, among 200", budget: 5,
		build: func(e *env) request {
			e.defineFields(field.MaxPerAccount)
			return request{method: "GET", path: "/public/v1/fields/f_001", status: 200}
		}},
	"updateField": {what: "a pattern of 444,000 steps given to a text field, among 200 fields of 100 options (their definitions read to price the account's patterns together; 100 options of an enum field relabelled cost 20)", budget: 65,
		build: func(e *env) request {
			e.defineFields(field.MaxPerAccount - 1)
			e.do("POST", "/public/v1/fields", map[string]any{"key": "the_last", "label": "Text", "type": "text"}, 200)
			e.fields++
			return request{method: "PATCH", path: "/public/v1/fields/the_last", status: 200,
				body: map[string]any{"label": strings.Repeat("m", 100), "validation": map[string]any{"pattern": costliestPattern, "maxLength": 1000}}}
		}},
	"archiveField": {what: "an enum field of 100 options, among 200", budget: 45,
		build: func(e *env) request {
			e.defineFields(field.MaxPerAccount - 1)
			return request{method: "POST", path: "/public/v1/fields/f_000/archive", status: 200}
		}},
	"createSegment": {what: "the account's 100th segment: the most conditions (25), 24 of them an in of two names of 1,200 characters that do not compress (a 64 KiB body), one on a custom field, checked against 200 fields of 100 options read cold (a definition changed since)", budget: 200,
		build: func(e *env) request {
			e.defineFields(field.MaxPerAccount)
			e.defineSegments(segment.MaxPerAccount - 1)
			e.segments++
			e.coldDefinitions()
			return request{method: "POST", path: "/public/v1/segments", status: 200, body: map[string]any{"name": "the last",
				"kind": "snapshot", "filter": segmentFilter(7)}}
		}},
	"listSegments": {what: "the account's 100 segments, each of the costliest filter (58 KB that do not compress)", budget: 1200,
		build: func(e *env) request {
			e.defineSegments(segment.MaxPerAccount)
			return request{method: "GET", path: "/public/v1/segments", status: 200}
		}},
	"getSegment": {what: "a segment of the costliest filter (58 KB that do not compress), among 100", budget: 15,
		build: func(e *env) request {
			e.defineSegments(segment.MaxPerAccount)
			return request{method: "GET", path: "/public/v1/segments/" + e.segmentID(1), status: 200}
		}},
	"updateSegment": {what: "a new name and the costliest filter (58 KB that do not compress) for a segment of one, among 100, checked against 200 fields of 100 options read cold", budget: 300,
		build: func(e *env) request {
			e.defineFields(field.MaxPerAccount)
			e.defineSegments(segment.MaxPerAccount)
			e.coldDefinitions()
			return request{method: "PATCH", path: "/public/v1/segments/" + e.segmentID(2), status: 200,
				body: map[string]any{"name": "renamed " + strings.Repeat("r", 100), "filter": segmentFilter(11)}}
		}},
	"deleteSegment": {what: "a segment of 1,999 members (they go with it)", size: "the segment's members", budget: 2400,
		build: func(e *env) request {
			id, _ := e.memberSegment("deleted")
			return request{method: "DELETE", path: "/public/v1/segments/" + id, status: 204, key: e.searchAccount().key}
		}},
	"listSegmentMembers": {what: "a page of 1,000 members (the most) of a segment of 1,999, counted", size: "the segment's members (the count reads each one's index entry)", budget: 100,
		build: func(e *env) request {
			id, _ := e.memberSegment("listed")
			return request{method: "GET", path: "/public/v1/segments/" + id + "/contacts?limit=1000", status: 200, key: e.searchAccount().key}
		}},
	"addSegmentMember": {what: "a contact added to a ready snapshot segment of 1,999 members: its ContactEnteredSegment event", budget: 60,
		build: func(e *env) request {
			id, outsider := e.memberSegment("added to")
			return request{method: "PUT", path: "/public/v1/segments/" + id + "/contacts/" + outsider, status: 204, key: e.searchAccount().key}
		}},
	"removeSegmentMember": {what: "a member removed from a ready snapshot segment of 1,999 members: its ContactLeftSegment event", budget: 60,
		build: func(e *env) request {
			id, _ := e.memberSegment("removed from")
			var member string
			if err := e.a.Store.Pool.QueryRow(context.Background(), `SELECT contact_id::text FROM segment_members WHERE segment_id = $1
				ORDER BY contact_id DESC LIMIT 1`, id).Scan(&member); err != nil {
				e.t.Fatal(err)
			}
			return request{method: "DELETE", path: "/public/v1/segments/" + id + "/contacts/" + member, status: 204, key: e.searchAccount().key}
		}},
	"createWebhook": {what: "the heaviest filter, with 2 live subscriptions of the type", budget: 50,
		build: func(e *env) request {
			return request{method: "POST", path: "/public/v1/webhooks", status: 200, body: map[string]any{
				"url": "https://hooks.example.com/" + strings.Repeat("p", 200), "eventType": "FelixAIHandoff", "filter": testkit.HeaviestFilter("FelixAIHandoff")}}
		}},
	"listWebhooks": {what: "the account's 25 live subscriptions and 100 removed ones", size: "the subscriptions the account ever had", budget: 30,
		build: func(e *env) request {
			for i := range 100 {
				var sub api.WebhookSubscription
				e.do("POST", "/public/v1/webhooks", map[string]any{"url": fmt.Sprintf("https://hooks.example.com/gone/%d", i), "eventType": "DashboardClick"}, 200).JSON(e.t, &sub)
				e.do("DELETE", "/public/v1/webhooks/"+sub.SubscriptionId, nil, 204)
			}
			return request{method: "GET", path: "/public/v1/webhooks", status: 200}
		}},
	"deleteWebhook": {what: "a subscription with its pending deliveries left to the workers", budget: 20,
		build: func(e *env) request {
			var sub api.WebhookSubscription
			e.do("POST", "/public/v1/webhooks", map[string]any{"url": "https://hooks.example.com/delete", "eventType": "EmailClick"}, 200).JSON(e.t, &sub)
			return request{method: "DELETE", path: "/public/v1/webhooks/" + sub.SubscriptionId, status: 204}
		}},
	"updateWebhook": {what: "the heaviest filter, a throttle and a pause at once", budget: 80,
		build: func(e *env) request {
			return request{method: "PATCH", path: "/public/v1/webhooks/" + e.subscription("TagsRemoved"), status: 200, body: map[string]any{
				"filter": testkit.HeaviestFilter("TagsRemoved"), "maxDeliveriesPerSecond": 5, "paused": true}}
		}},
	"listWebhookDeliveries": {what: "a page of 100 attempts of a subscription with 10,000 deliveries, 1,000 of them attempted", budget: 900,
		build: func(e *env) request {
			sub := e.subscription("TagsAdded")
			if _, err := e.a.Store.Pool.Exec(context.Background(), `INSERT INTO webhook_attempts (account_id, delivery_id, attempt, attempted_at, response_status, latency_ms, error, subscription_id)
				SELECT account_id, delivery_id, 1, now() - g * interval '1 second', 503, 12, 'receiver answered 503', subscription_id
				FROM (SELECT account_id, delivery_id, subscription_id, row_number() OVER () AS g FROM webhook_deliveries WHERE subscription_id = $1 LIMIT 1000) d`, sub); err != nil {
				e.t.Fatal(err)
			}
			return request{method: "GET", path: "/public/v1/webhooks/" + sub + "/deliveries?limit=100", status: 200}
		}},
	"sendTestWebhook": {what: "a test event of a subscription with the heaviest filter", budget: 60,
		build: func(e *env) request {
			return request{method: "POST", path: "/public/v1/webhooks/" + e.subscription("FormSubmission") + "/test", status: 200}
		}},
	"testWebhookFilter": {what: "the heaviest filter on an event of 2,048 values: one subscription read, and at most 65,536 evaluation steps in Go", budget: 10,
		build: func(e *env) request {
			event := map[string]any{"eventType": "FormSubmission", "data": map[string]any{"a": make([]int, 999), "b": make([]int, 999), "c": make([]int, 42)}}
			return request{method: "POST", path: "/public/v1/webhooks/" + e.subscription("FormSubmission") + "/filter-test", status: 200,
				body: map[string]any{"filter": testkit.HeaviestFilter("FormSubmission"), "event": event}}
		}},
	"listEventTypes": {what: "the catalog (no database)", budget: 0,
		build: func(e *env) request { return request{method: "GET", path: "/public/v1/event-types", status: 200} }},
	"redeliverWebhook": {what: "one failed delivery queued again", budget: 45,
		build: func(e *env) request {
			sub := e.subscription("TagsAdded")
			var delivery string
			if err := e.a.Store.Pool.QueryRow(context.Background(), `UPDATE webhook_deliveries SET status = 'Failed', next_attempt_at = NULL
				WHERE delivery_id = (SELECT delivery_id FROM webhook_deliveries WHERE subscription_id = $1 LIMIT 1) RETURNING delivery_id::text`, sub).Scan(&delivery); err != nil {
				e.t.Fatal(err)
			}
			return request{method: "POST", path: "/public/v1/webhooks/" + sub + "/deliveries/" + delivery + "/redeliver", status: 200}
		}},
	"rotateWebhookSecret": {what: "a new secret, the old one kept for a day", budget: 30,
		build: func(e *env) request {
			return request{method: "POST", path: "/public/v1/webhooks/" + e.subscription("TagsAdded") + "/secret", status: 200}
		}},
	"replayWebhook": {what: "a window of 10,000 events (the most a replay queues) to a subscription with the heaviest filter: about 12.5 buffers an event", size: "the window's events (at most 10,000)", budget: 200_000,
		build: func(e *env) request {
			return request{method: "POST", path: "/public/v1/webhooks/" + e.subscription("TagsAdded") + "/replay", status: 200,
				body: map[string]any{"since": timestamp(e.seeded[0]), "until": timestamp(e.seeded[1])}}
		}},
	"getConsent": {what: "a contact's proof of consent, as JSON", budget: 10,
		build: func(e *env) request {
			var c api.Contact
			var page struct {
				Contacts []api.Contact `json:"contacts"`
			}
			e.do("GET", "/public/v1/contacts?limit=1", nil, 200).JSON(e.t, &page)
			c = page.Contacts[0]
			u, err := url.Parse(c.ProofOfConsentUrl)
			if err != nil {
				e.t.Fatal(err)
			}
			return request{method: "GET", path: u.Path, status: 200, public: true}
		}},
}

// TestCostTableText prints docs/operations.md's cost table from the worst cases (go test -run
// TestCostTableText -v ./internal/costtest), to paste when one changes: the budgets the doc
// shows are checked against these by TestEveryOperationHasAWorstCase.
func TestCostTableText(t *testing.T) {
	names := make([]string, 0, len(worstCases))
	for name := range worstCases {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("| operation | its most expensive legal request | grows with | budget (buffers) |\n|---|---|---|---|\n")
	for _, name := range names {
		c := worstCases[name]
		size := c.size
		if size == "" {
			size = "nothing: the request's limits bound it"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", name, c.what, size, thousands(c.budget))
	}
	t.Log("\n" + b.String())
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// An erasure costs what the person's data costs, not what the account's history does: a
// person of 50 events erased from an account, then another such person after the account has
// 200,000 more deliveries (CONTACTD_ERASURE_HISTORY; make bench-erasure: 1,000,000), each
// attempted with an answer kept; the second costs about what the first did (a deeper index: a
// few buffers a probe), where reading the account's deliveries would cost thousands more.
func TestErasureCostsThePersonsData(t *testing.T) {
	history := 200_000
	if v := os.Getenv("CONTACTD_ERASURE_HISTORY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CONTACTD_ERASURE_HISTORY=%q: want a number of deliveries", v)
		}
		history = n
	}
	a := testkit.NewAPI(t)
	account, key := a.Account("erasures")
	e := &env{t: t, a: a, account: account, key: key}
	m := newMeter(t, a)
	for i := range 3 {
		e.do("POST", "/public/v1/webhooks", map[string]any{"url": fmt.Sprintf("https://hooks.example.com/%d", i), "eventType": "FormSubmission"}, 200)
	}
	person := func(name string) string {
		var c api.CreateContactResult
		e.do("POST", "/public/v1/contact", map[string]any{"email": name + "@example.com"}, 200).JSON(t, &c)
		e.activities(c.Contact.ContactId, 50, 100)
		answered(t, a, c.Contact.ContactId)
		return c.Contact.ContactId
	}
	erase := func(id string) cost {
		return m.measure(t, func() { e.do("POST", "/public/v1/contact/"+id+"/erase", nil, 200) })
	}
	first := erase(person("first"))
	// the account's other events' deliveries, attempted, their answers kept
	if _, err := a.Store.Pool.Exec(context.Background(), `WITH d AS (
			INSERT INTO webhook_deliveries (account_id, delivery_id, subscription_id, event_id, status, attempts, created_at, updated_at)
			SELECT $1, gen_random_uuid(), s.ids[g % cardinality(s.ids) + 1], gen_random_uuid(), 'Succeeded', 1, now(), now()
			FROM generate_series(0, $2::int - 1) g,
				(SELECT array_agg(subscription_id) AS ids FROM webhook_subscriptions WHERE account_id = $1) s
			RETURNING account_id, delivery_id, subscription_id, event_id)
		INSERT INTO webhook_attempts (account_id, delivery_id, attempt, attempted_at, response_status, latency_ms, response_excerpt, subscription_id, event_id)
		SELECT account_id, delivery_id, 1, now(), 200, 5, '{"ok":true}', subscription_id, event_id FROM d`, account, history); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Store.Pool.Exec(context.Background(), "ANALYZE webhook_deliveries; ANALYZE webhook_attempts"); err != nil {
		t.Fatal(err)
	}
	second := erase(person("second"))
	t.Logf("erasing a person of 50 events: %d buffers, %v at an empty account; %d buffers, %v with %d deliveries of other events",
		first.buffers, first.elapsed.Round(time.Millisecond), second.buffers, second.elapsed.Round(time.Millisecond), history)
	if second.buffers > first.buffers*3/2 {
		t.Errorf("the account's history made the erasure cost %d buffers, against %d without it", second.buffers, first.buffers)
	}
}

// answered records, for each delivery of the contact's events, an attempt whose receiver
// answered something: what an erasure must forget.
func answered(t *testing.T, a *testkit.API, contact string) {
	t.Helper()
	if _, err := a.Store.Pool.Exec(context.Background(), `INSERT INTO webhook_attempts (account_id, delivery_id, attempt, attempted_at,
			response_status, latency_ms, response_excerpt, subscription_id, event_id)
		SELECT d.account_id, d.delivery_id, 1, now(), 200, 5, '{"echo":"the person"}', d.subscription_id, d.event_id
		FROM webhook_deliveries d JOIN webhook_events e USING (account_id, event_id) WHERE e.contact_id = $1`, contact); err != nil {
		t.Fatal(err)
	}
}
