package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/field"
	"github.com/contactd/contactd/internal/testkit"
)

// sampleTagsAdded is an event as the feed and receivers see it, for the filter language's table.
const sampleTagsAdded = `{"eventId": "019350b6-5d7e-7c3a-9f1e-2b4c6d8e0a77", "eventType": "TagsAdded",
	"eventDate": "2026-11-21T09:30:00.123Z", "data": {"contactInfo": {"contactId": "c1", "propertyId": "",
	"emailId": "jane@example.com", "assignedUserEmailId": "agent@example.com"},
	"tagsAddedInfo": {"tagsAdded": ["vip", "open \"house\"", "café"]}, "score": 42, "flag": true, "none": null}}`

func subscribeFiltered(t *testing.T, a *testkit.API, key, url, typ string, filter any) api.WebhookSubscription {
	t.Helper()
	r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": url, "eventType": typ, "filter": filter})
	var sub api.WebhookSubscription
	r.JSON(t, &sub)
	if r.Status != 200 {
		t.Fatalf("subscribe with filter %v: %d %s", filter, r.Status, r.Body)
	}
	return sub
}

// Each operator of the filter language, evaluated by PostgreSQL as deliveries are, through
// filter-test: a hand-checked table, so a change to the compiler or to the SQL function shows.
func TestFilterLanguage(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	sub := subscribeFiltered(t, a, key, "https://hooks.example.com/a", "TagsAdded", map[string]any{})
	if sub.Filter != nil || sub.FilteredEvents != nil {
		t.Errorf("an empty filter is no filter: %+v", sub)
	}
	var event map[string]any
	if err := json.Unmarshal([]byte(sampleTagsAdded), &event); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		filter string
		want   bool
	}{
		{`{"eventType": "TagsAdded"}`, true},
		{`{"eventType": "TagsRemoved"}`, false},
		{`{"data.tagsAddedInfo.tagsAdded": "vip"}`, true}, // one element of the array
		{`{"data.tagsAddedInfo.tagsAdded": "gold"}`, false},
		{`{"data.tagsAddedInfo.tagsAdded": "open \"house\""}`, true},
		{`{"data.tagsAddedInfo.tagsAdded": "café"}`, true},
		{`{"data.tagsAddedInfo.tagsAdded": {"$in": ["gold", "vip"]}}`, true},
		{`{"data.tagsAddedInfo.tagsAdded": {"$in": ["gold", "silver"]}}`, false},
		{`{"data.tagsAddedInfo.tagsAdded": {"$nin": ["gold", "silver"]}}`, true},
		{`{"data.tagsAddedInfo.tagsAdded": {"$nin": ["gold", "vip"]}}`, false}, // no element may be one
		{`{"data.tagsAddedInfo.tagsAdded": {"$neq": "vip"}}`, false},
		{`{"data.tagsAddedInfo.tagsAdded": {"$neq": "gold"}}`, true},
		{`{"data.score": 42}`, true},
		{`{"data.score": "42"}`, false}, // another type never satisfies
		{`{"data.score": {"$gt": 41, "$lte": 42}}`, true},
		{`{"data.score": {"$gt": 42}}`, false},
		{`{"data.score": {"$gte": 42.5}}`, false},
		{`{"data.score": {"$lt": 100}}`, true},
		// each comparison at its boundary: the equal value, and 42 spelled otherwise
		{`{"data.score": {"$gte": 42}}`, true},
		{`{"data.score": {"$lte": 42}}`, true},
		{`{"data.score": {"$gt": 42}}`, false},
		{`{"data.score": {"$lt": 42}}`, false},
		{`{"data.score": {"$gte": 42.0, "$lt": 42.000001}}`, true},
		{`{"data.score": {"$in": [4.2e1]}}`, true},
		{`{"eventDate": {"$gte": "2026-11-21T09:30:00.123Z"}}`, true},
		{`{"eventDate": {"$lt": "2026-11-21T09:30:00.123Z"}}`, false},
		{`{"data.score": {"$lt": "100"}}`, false},
		{`{"eventDate": {"$gte": "2026-11-21T00:00:00.000Z", "$lt": "2026-11-22T00:00:00.000Z"}}`, true},
		{`{"eventDate": {"$gt": "2026-11-21T09:30:00.123Z"}}`, false},
		{`{"data.flag": true}`, true},
		{`{"data.flag": false}`, false},
		{`{"data.none": null}`, true},
		{`{"data.none": {"$exists": true}}`, true},
		{`{"data.missing": {"$exists": true}}`, false},
		{`{"data.missing": {"$exists": false}}`, true},
		{`{"data.missing": {"$neq": "x"}}`, true},
		{`{"data.missing": "x"}`, false},
		{`{"data.contactInfo.assignedUserEmailId": "agent@example.com", "eventType": "TagsAdded"}`, true},
		{`{"data.contactInfo.assignedUserEmailId": "agent@example.com", "eventType": "TagsRemoved"}`, false},
		{`{"$or": [{"eventType": "TagsRemoved"}, {"data.score": 42}]}`, true},
		{`{"$or": [{"eventType": "TagsRemoved"}, {"data.score": 43}]}`, false},
		{`{"$and": [{"eventType": "TagsAdded"}, {"data.score": 43}]}`, false},
		{`{"$not": {"data.tagsAddedInfo.tagsAdded": "vip"}}`, false},
		{`{"$not": {"$or": [{"data.score": 1}, {"data.score": 2}]}}`, true},
	}
	for _, tc := range cases {
		var filter map[string]any
		if err := json.Unmarshal([]byte(tc.filter), &filter); err != nil {
			t.Fatal(err)
		}
		r := a.Do("POST", "/public/v1/webhooks/"+sub.SubscriptionId+"/filter-test", key, map[string]any{"filter": filter, "event": event})
		var res api.FilterTestResult
		r.JSON(t, &res)
		if r.Status != 200 || res.Matches != tc.want {
			t.Errorf("%s: %d %s, want matches %v", tc.filter, r.Status, r.Body, tc.want)
		}
	}
}

// A filter that cannot be evaluated is refused when saved, naming its bad part.
func TestInvalidFiltersNameTheirPart(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	sub := subscribeFiltered(t, a, key, "https://hooks.example.com/a", "TagsAdded", map[string]any{"eventType": "TagsAdded"})
	many := make([]any, 65)
	for i := range many {
		many[i] = i
	}
	cases := []struct {
		filter string
		field  string
	}{
		{`{"data.x": {"$regex": "a"}}`, "body.filter.data.x.$regex"},
		{`{"data.x": {"nested": 1}}`, "body.filter.data.x.nested"},
		{`{"data.x": [1, 2]}`, "body.filter.data.x.$eq"},
		{`{"data.x": {"$gt": true}}`, "body.filter.data.x.$gt"},
		{`{"data.x": {"$in": []}}`, "body.filter.data.x.$in"},
		{`{"data.x": {"$in": [1, {"a": 1}]}}`, "body.filter.data.x.$in[1]"},
		{`{"data.x": {"$exists": "yes"}}`, "body.filter.data.x.$exists"},
		{`{"data..x": 1}`, "body.filter.data..x"},
		{`{"$xor": []}`, "body.filter.$xor"},
		{`{"$or": {"a": 1}}`, "body.filter.$or"},
		{`{"$or": [{"a": 1}, 2]}`, "body.filter.$or[1]"},
		{`{"$or": [{"a": 1}, {}]}`, "body.filter.$or[1]"},
		{`{"$not": {"$not": {"$not": {"$not": {"a": 1}}}}}`, "body.filter.$not.$not.$not.$not"},
		{`{"a": {}}`, "body.filter.a"},
		{`{"a": "` + strings.Repeat("x", 257) + `"}`, "body.filter.a.$eq"},
		{`{"a": {"$in": ` + mustJSON(many) + `}}`, "body.filter.a.$in"},
		// neither jsonb nor text holds U+0000: refused at the door, by the body's own path
		{`{"a": "x\u0000y"}`, "body.filter.a"},
		{`{"a": {"$in": ["ok", "\u0000"]}}`, "body.filter.a.$in.1"},
		{`{"a\u0000b": 1}`, "body.filter.a\u0000b"},
	}
	for _, tc := range cases {
		var filter map[string]any
		if err := json.Unmarshal([]byte(tc.filter), &filter); err != nil {
			t.Fatal(err)
		}
		for _, try := range []struct{ method, path string }{
			{"POST", "/public/v1/webhooks"},
			{"PATCH", "/public/v1/webhooks/" + sub.SubscriptionId},
			{"POST", "/public/v1/webhooks/" + sub.SubscriptionId + "/filter-test"},
		} {
			body := map[string]any{"filter": filter}
			if try.path == "/public/v1/webhooks" {
				body["url"], body["eventType"] = "https://hooks.example.com/b", "TagsAdded"
			}
			r := a.Do(try.method, try.path, key, body)
			e := r.Error(t)
			fields := []string{}
			if e.Data != nil && e.Data.Errors != nil {
				for _, f := range *e.Data.Errors {
					fields = append(fields, f.Field)
				}
			}
			if r.Status != http.StatusBadRequest || e.Code != api.ErrorCodeInvalidRequest || !slices.Contains(fields, tc.field) {
				t.Errorf("%s %s %s: %d %s, want 400 naming %s", try.method, try.path, tc.filter, r.Status, r.Body, tc.field)
			}
		}
	}
	// 32 conditions at most
	over := map[string]any{}
	for i := range 33 {
		over[fmt.Sprintf("data.f%02d", i)] = i
	}
	if r := a.Do("PATCH", "/public/v1/webhooks/"+sub.SubscriptionId, key, map[string]any{"filter": map[string]any{"$and": []any{over}}}); r.Status != 400 {
		t.Errorf("33 conditions: %d %s", r.Status, r.Body)
	}
	if n := a.Count(t, "SELECT count(*) FROM webhook_subscriptions WHERE subscription_id = $1 AND filter = '{\"eventType\": \"TagsAdded\"}'::jsonb", sub.SubscriptionId); n != 1 {
		t.Errorf("a refused filter changed the subscription's")
	}
}

// filter-test defaults to the subscription's filter and to its type's catalog example; PATCH
// sets and removes the filter.
func TestFilterTestDefaults(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	sub := subscribeFiltered(t, a, key, "https://hooks.example.com/a", "TagsAdded", map[string]any{"data.tagsAddedInfo.tagsAdded": "vip"})
	if sub.Filter == nil || (*sub.Filter)["data.tagsAddedInfo.tagsAdded"] != "vip" || sub.FilteredEvents == nil || *sub.FilteredEvents != 0 {
		t.Fatalf("created: %+v", sub)
	}
	test := func(body map[string]any) api.FilterTestResult {
		t.Helper()
		r := a.Do("POST", "/public/v1/webhooks/"+sub.SubscriptionId+"/filter-test", key, body)
		var res api.FilterTestResult
		r.JSON(t, &res)
		if r.Status != 200 {
			t.Fatalf("filter-test %v: %d %s", body, r.Status, r.Body)
		}
		return res
	}
	// the catalog's TagsAdded example adds vip
	if res := test(map[string]any{}); !res.Matches || res.Event["eventType"] != "TagsAdded" || res.Filter == nil {
		t.Errorf("the subscription's filter on the example: %+v", res)
	}
	if res := test(map[string]any{"filter": map[string]any{"data.tagsAddedInfo.tagsAdded": "gold"}}); res.Matches {
		t.Errorf("another filter on the example: %+v", res)
	}
	gold := map[string]any{"eventType": "TagsAdded", "data": map[string]any{"tagsAddedInfo": map[string]any{"tagsAdded": []string{"gold"}}}}
	if res := test(map[string]any{"event": gold}); res.Matches {
		t.Errorf("the subscription's filter on a gold event: %+v", res)
	}
	if res := test(map[string]any{"event": gold, "filter": map[string]any{}}); !res.Matches || res.Filter != nil {
		t.Errorf("no filter wants everything: %+v", res)
	}
	r := a.Do("PATCH", "/public/v1/webhooks/"+sub.SubscriptionId, key, map[string]any{"filter": nil})
	var patched api.WebhookSubscription
	r.JSON(t, &patched)
	if r.Status != 200 || patched.Filter != nil {
		t.Fatalf("PATCH filter null: %d %s", r.Status, r.Body)
	}
	if res := test(map[string]any{"event": gold}); !res.Matches || res.Filter != nil {
		t.Errorf("after the filter's removal: %+v", res)
	}
	r = a.Do("PATCH", "/public/v1/webhooks/"+sub.SubscriptionId, key, map[string]any{"filter": map[string]any{"data.tagsAddedInfo.tagsAdded": "gold"}})
	r.JSON(t, &patched)
	if r.Status != 200 || patched.Filter == nil || !test(map[string]any{"event": gold}).Matches {
		t.Errorf("PATCH filter gold: %d %s", r.Status, r.Body)
	}
	_, otherKey := a.Account("other")
	if r := a.Do("POST", "/public/v1/webhooks/"+sub.SubscriptionId+"/filter-test", otherKey, map[string]any{}); r.Status != 404 {
		t.Errorf("another account's subscription: %d %s", r.Status, r.Body)
	}
}

// filter-test costs one bounded evaluation: the costliest legal filter (32 conditions of 64
// values, none deciding early) on an event of the most values a filter is evaluated on is
// answered, and an event past that limit, which a 64 KiB body of nested arrays easily is, is
// refused with 400 naming it, before anything evaluates it.
func TestFilterTestIsBounded(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	sub := subscribeFiltered(t, a, key, "https://hooks.example.com/a", "FormSubmission", map[string]any{})
	var all []any
	for i := range 16 {
		vals := make([]any, 64)
		for j := range vals {
			vals[j] = float64(i*64 + j)
		}
		all = append(all, map[string]any{"data.formSubmissionInfo.details.a": map[string]any{"$nin": vals, "$neq": -1}})
	}
	filter := map[string]any{"$and": all}
	event := func(arrays int) map[string]any {
		nested := make([]any, arrays)
		for i := range nested {
			nested[i] = []any{[]any{-7, -7}, -7, -7} // in no $nin list: every condition reads it all
		}
		return map[string]any{"eventType": "FormSubmission", "data": map[string]any{"formSubmissionInfo": map[string]any{"details": map[string]any{"a": nested}}}}
	}
	// 6 values around the array, 6 an item: 2046 + 2 strings' worth short of the limit
	r := a.Do("POST", "/public/v1/webhooks/"+sub.SubscriptionId+"/filter-test", key, map[string]any{"filter": filter, "event": event(340)})
	var res api.FilterTestResult
	r.JSON(t, &res)
	if r.Status != 200 || !res.Matches {
		t.Errorf("the costliest legal evaluation: %d, matches %v", r.Status, res.Matches)
	}
	r = a.Do("POST", "/public/v1/webhooks/"+sub.SubscriptionId+"/filter-test", key, map[string]any{"filter": filter, "event": event(999)})
	e := r.Error(t)
	if r.Status != 400 || e.Data == nil || e.Data.Errors == nil || (*e.Data.Errors)[0].Field != "body.event" ||
		!strings.Contains((*e.Data.Errors)[0].Message, "more than 2048 JSON values") {
		t.Errorf("an event past the limit: %d %s", r.Status, r.Body)
	}
}

// Events a subscription's filter leaves out get no delivery and no attempt, on every path that
// queues deliveries (create, batch, tag changes, an update through Emit, replay), are counted
// on the subscription and in /metrics, and the subscription next to it without a filter gets
// everything.
func TestFilteredEventsAreNotDelivered(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, testkit.LocalDelivery)
	a.StartWorkers()
	_, key := a.Account("acme")
	vipOnly, all, phones := testkit.NewReceiver(t), testkit.NewReceiver(t), testkit.NewReceiver(t)
	filtered := subscribeFiltered(t, a, key, vipOnly.URL, "TagsAdded", map[string]any{"data.tagsAddedInfo.tagsAdded": "vip"})
	subscribeFiltered(t, a, key, all.URL, "TagsAdded", map[string]any{})
	phoneSub := subscribeFiltered(t, a, key, phones.URL, "ContactDetailsUpdated", map[string]any{"data.contactDetailsUpdatedInfo.changedFields": "phone"})

	create := func(email string, tags ...string) string {
		t.Helper()
		r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": email, "tags": tags})
		var c api.CreateContactResult
		r.JSON(t, &c)
		if r.Status != 200 {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
		return c.Contact.ContactId
	}
	vip := create("a@example.com", "vip", "lead") // wanted
	cold := create("b@example.com", "cold")       // left out
	if r := a.Do("POST", "/public/v1/contact/"+cold+"/tags", key, map[string]any{"tags": []string{"vip"}}); r.Status != 200 {
		t.Fatalf("POST tags: %d %s", r.Status, r.Body)
	} // wanted
	if r := a.Do("POST", "/public/v1/contact/"+vip+"/tags", key, map[string]any{"tags": []string{"warm"}}); r.Status != 200 {
		t.Fatalf("POST tags: %d %s", r.Status, r.Body)
	} // left out
	r := a.Do("POST", "/public/v1/contacts/batch", key, map[string]any{"contacts": []any{
		map[string]any{"email": "c@example.com", "tags": []string{"vip"}}, // wanted
		map[string]any{"email": "d@example.com", "tags": []string{"x"}},   // left out
		map[string]any{"email": "e@example.com", "tags": []string{"y"}},   // left out
	}})
	if r.Status != 200 {
		t.Fatalf("batch: %d %s", r.Status, r.Body)
	}
	if r := a.Do("PATCH", "/public/v1/contact/"+vip, key, map[string]any{"name": "Ann"}); r.Status != 200 {
		t.Fatalf("PATCH: %d %s", r.Status, r.Body)
	} // left out by the phone filter
	if r := a.Do("PATCH", "/public/v1/contact/"+vip, key, map[string]any{"phone": "+15555550100"}); r.Status != 200 {
		t.Fatalf("PATCH: %d %s", r.Status, r.Body)
	} // wanted

	a.DeliveriesSettled(t)
	tagsOf := func(rc *testkit.Receiver) []string {
		var got []string
		for {
			select {
			case d := <-rc.Got:
				var p api.WebhookPayload
				if err := json.Unmarshal(d.Body, &p); err != nil {
					t.Fatal(err)
				}
				for _, ev := range p.Events {
					if ev.Data.TagsAddedInfo != nil {
						got = append(got, strings.Join(ev.Data.TagsAddedInfo.TagsAdded, "+"))
					}
					if ev.Data.ContactDetailsUpdatedInfo != nil {
						for _, f := range ev.Data.ContactDetailsUpdatedInfo.ChangedFields {
							got = append(got, string(f))
						}
					}
				}
			default:
				slices.Sort(got)
				return got
			}
		}
	}
	if got := tagsOf(vipOnly); !slices.Equal(got, []string{"vip", "vip", "vip+lead"}) {
		t.Errorf("the vip subscription got %v", got)
	}
	if got := tagsOf(all); !slices.Equal(got, []string{"cold", "vip", "vip", "vip+lead", "warm", "x", "y"}) {
		t.Errorf("the unfiltered subscription got %v", got)
	}
	if got := tagsOf(phones); !slices.Equal(got, []string{"phone"}) {
		t.Errorf("the phone subscription got %v", got)
	}
	if n := a.Count(t, "SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1", filtered.SubscriptionId); n != 3 {
		t.Errorf("the vip subscription has %d deliveries, want 3", n)
	}

	if err := a.Svc.Filtered.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	var list api.WebhookList
	a.Do("GET", "/public/v1/webhooks", key, nil).JSON(t, &list)
	for _, w := range list.Webhooks {
		if w.FilteredEvents != nil {
			counts[w.SubscriptionId] = *w.FilteredEvents
		}
	}
	if counts[filtered.SubscriptionId] != 4 || counts[phoneSub.SubscriptionId] != 1 || len(counts) != 2 {
		t.Errorf("filtered counts %v, want 4 (vip) and 1 (phone)", counts)
	}
	metrics := a.Do("GET", "/metrics", "", nil)
	if !strings.Contains(string(metrics.Body), "contactd_webhook_events_filtered_total 5\n") {
		t.Errorf("/metrics lacks 5 filtered events:\n%s", grep(string(metrics.Body), "filtered"))
	}

	// a replay queues only what the filter wants
	r = a.Do("POST", "/public/v1/webhooks/"+filtered.SubscriptionId+"/replay", key, map[string]any{
		"since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano), "until": time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano)})
	var replay api.ReplayResult
	r.JSON(t, &replay)
	if r.Status != 200 || replay.Queued != 3 {
		t.Errorf("replay: %d %s, want 3 queued", r.Status, r.Body)
	}
	a.DeliveriesSettled(t)
	if got := tagsOf(vipOnly); !slices.Equal(got, []string{"vip", "vip", "vip+lead"}) {
		t.Errorf("the replay sent %v", got)
	}
}

// TestAFilterThatCannotBeEvaluatedFailsClosed: an event of more JSON values than a filter
// reads (a PATCH of eleven multiEnum fields of 100 options: their values before and after) is
// not delivered to a subscription whose filter would want it, since the filter could not say
// so: it is counted on the subscription (unevaluatedEvents) and in /metrics. A subscription
// without a filter gets it; a small event of the same type reaches both.
func TestAFilterThatCannotBeEvaluatedFailsClosed(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, testkit.LocalDelivery)
	_, key := a.Account("acme")
	filtered := subscribeFiltered(t, a, key, "http://127.0.0.1:1/filtered", "ContactDetailsUpdated",
		map[string]any{"eventType": "ContactDetailsUpdated"})
	plain := subscribeFiltered(t, a, key, "http://127.0.0.1:1/plain", "ContactDetailsUpdated", map[string]any{})
	options := make([]map[string]any, field.MaxOptions)
	all := make([]string, field.MaxOptions)
	for i := range options {
		all[i] = fmt.Sprintf("o%02d", i)
		options[i] = map[string]any{"value": all[i], "label": all[i]}
	}
	values := func(of []string) map[string]any {
		out := map[string]any{}
		for k := range 11 {
			out[fmt.Sprintf("m%02d", k)] = of
		}
		return out
	}
	for k := range 11 {
		defineField(t, a, key, map[string]any{"key": fmt.Sprintf("m%02d", k), "label": "M", "type": "multiEnum", "options": options})
	}
	var created api.CreateContactResult
	a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "many@example.com", "customFields": values(all)}).JSON(t, &created)
	id := created.Contact.ContactId
	deliveries := func(sub string) int {
		return a.Count(t, "SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1", sub)
	}
	if r := a.Do("PATCH", "/public/v1/contact/"+id, key, map[string]any{"name": "Small"}); r.Status != 200 {
		t.Fatalf("PATCH name: %d %s", r.Status, r.Body)
	}
	if f, p := deliveries(filtered.SubscriptionId), deliveries(plain.SubscriptionId); f != 1 || p != 1 {
		t.Fatalf("a small event: %d deliveries filtered, %d plain, want 1 and 1", f, p)
	}
	if r := a.Do("PATCH", "/public/v1/contact/"+id, key, map[string]any{"customFields": values(all[1:])}); r.Status != 200 {
		t.Fatalf("PATCH values: %d %s", r.Status, r.Body)
	}
	var big []byte
	if err := a.Store.Pool.QueryRow(context.Background(), `SELECT payload::text FROM webhook_events WHERE contact_id = $1
		ORDER BY event_id DESC LIMIT 1`, id).Scan(&big); err != nil {
		t.Fatal(err)
	}
	if n := event.ValuesIn(big, event.MaxEventValues+1); n <= event.MaxEventValues {
		t.Fatalf("the event holds %d JSON values: it must hold more than %d to test this", n, event.MaxEventValues)
	}
	if f, p := deliveries(filtered.SubscriptionId), deliveries(plain.SubscriptionId); f != 1 || p != 2 {
		t.Errorf("an event no filter can read: %d deliveries filtered, %d plain, want 1 (the small event's) and 2", f, p)
	}
	if err := a.Svc.Filtered.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var list api.WebhookList
	a.Do("GET", "/public/v1/webhooks", key, nil).JSON(t, &list)
	var got api.WebhookSubscription
	for _, w := range list.Webhooks {
		if w.SubscriptionId == filtered.SubscriptionId {
			got = w
		}
	}
	if got.UnevaluatedEvents == nil || *got.UnevaluatedEvents != 1 || got.FilteredEvents == nil || *got.FilteredEvents != 0 {
		t.Errorf("the filtered subscription shows unevaluatedEvents %v and filteredEvents %v, want 1 and 0", got.UnevaluatedEvents, got.FilteredEvents)
	}
	metrics := a.Do("GET", "/metrics", "", nil)
	if !strings.Contains(string(metrics.Body), "contactd_webhook_events_unevaluated_total 1\n") {
		t.Errorf("/metrics lacks 1 unevaluated event:\n%s", grep(string(metrics.Body), "unevaluated"))
	}
}
