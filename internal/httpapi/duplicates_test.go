package httpapi_test

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/testkit"
)

func duplicatesPage(t *testing.T, a *testkit.API, key, query string) api.DuplicateList {
	t.Helper()
	r := a.Do("GET", "/public/v1/contacts/duplicates?"+query, key, nil)
	if r.Status != 200 {
		t.Fatalf("duplicates?%s: %d %s", query, r.Status, r.Body)
	}
	var l api.DuplicateList
	r.JSON(t, &l)
	return l
}

// groupsOf renders groups as "by match size ids..." lines, ids by their index in names.
func groupsOf(groups []api.DuplicateGroup, names map[string]string) []string {
	var out []string
	for _, g := range groups {
		var who []string
		for _, id := range g.ContactIds {
			who = append(who, names[id])
		}
		slices.Sort(who)
		out = append(out, fmt.Sprintf("%s %s %d %s", g.By, g.Match, g.Size, strings.Join(who, ",")))
	}
	return out
}

func TestFindDuplicates(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	_, otherKey := a.Account("other")
	names := map[string]string{}
	add := func(name string, body map[string]any) string {
		id := createContact(t, a, key, body).Contact.ContactId
		names[id] = name
		return id
	}
	add("p1", map[string]any{"email": "p1@example.com", "phone": "+1 (555) 010-2030"})
	add("p2", map[string]any{"email": "p2@example.com", "phone": "555.010.2030"})
	add("p3", map[string]any{"email": "p3@example.com", "phone": "+15550102030"})
	add("p4", map[string]any{"email": "p4@example.com", "phone": "555-010-9999"})
	add("g1", map[string]any{"email": "Jane.Doe+news@gmail.com"})
	add("g2", map[string]any{"email": "janedoe@googlemail.com"})
	add("g3", map[string]any{"email": "jane.doe@example.com"})
	add("o1", map[string]any{"email": "bob+x@outlook.com"})
	add("o2", map[string]any{"email": "bob@outlook.com"})
	add("o3", map[string]any{"email": "b.ob@outlook.com"}) // dots count at Outlook
	add("n1", map[string]any{"email": "n1@example.com", "name": "Sam Lee", "address": "500 E Capitol Ave, Springfield, IL 62701"})
	add("n2", map[string]any{"email": "n2@example.com", "name": " sam LEE ", "address": "500 East Capitol Avenue, Springfield, IL 62701"})
	add("n3", map[string]any{"email": "n3@example.com", "name": "Other", "address": "500 E Capitol Ave, Springfield, IL 62701"})
	add("n4", map[string]any{"email": "n4@example.com", "name": "Sam Lee", "address": "123 N Main St Apt 4, Springfield, IL 62704"})
	// another account's contact with the same phone, email and name at the address is no match
	createContact(t, a, otherKey, map[string]any{"email": "janedoe@gmail.com", "phone": "555-010-2030", "name": "Sam Lee",
		"address": "500 E Capitol Ave, Springfield, IL 62701"})

	// 70 addresses two contacts share under different names, before the one above in order:
	// more than a page's first chunk of shared addresses (64), none a group
	var items []any
	for k := range 70 {
		for _, who := range []string{"Ann", "Bo"} {
			items = append(items, map[string]any{"email": fmt.Sprintf("%s%d@example.com", who, k), "name": who,
				"address": fmt.Sprintf("1%02d Elm St, Springfield, IL 62701", k)})
		}
	}
	for _, r := range batch(t, a, key, "create", items...) {
		if r.Status != "created" {
			t.Fatalf("batch: %+v", r)
		}
	}

	want := []string{
		"phone 5550102030 3 p1,p2,p3",
		"email bob@outlook.com 2 o1,o2",
		"email janedoe@gmail.com 2 g1,g2",
	}
	all := groupsOf(duplicatesPage(t, a, key, "").Groups, names)
	if len(all) != 4 || !slices.Equal(all[:3], want) || !strings.HasPrefix(all[3], "nameAndAddress sam lee @ ") || !strings.HasSuffix(all[3], " 2 n1,n2") {
		t.Fatalf("duplicates:\n%s", strings.Join(all, "\n"))
	}
	if got := groupsOf(duplicatesPage(t, a, key, "by=nameAndAddress&limit=1").Groups, names); !slices.Equal(got, all[3:]) {
		t.Errorf("by=nameAndAddress, limit 1: %v", got)
	}
	if got := groupsOf(duplicatesPage(t, a, key, "by=email").Groups, names); !slices.Equal(got, want[1:]) {
		t.Errorf("by=email: %v", got)
	}

	// pages of one group and of two walk the same groups, each once, across the rules
	for _, limit := range []int{1, 2} {
		var walked []string
		cursor := ""
		for pages := 0; ; pages++ {
			q := fmt.Sprintf("limit=%d", limit)
			if cursor != "" {
				q += "&cursor=" + url.QueryEscape(cursor)
			}
			l := duplicatesPage(t, a, key, q)
			walked = append(walked, groupsOf(l.Groups, names)...)
			if l.NextCursor == nil {
				break
			}
			if pages > 10 || len(l.Groups) != limit {
				t.Fatalf("limit %d: page %d has %d groups and a next cursor", limit, pages, len(l.Groups))
			}
			cursor = *l.NextCursor
		}
		if !slices.Equal(walked, all) {
			t.Errorf("limit %d walked:\n%s", limit, strings.Join(walked, "\n"))
		}
	}

	first := duplicatesPage(t, a, key, "by=phone&limit=1")
	if first.NextCursor != nil {
		t.Errorf("the only phone group has a next cursor")
	}
	mid := duplicatesPage(t, a, key, "limit=1")
	for name, q := range map[string]string{
		"not base64":   "cursor=!!!",
		"another rule": "by=nameAndAddress&cursor=" + url.QueryEscape(*mid.NextCursor),
		"not a cursor": "cursor=" + url.QueryEscape("eyJ4IjoxfQ"),
		"limit over":   "limit=101",
		"unknown rule": "by=name",
	} {
		if r := a.Do("GET", "/public/v1/contacts/duplicates?"+q, key, nil); r.Status != 400 || r.Error(t).Code != api.ErrorCodeInvalidRequest {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}

	// merged, a group is gone
	var ids []string
	for id, n := range names {
		if n == "p1" || n == "p2" || n == "p3" {
			ids = append(ids, id)
		}
	}
	if _, r := merge(t, a, key, map[string]any{"primaryContactId": ids[0], "duplicateContactIds": ids[1:]}); r.Status != 200 {
		t.Fatalf("merge: %d %s", r.Status, r.Body)
	}
	if l := duplicatesPage(t, a, key, "by=phone"); len(l.Groups) != 0 {
		t.Errorf("after the merge: %v", groupsOf(l.Groups, names))
	}
}
