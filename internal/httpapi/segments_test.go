package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/segment"
	"github.com/contactd/contactd/internal/testkit"
)

// illinois is a filter of every kind of condition: a detail, a number, a set, a time, an
// address part, and custom fields of each kind.
func illinois() map[string]any {
	return map[string]any{"groups": []any{
		map[string]any{"conditions": []any{
			map[string]any{"attribute": "address.state", "operator": "eq", "value": "IL"},
			map[string]any{"attribute": "leadScore", "operator": "gt", "value": 60},
			map[string]any{"attribute": "tags", "operator": "notContains", "value": " Customer "},
			map[string]any{"attribute": "createdAt", "operator": "gte", "value": "2026-11-21T10:30:00+01:00"},
		}},
		map[string]any{"conditions": []any{
			map[string]any{"attribute": "email", "operator": "in", "values": []any{"Ann@Example.COM", "bob@example.com"}},
			map[string]any{"attribute": "customFields.tier", "operator": "in", "values": []any{"gold", "silver"}},
			map[string]any{"attribute": "customFields.seats", "operator": "gte", "value": 10},
			map[string]any{"attribute": "customFields.mobile", "operator": "eq", "value": "(555) 010-2030"},
			map[string]any{"attribute": "customFields.renewal", "operator": "exists"},
		}},
	}}
}

func segmentFields(t *testing.T, a *testkit.API, key string) {
	t.Helper()
	defineField(t, a, key, map[string]any{"key": "tier", "label": "Tier", "type": "enum", "options": []map[string]any{
		{"value": "gold", "label": "Gold"}, {"value": "silver", "label": "Silver"}}})
	defineField(t, a, key, map[string]any{"key": "seats", "label": "Seats", "type": "number"})
	defineField(t, a, key, map[string]any{"key": "mobile", "label": "Mobile", "type": "phone"})
	defineField(t, a, key, map[string]any{"key": "renewal", "label": "Renewal", "type": "date"})
}

// A segment is saved with its filter's operands read as the attributes are stored, read back,
// listed, renamed, given a new filter and deleted; names are unique in the account whatever
// their case, and another account's segment is not found.
func TestSegments(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	_, otherKey := a.Account("globex")
	segmentFields(t, a, key)

	r := a.Do("POST", "/public/v1/segments", key, map[string]any{"name": " Illinois leads ", "filter": illinois()})
	if r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var sg api.Segment
	r.JSON(t, &sg)
	if sg.Name != "Illinois leads" || sg.Kind != api.Dynamic || len(sg.Filter.Groups) != 2 {
		t.Fatalf("created: %+v", sg)
	}
	operands := func(sg api.Segment) string {
		var out []string
		for _, g := range sg.Filter.Groups {
			for _, c := range g.Conditions {
				switch {
				case c.Value != nil:
					out = append(out, string(*c.Value))
				case c.Values != nil:
					b, _ := json.Marshal(*c.Values)
					out = append(out, string(b))
				default:
					out = append(out, "-")
				}
			}
		}
		return strings.Join(out, " ")
	}
	want := `"IL" 60 "customer" "2026-11-21T09:30:00.000Z" ["ann@example.com","bob@example.com"] ["gold","silver"] 10 "+15550102030" -`
	if got := operands(sg); got != want {
		t.Errorf("operands as stored:\n got %s\nwant %s", got, want)
	}
	var got api.Segment
	r = a.Do("GET", "/public/v1/segments/"+sg.SegmentId, key, nil)
	if r.JSON(t, &got); r.Status != 200 || operands(got) != want || got.Name != sg.Name {
		t.Errorf("get: %d %s", r.Status, r.Body)
	}
	if r := a.Do("POST", "/public/v1/segments", key, map[string]any{"name": "ILLINOIS LEADS", "kind": "snapshot", "filter": illinois()}); r.Status != 409 || r.Error(t).Code != "SegmentExists" {
		t.Errorf("a name taken in another case: %d %s", r.Status, r.Body)
	}
	r = a.Do("POST", "/public/v1/segments", key, map[string]any{"name": "VIPs", "kind": "snapshot", "filter": map[string]any{"groups": []any{
		map[string]any{"conditions": []any{map[string]any{"attribute": "tags", "operator": "contains", "value": "vip"}}}}}})
	var vips api.Segment
	if r.JSON(t, &vips); r.Status != 200 || vips.Kind != api.Snapshot {
		t.Fatalf("create a snapshot: %d %s", r.Status, r.Body)
	}
	var list api.SegmentList
	r = a.Do("GET", "/public/v1/segments", key, nil)
	if r.JSON(t, &list); r.Status != 200 || len(list.Segments) != 2 ||
		list.Segments[0].SegmentId != sg.SegmentId || list.Segments[1].SegmentId != vips.SegmentId {
		t.Errorf("list: %d %s", r.Status, r.Body)
	}

	if r := a.Do("PATCH", "/public/v1/segments/"+vips.SegmentId, key, map[string]any{"name": "illinois LEADS"}); r.Status != 409 || r.Error(t).Code != "SegmentExists" {
		t.Errorf("rename to a name taken: %d %s", r.Status, r.Body)
	}
	newFilter := map[string]any{"groups": []any{map[string]any{"conditions": []any{
		map[string]any{"attribute": "recordStatus", "operator": "eq", "value": "Marketing"}}}}}
	r = a.Do("PATCH", "/public/v1/segments/"+vips.SegmentId, key, map[string]any{"name": "Marketing VIPs", "filter": newFilter})
	var changed api.Segment
	if r.JSON(t, &changed); r.Status != 200 || changed.Name != "Marketing VIPs" || operands(changed) != `"Marketing"` ||
		changed.Kind != api.Snapshot || !changed.UpdatedAt.After(vips.UpdatedAt.Time) && changed.UpdatedAt != vips.UpdatedAt {
		t.Errorf("update: %d %s", r.Status, r.Body)
	}

	for _, path := range []string{"/public/v1/segments/" + sg.SegmentId, "/public/v1/segments/not-an-id"} { // by another account
		if r := a.Do("GET", path, otherKey, nil); r.Status != 404 || r.Error(t).Code != "SegmentDoesNotExist" {
			t.Errorf("GET %s by another account: %d %s", path, r.Status, r.Body)
		}
	}
	for _, spelling := range []string{"{" + sg.SegmentId + "}", "urn:uuid:" + sg.SegmentId, strings.ReplaceAll(sg.SegmentId, "-", "")} {
		if r := a.Do("GET", "/public/v1/segments/"+url.PathEscape(spelling), key, nil); r.Status != 404 {
			t.Errorf("the id spelled %s: %d %s, want 404 as every id of the API", spelling, r.Status, r.Body)
		}
	}
	if r := a.Do("DELETE", "/public/v1/segments/"+sg.SegmentId, otherKey, nil); r.Status != 404 {
		t.Errorf("delete by another account: %d %s", r.Status, r.Body)
	}
	if r := a.Do("DELETE", "/public/v1/segments/"+sg.SegmentId, key, nil); r.Status != 204 {
		t.Errorf("delete: %d %s", r.Status, r.Body)
	}
	if r := a.Do("GET", "/public/v1/segments/"+sg.SegmentId, key, nil); r.Status != 404 {
		t.Errorf("get a deleted segment: %d %s", r.Status, r.Body)
	}
	if r := a.Do("DELETE", "/public/v1/segments/"+sg.SegmentId, key, nil); r.Status != 404 {
		t.Errorf("delete a deleted segment: %d %s", r.Status, r.Body)
	}
	if n := a.Count(t, "SELECT count(*) FROM segments"); n != 1 {
		t.Errorf("%d segments stored, want 1", n)
	}
}

// A filter is refused with a 400 naming each condition's fault by its place.
func TestSegmentFilterRefused(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	segmentFields(t, a, key)
	cond := func(c map[string]any) map[string]any {
		return map[string]any{"groups": []any{map[string]any{"conditions": []any{
			map[string]any{"attribute": "name", "operator": "exists"}, c}}}}
	}
	many := func(groups, each int) map[string]any {
		var gs []any
		for range groups {
			var cs []any
			for range each {
				cs = append(cs, map[string]any{"attribute": "name", "operator": "exists"})
			}
			gs = append(gs, map[string]any{"conditions": cs})
		}
		return map[string]any{"groups": gs}
	}
	at := "body.filter.groups.0.conditions.1."
	for name, c := range map[string]struct {
		filter map[string]any
		field  string
	}{
		"unknown attribute":      {cond(map[string]any{"attribute": "shoeSize", "operator": "eq", "value": 1}), at + "attribute"},
		"unknown custom field":   {cond(map[string]any{"attribute": "customFields.nope", "operator": "exists"}), at + "attribute"},
		"operator of another":    {cond(map[string]any{"attribute": "tags", "operator": "gt", "value": "a"}), at + "operator"},
		"range on text":          {cond(map[string]any{"attribute": "name", "operator": "lt", "value": "m"}), at + "operator"},
		"no value":               {cond(map[string]any{"attribute": "leadScore", "operator": "gt"}), at + "value"},
		"a value for exists":     {cond(map[string]any{"attribute": "leadScore", "operator": "exists", "value": 1}), at + "value"},
		"value for in":           {cond(map[string]any{"attribute": "email", "operator": "in", "value": "a@example.com"}), at + "values"},
		"a text for a number":    {cond(map[string]any{"attribute": "leadScore", "operator": "gt", "value": "high"}), at + "value"},
		"not a time":             {cond(map[string]any{"attribute": "createdAt", "operator": "gt", "value": "yesterday"}), at + "value"},
		"not a status":           {cond(map[string]any{"attribute": "emailStatus", "operator": "eq", "value": "Bouncy"}), at + "value"},
		"not an option":          {cond(map[string]any{"attribute": "customFields.tier", "operator": "in", "values": []any{"gold", "bronze"}}), at + "values.1"},
		"not a phone":            {cond(map[string]any{"attribute": "customFields.mobile", "operator": "eq", "value": "call me"}), at + "value"},
		"an empty value":         {cond(map[string]any{"attribute": "name", "operator": "eq", "value": "  "}), at + "value"},
		"26 conditions":          {many(3, 9), "body.filter.groups"},
		"6 groups":               {many(6, 1), "body.filter.groups"},
		"11 conditions in group": {many(1, 11), "body.filter.groups.0.conditions"},
	} {
		r := a.Do("POST", "/public/v1/segments", key, map[string]any{"name": name, "filter": c.filter})
		if e := r.Error(t); r.Status != 400 || !hasFieldError(e, c.field) {
			t.Errorf("%s: %d %s, want 400 naming %s", name, r.Status, r.Body, c.field)
		}
	}
	if r := a.Do("POST", "/public/v1/segments", key, map[string]any{"name": strings.Repeat("n", 129), "filter": many(1, 1)}); r.Status != 400 {
		t.Errorf("a name of 129 characters: %d %s", r.Status, r.Body)
	}
	if n := a.Count(t, "SELECT count(*) FROM segments"); n != 0 {
		t.Errorf("%d segments stored by refused requests", n)
	}
}

// An account has at most 100 segments: the 101st is a 400 and is not stored.
func TestSegmentLimit(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	filter := map[string]any{"groups": []any{map[string]any{"conditions": []any{map[string]any{"attribute": "name", "operator": "exists"}}}}}
	for i := range 100 {
		if r := a.Do("POST", "/public/v1/segments", key, map[string]any{"name": fmt.Sprintf("s%d", i), "filter": filter}); r.Status != 200 {
			t.Fatalf("segment %d: %d %s", i, r.Status, r.Body)
		}
	}
	r := a.Do("POST", "/public/v1/segments", key, map[string]any{"name": "one more", "filter": filter})
	if e := r.Error(t); r.Status != 400 || !strings.Contains(e.Message, "at most 100 segments") {
		t.Errorf("the 101st: %d %s", r.Status, r.Body)
	}
	if n := a.Count(t, "SELECT count(*) FROM segments"); n != 100 {
		t.Errorf("%d segments stored, want 100", n)
	}
}

// include=segments lists the segments a contact is a member of, dynamic and snapshot: a
// change of the contact shows at once, a segment's new filter once it is backfilled (through
// another process, whose cache reads the account's segments again), a deleted segment at once.
func TestContactSegments(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	second := a.SecondProcess()
	segmentFields(t, a, key)
	save := func(name, kind string, conds ...map[string]any) string {
		t.Helper()
		var cs []any
		for _, c := range conds {
			cs = append(cs, c)
		}
		r := a.Do("POST", "/public/v1/segments", key, map[string]any{"name": name, "kind": kind,
			"filter": map[string]any{"groups": []any{map[string]any{"conditions": cs}}}})
		var sg api.Segment
		if r.JSON(t, &sg); r.Status != 200 || sg.Status != api.Backfilling {
			t.Fatalf("save %s: %d %s", name, r.Status, r.Body)
		}
		return sg.SegmentId
	}
	illinois := save("Illinois", "dynamic", map[string]any{"attribute": "address.state", "operator": "eq", "value": "IL"})
	gold := save("Gold", "dynamic", map[string]any{"attribute": "customFields.tier", "operator": "eq", "value": "gold"},
		map[string]any{"attribute": "tags", "operator": "notContains", "value": "customer"})
	a.Backfill(t)
	c := createContact(t, a, key, map[string]any{"email": "ann@example.com", "address": "1 Main St, Springfield, IL 62704",
		"customFields": map[string]any{"tier": "gold"}}).Contact
	everyone := save("Everyone, once", "snapshot", map[string]any{"attribute": "email", "operator": "exists"})
	segmentsOf := func(p *testkit.API) []string {
		t.Helper()
		var got api.Contact
		r := p.Do("GET", "/public/v1/contact?include=segments&contactId="+c.ContactId, key, nil)
		if r.JSON(t, &got); r.Status != 200 || got.Segments == nil {
			t.Fatalf("get with segments: %d %s", r.Status, r.Body)
		}
		slices.Sort(*got.Segments)
		return *got.Segments
	}
	check := func(what string, p *testkit.API, want ...string) {
		t.Helper()
		slices.Sort(want)
		if got := segmentsOf(p); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: %v, want %v", what, got, want)
		}
	}
	check("created, the snapshot not yet evaluated", a, illinois, gold)
	a.Backfill(t)
	check("the snapshot evaluated", second, illinois, gold, everyone)
	if r := a.Do("POST", "/public/v1/contact/"+c.ContactId+"/tags", key, map[string]any{"tags": []string{"Customer"}}); r.Status != 200 {
		t.Fatalf("tag: %d %s", r.Status, r.Body)
	}
	check("tagged customer", a, illinois, everyone)
	r := second.Do("PATCH", "/public/v1/segments/"+illinois, key, map[string]any{"filter": map[string]any{"groups": []any{
		map[string]any{"conditions": []any{map[string]any{"attribute": "address.state", "operator": "eq", "value": "WI"}}}}}})
	var edited api.Segment
	if r.JSON(t, &edited); r.Status != 200 || edited.Status != api.Backfilling {
		t.Fatalf("edit: %d %s", r.Status, r.Body)
	}
	check("Illinois moved to WI, not yet backfilled", a, illinois, everyone)
	if r := a.Do("DELETE", "/public/v1/contact/"+c.ContactId+"/tags", key, map[string]any{"tags": []string{"customer"}}); r.Status != 200 {
		t.Fatalf("untag: %d %s", r.Status, r.Body)
	}
	check("untagged, by the process that cached Illinois' old filter", a, gold, everyone)
	a.Backfill(t)
	check("backfilled", a, gold, everyone)
	if r := second.Do("DELETE", "/public/v1/segments/"+gold, key, nil); r.Status != 204 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	check("Gold deleted through the other process", a, everyone)
	if n := a.Count(t, "SELECT count(*) FROM segment_members WHERE segment_id = $1::uuid", gold); n != 0 {
		t.Errorf("%d members of the deleted segment left", n)
	}
	var plain api.Contact
	r = a.Do("GET", "/public/v1/contact?contactId="+c.ContactId, key, nil)
	if r.JSON(t, &plain); r.Status != 200 || plain.Segments != nil {
		t.Errorf("without include: %d %s", r.Status, r.Body)
	}
}

// saveVIPSegment saves a segment of the contacts tagged vip, which is then Backfilling.
func saveVIPSegment(t *testing.T, a *testkit.API, key string) api.Segment {
	t.Helper()
	var sg api.Segment
	r := a.Do("POST", "/public/v1/segments", key, map[string]any{"name": "VIP", "filter": map[string]any{"groups": []any{
		map[string]any{"conditions": []any{map[string]any{"attribute": "tags", "operator": "contains", "value": "vip"}}}}}})
	if r.JSON(t, &sg); r.Status != 200 || sg.Status != api.Backfilling {
		t.Fatalf("save: %d %s", r.Status, r.Body)
	}
	return sg
}

// A backfill never waits for a contact a write holds while it holds others: writes lock
// contacts in their own order (a batch by email, the page by id), and the two would deadlock,
// one of them failing with a 500. Here a write holds the later of two contacts, the backfill
// runs, and then the write takes the earlier one: the backfill has set the earlier one's
// membership and let it go, and goes on with the later one when the write commits.
func TestSegmentBackfillNeverWaitsForAWriteWhileHoldingContacts(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	var ids []string
	for _, email := range []string{"ann@example.com", "bob@example.com"} {
		ids = append(ids, createContact(t, a, key, map[string]any{"email": email, "tags": []string{"vip"}}).Contact.ContactId)
	}
	slices.Sort(ids)
	first, later := ids[0], ids[1]
	sg := saveVIPSegment(t, a, key)
	ctx := context.Background()
	write, err := a.Store.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer write.Rollback(ctx)
	lock := func(id string) error {
		_, err := write.Exec(ctx, "SELECT 1 FROM contacts WHERE contact_id = $1::uuid FOR UPDATE", id)
		return err
	}
	if err := lock(later); err != nil {
		t.Fatal(err)
	}
	backfilled := make(chan error, 1)
	go func() {
		for {
			did, err := a.Svc.Segments.BackfillOne(ctx, a.Svc.Contacts)
			if err != nil || !did {
				backfilled <- err
				return
			}
		}
	}()
	// the backfill either went past the first contact or waits for a lock (the old page,
	// holding the first contact while it waited for the later one)
	testkit.Eventually(t, "the backfill past the first contact, or waiting for a lock", func() bool {
		return a.Count(t, "SELECT count(*) FROM segments WHERE segment_id = $1::uuid AND backfill_after = $2::uuid", sg.SegmentId, first) == 1 ||
			a.LockWaiters(t) > 0
	})
	if err := lock(first); err != nil {
		t.Fatalf("the write taking the first contact: %v", err)
	}
	if err := write.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-backfilled; err != nil {
		t.Fatalf("backfill: %v", err)
	}
	if n := a.Count(t, "SELECT count(*) FROM segment_members WHERE segment_id = $1::uuid", sg.SegmentId); n != 2 {
		t.Errorf("%d members, want both contacts", n)
	}
	if n := a.Count(t, "SELECT count(*) FROM segments WHERE segment_id = $1::uuid AND status = 'ready'", sg.SegmentId); n != 1 {
		t.Error("the segment is not ready after its backfill")
	}
}

// An account's dynamic segments are priced together when one is saved (every write of a
// contact evaluates them all): 25 conditions of an in of 100 cities cost 1,300 lookups (each
// the fewer of its 100 values and a contact's 50 properties, and the 50 cities folded once),
// 76 of them fit the budget of segment.MaxAccountPrice and a 77th (100,100) is refused with
// 400 naming it. A snapshot segment is not priced (no write evaluates it); an edit to a
// cheaper filter makes room, and back is refused.
func TestSegmentsArePricedTogether(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	heavy := func(seed int) map[string]any {
		var groups []any
		for g := range segment.MaxGroups {
			var conds []any
			for c := range segment.MaxConditions / segment.MaxGroups {
				values := make([]any, segment.MaxValues)
				for v := range values {
					values[v] = fmt.Sprintf("t%d-%d-%d-%d", seed, g, c, v)
				}
				conds = append(conds, map[string]any{"attribute": "address.city", "operator": "in", "values": values})
			}
			groups = append(groups, map[string]any{"conditions": conds})
		}
		return map[string]any{"groups": groups}
	}
	save := func(i int, kind string) *testkit.Response {
		return a.Do("POST", "/public/v1/segments", key, map[string]any{"name": fmt.Sprintf("heavy %d", i), "kind": kind, "filter": heavy(i)})
	}
	for i := range 76 {
		if r := save(i, "dynamic"); r.Status != 200 {
			t.Fatalf("segment %d: %d %.300s", i, r.Status, r.Body)
		}
	}
	// segments saved before prices were are priced by the next save, and their prices stored
	// with it (not by a save that is refused: its transaction is undone)
	if _, err := a.Store.Pool.Exec(context.Background(), "UPDATE segments SET price = NULL WHERE name < 'heavy 5'"); err != nil {
		t.Fatal(err)
	}
	r := save(76, "dynamic")
	if e := r.Error(t); r.Status != 400 || !hasFieldError(e, "body.filter") || !strings.Contains(string(r.Body), fmt.Sprint(segment.MaxAccountPrice)) ||
		!strings.Contains(string(r.Body), "100100") {
		t.Fatalf("the 77th heavy segment: %d %.400s, want 400 at body.filter naming 100100 lookups and the budget", r.Status, r.Body)
	}
	if r := save(77, "snapshot"); r.Status != 200 {
		t.Fatalf("a heavy snapshot segment: %d %.300s", r.Status, r.Body)
	}
	var list api.SegmentList
	a.Do("GET", "/public/v1/segments", key, nil).JSON(t, &list)
	cheap := map[string]any{"groups": []any{map[string]any{"conditions": []any{map[string]any{"attribute": "tags", "operator": "contains", "value": "vip"}}}}}
	if r := a.Do("PATCH", "/public/v1/segments/"+list.Segments[0].SegmentId, key, map[string]any{"filter": cheap}); r.Status != 200 {
		t.Fatalf("a cheaper filter: %d %.300s", r.Status, r.Body)
	}
	if n := a.Count(t, "SELECT count(*) FROM segments WHERE price IS NULL AND kind = 'dynamic'"); n != 0 {
		t.Errorf("%d dynamic segments still without a price after a save priced them", n)
	}
	if r := save(76, "dynamic"); r.Status != 200 {
		t.Errorf("the 77th heavy segment after an edit made room: %d %.300s", r.Status, r.Body)
	}
	if r := a.Do("PATCH", "/public/v1/segments/"+list.Segments[0].SegmentId, key, map[string]any{"filter": heavy(99)}); r.Status != 400 {
		t.Errorf("the edit back to a heavy filter: %d %.300s, want 400", r.Status, r.Body)
	}
}
