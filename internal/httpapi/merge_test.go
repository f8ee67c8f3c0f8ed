package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/testkit"
)

func merge(t *testing.T, a *testkit.API, key string, body map[string]any) (api.MergeContactsResult, *testkit.Response) {
	t.Helper()
	r := a.Do("POST", "/public/v1/contacts/merge", key, body)
	var out api.MergeContactsResult
	if r.Status == http.StatusOK {
		r.JSON(t, &out)
	}
	return out, r
}

func TestMergeContacts(t *testing.T) {
	t.Parallel()
	a, account, key := deliveringAPI(t)
	merges := listen(t, a, key, "ContactsMerged")
	primary := createContact(t, a, key, map[string]any{"email": "p@example.com", "tags": []string{"a"},
		"crmFields": map[string]any{"name": "Salesforce"}, "address": "123 N Main St Apt 4, Springfield, IL 62704"}).Contact
	dup1 := createContact(t, a, key, map[string]any{"email": "p.dup@example.com", "name": "Dee", "phone": "555-010-0101",
		"tags": []string{"A", "b"}, "crmFields": map[string]any{"name": "HubSpot", "stage": "Won"},
		"address": "123 N Main St Apt 4, Springfield, IL 62704"}).Contact
	dup2 := createContact(t, a, key, map[string]any{"email": "p+2@example.com", "name": "Second", "assignedUserEmailId": "agent@example.com",
		"tags": []string{"c"}, "address": "500 E Capitol Ave, Springfield, IL 62701"}).Contact
	activity(t, a, key, primary.ContactId, map[string]any{"type": "FormSubmission", "activityId": "f1"})
	activity(t, a, key, dup1.ContactId, map[string]any{"type": "EmailOpen", "activityId": "o1"})
	activity(t, a, key, dup1.ContactId, map[string]any{"type": "EmailOpen", "activityId": "o2"})
	activity(t, a, key, dup2.ContactId, map[string]any{"type": "EmailOpen", "activityId": "f1"}) // the primary's activity id
	activity(t, a, key, dup2.ContactId, map[string]any{"type": "Unsubscribe"})
	body := map[string]any{"primaryContactId": primary.ContactId, "duplicateContactIds": []string{dup1.ContactId, dup2.ContactId}}

	check := func(name string, m api.MergeContactsResult, dryRun bool) {
		t.Helper()
		c := m.Contact
		if m.DryRun != dryRun || !slices.Equal(m.MergedContactIds, []string{dup1.ContactId, dup2.ContactId}) ||
			c.ContactId != primary.ContactId || c.Email != "p@example.com" || c.MergedInto != nil {
			t.Fatalf("%s: %+v", name, m)
		}
		var addresses []string
		for _, p := range c.Properties {
			addresses = append(addresses, p.Address.StreetAddress)
		}
		slices.Sort(addresses)
		if *c.Name != "Dee" || *c.Phone != "555-010-0101" || *c.AssignedUserEmailId != "agent@example.com" ||
			strings.Join(c.Tags, ",") != "a,b,c" || *c.CrmFields.Name != "Salesforce" || *c.CrmFields.Stage != "Won" ||
			c.RecordStatus != "NonMarketing" || c.Engagement.NumOfFormSubmissions != 1 || c.Engagement.NumOfEmailOpens != 3 ||
			strings.Join(addresses, "|") != "123 N Main St|500 E Capitol Ave" || c.LeadScore == 0 {
			t.Errorf("%s: merged contact %s", name, mustJSON(c))
		}
	}

	body["dryRun"] = true
	dry, r := merge(t, a, key, body)
	if r.Status != 200 {
		t.Fatalf("dry run: %d %s", r.Status, r.Body)
	}
	check("dry run", dry, true)
	if c := getContact(t, a, key, dup1.ContactId); c.ContactId != dup1.ContactId || c.MergedInto != nil {
		t.Errorf("a dry run merged: %+v", c)
	}
	if got := countRows(t, a, "SELECT count(*) FROM webhook_events WHERE account_id = $1 AND event_type = 'ContactsMerged'", account); got != 0 {
		t.Errorf("a dry run emitted %d ContactsMerged", got)
	}

	body["dryRun"] = false
	done, r := merge(t, a, key, body)
	if r.Status != 200 {
		t.Fatalf("merge: %d %s", r.Status, r.Body)
	}
	check("merge", done, false)
	if got := countRows(t, a, "SELECT count(*) FROM activities WHERE account_id = $1 AND contact_id = $2", account, primary.ContactId); got != 5-1 {
		t.Errorf("the primary has %d activities, want 4 (all five, f1 once)", got)
	}

	ev := nextEvent(t, merges)
	info := ev.Data.ContactsMergedInfo
	if ev.EventType != "ContactsMerged" || ev.Data.ContactInfo.ContactId != primary.ContactId || info == nil ||
		!slices.Equal(info.MergedContactIds, []string{dup1.ContactId, dup2.ContactId}) ||
		fmt.Sprint(info.ChangedFields) != "[name phone assignedUserEmailId recordStatus crmFields]" ||
		strings.Join(info.TagsAdded, ",") != "b,c" || info.Previous.Name != "" || info.Current.Name != "Dee" ||
		*info.Current.CrmFields.Stage != "Won" || *info.Previous.RecordStatus != "Marketing" {
		t.Errorf("ContactsMerged = %s", mustJSON(ev))
	}
	a.DeliveriesSettled(t)
	merges.None(t) // one event for the merge
	if got := countRows(t, a, "SELECT count(*) FROM webhook_events WHERE account_id = $1 AND event_type = 'ContactsMerged'", account); got != 1 {
		t.Errorf("%d ContactsMerged events, want 1", got)
	}
	// the primary became NonMarketing: receivers of ContactUnsubscribed hear of it
	if got := countRows(t, a, `SELECT count(*) FROM webhook_events WHERE account_id = $1 AND contact_id = $2
		AND event_type = 'ContactUnsubscribed' AND payload->'data'->'contactUnsubscribedInfo'->>'source' = 'Merge'`, account, primary.ContactId); got != 1 {
		t.Errorf("%d ContactUnsubscribed (Merge) events about the primary, want 1", got)
	}

	// a duplicate's id answers for the primary: GET with a hint, anything else a 404 naming it
	if c := getContact(t, a, key, dup1.ContactId); c.ContactId != primary.ContactId || c.MergedInto == nil || *c.MergedInto != primary.ContactId {
		t.Errorf("GET a merged id: %+v", c)
	}
	for _, r := range []*testkit.Response{
		a.Do("PATCH", "/public/v1/contact/"+dup1.ContactId, key, map[string]any{"name": "x"}),
		a.Do("POST", "/public/v1/contact/"+dup2.ContactId+"/tags", key, map[string]any{"tags": []string{"x"}}),
		a.Do("DELETE", "/public/v1/contact/"+dup2.ContactId, key, nil),
	} {
		if e := r.Error(t); r.Status != 404 || e.Code != api.ErrorCodeContactDoesNotExist || e.Data == nil || *e.Data.ContactId != primary.ContactId {
			t.Errorf("a write to a merged id: %d %s", r.Status, r.Body)
		}
	}
	if r := a.Do("GET", consentPath(t, dup1.ProofOfConsentUrl), "", nil); r.Status != 200 || !strings.Contains(string(r.Body), dup1.ContactId) {
		t.Errorf("a merged duplicate's consent record: %d", r.Status)
	}
	if c := createContact(t, a, key, map[string]any{"email": "p.dup@example.com"}); c.Contact.ContactId == dup1.ContactId {
		t.Errorf("a merged duplicate's email is not free: %+v", c)
	}

	// an id already merged is not found, naming it; bad lists are 400
	third := createContact(t, a, key, map[string]any{"email": "third@example.com"}).Contact.ContactId
	if _, r := merge(t, a, key, map[string]any{"primaryContactId": third, "duplicateContactIds": []string{dup1.ContactId}}); r.Status != 404 ||
		r.Error(t).Code != api.ErrorCodeContactDoesNotExist || *r.Error(t).Data.ContactId != dup1.ContactId {
		t.Errorf("merging a merged id: %d %s", r.Status, r.Body)
	}
	eleven := make([]string, 11)
	for i := range eleven {
		eleven[i] = fmt.Sprintf("019350b6-5d7e-7c3a-9f1e-2b4c6d8e0a%02d", i)
	}
	for name, tc := range map[string]struct {
		dups  []string
		field string
	}{
		"itself":     {[]string{primary.ContactId}, "body.duplicateContactIds.0"},
		"twice":      {[]string{third, third}, "body.duplicateContactIds.1"},
		"over 10":    {eleven, "body.duplicateContactIds"},
		"none given": {[]string{}, "body.duplicateContactIds"},
	} {
		_, r := merge(t, a, key, map[string]any{"primaryContactId": primary.ContactId, "duplicateContactIds": tc.dups})
		if e := r.Error(t); r.Status != 400 || e.Data == nil || e.Data.Errors == nil || (*e.Data.Errors)[0].Field != tc.field {
			t.Errorf("%s: %d %s, want 400 on %s", name, r.Status, r.Body, tc.field)
		}
	}

	// merged again, the primary carries its merged ids along; erased, they go with it
	if _, r := merge(t, a, key, map[string]any{"primaryContactId": third, "duplicateContactIds": []string{primary.ContactId}}); r.Status != 200 {
		t.Fatalf("merge the primary: %d %s", r.Status, r.Body)
	}
	if c := getContact(t, a, key, dup2.ContactId); c.ContactId != third || *c.MergedInto != third {
		t.Errorf("GET an id merged twice: %+v", c)
	}
	if r := a.Do("POST", "/public/v1/contact/"+third+"/erase", key, nil); r.Status != 200 {
		t.Fatalf("erase: %d %s", r.Status, r.Body)
	}
	if r := a.Do("GET", "/public/v1/contact?contactId="+dup2.ContactId, key, nil); r.Status != 404 || r.Error(t).Data != nil {
		t.Errorf("GET a merged id of an erased contact: %d %s", r.Status, r.Body)
	}
	if r := a.Do("GET", consentPath(t, dup1.ProofOfConsentUrl), "", nil); r.Status != 404 {
		t.Errorf("the consent record of an erased contact's duplicate: %d", r.Status)
	}
	if got := countRows(t, a, "SELECT count(*) FROM contact_merges WHERE account_id = $1", account); got != 0 {
		t.Errorf("%d merges kept after the erasure", got)
	}
	if got := countRows(t, a, "SELECT count(*) FROM webhook_events WHERE account_id = $1 AND contact_id = $2 AND payload::text LIKE '%p.dup@example.com%'",
		account, dup1.ContactId); got != 0 {
		t.Errorf("%d events about a merged duplicate left after the erasure", got)
	}
}

// TestMergeRacesWrites merges while writers add tags and activities to every contact of the
// merge: each write acknowledged is in the merged contact, and each refused one was refused
// because its contact had been merged (a 404 naming the primary). The overlap is proven, not
// hoped for: the test's open transaction holds the four contacts until every writer's first
// write (an activity, which locks its contact) and the merge all wait for them, and only then
// lets go; the writers then go on until each has written twice after the merge answered.
func TestMergeRacesWrites(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	account, key := a.Account("acme")
	ids := make([]string, 4)
	for i := range ids {
		ids[i] = createContact(t, a, key, map[string]any{"email": fmt.Sprintf("race%d@example.com", i)}).Contact.ContactId
	}
	held := holdContacts(t, a, account, ids...)
	const writers, each = 8, 12
	var (
		mu        sync.Mutex
		tags      []string
		opens     int
		refused   int
		wg        sync.WaitGroup
		mergeDone = make(chan struct{})
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// consecutive writes go to different contacts, so of the two after the merge one
			// goes to a duplicate
			afterMerge := 0
			for i := 0; i < each || afterMerge < 2; i++ {
				select {
				case <-mergeDone:
					afterMerge++
				default:
				}
				id := ids[(w+i)%len(ids)]
				var r *testkit.Response
				tag := fmt.Sprintf("w%d-%d", w, i)
				activity := i%2 == 0 // the first write of each is an activity: it waits for its held contact
				if activity {
					r = a.Do("POST", "/public/v1/contact/"+id+"/activity", key, map[string]any{"type": "EmailOpen", "activityId": tag})
				} else {
					r = a.Do("POST", "/public/v1/contact/"+id+"/tags", key, map[string]any{"tags": []string{tag}})
				}
				mu.Lock()
				switch {
				case r.Status == 200 && !activity:
					tags = append(tags, tag)
				case r.Status == 200:
					opens++
				case r.Status == 404 && id != ids[0] && strings.Contains(string(r.Body), `"contactId":"`+ids[0]+`"`):
					refused++
				default:
					t.Errorf("write to %s: %d %s", id, r.Status, r.Body)
				}
				mu.Unlock()
			}
		}()
	}
	testkit.Eventually(t, fmt.Sprintf("the %d writers' first writes waiting for the held contacts", writers),
		func() bool { return a.LockWaiters(t) == writers })
	merged := make(chan *testkit.Response, 1)
	go func() {
		_, r := merge(t, a, key, map[string]any{"primaryContactId": ids[0], "duplicateContactIds": ids[1:]})
		merged <- r
	}()
	testkit.Eventually(t, "the merge waiting for the held contacts beside them", func() bool { return a.LockWaiters(t) == writers+1 })
	if err := held.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := <-merged; r.Status != 200 {
		t.Fatalf("merge: %d %s", r.Status, r.Body)
	}
	close(mergeDone)
	wg.Wait()

	c := getContact(t, a, key, ids[0])
	for _, tag := range tags {
		if !slices.Contains(c.Tags, tag) {
			t.Errorf("acknowledged tag %s is not on the merged contact", tag)
		}
	}
	if len(c.Tags) != len(tags) || c.Engagement.NumOfEmailOpens != opens {
		t.Errorf("merged contact: %d tags, %d opens; acknowledged: %d tags, %d opens", len(c.Tags), c.Engagement.NumOfEmailOpens, len(tags), opens)
	}
	if got := countRows(t, a, "SELECT count(*) FROM activities WHERE account_id = $1 AND contact_id = $2", account, ids[0]); got != opens {
		t.Errorf("%d activity rows on the merged contact, %d acknowledged", got, opens)
	}
	if refused == 0 {
		t.Errorf("no write came after the merge to a merged id")
	}
	if got := countRows(t, a, "SELECT count(*) FROM contacts WHERE account_id = $1", account); got != 1 {
		t.Errorf("%d contacts after the merge, want 1", got)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func consentPath(t *testing.T, proofOfConsentURL string) string {
	t.Helper()
	u, err := url.Parse(proofOfConsentURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path
}

// A merge and a batch upsert of the same two contacts, beside each other, both succeed: a
// merge locks its contacts in id order, and a batch upsert takes its contacts in that order
// too (by email, the order it updates them in, or with the ones matched on a unique field
// after the others, they could deadlock, one answered 500). A third transaction holds the
// first contact by id until both requests wait for it, the merge first; the batch names the
// later contact by id first, by email, and the first by email or by its field's value.
func TestMergeBesideABatchUpsertOfTheSameContacts(t *testing.T) {
	t.Parallel()
	for _, byField := range []bool{false, true} {
		t.Run(fmt.Sprintf("matched on a field %v", byField), func(t *testing.T) {
			t.Parallel()
			a := testkit.NewAPI(t)
			account, key := a.Account("acme")
			defineField(t, a, key, map[string]any{"key": "crm", "label": "CRM id", "type": "text", "unique": true})
			// ids are time-ordered: bob's is the lower, ann's email the lower
			bob := createContact(t, a, key, map[string]any{"email": "bob@example.com", "customFields": map[string]any{"crm": "B"}}).Contact.ContactId
			ann := createContact(t, a, key, map[string]any{"email": "ann@example.com"}).Contact.ContactId
			if bob >= ann {
				t.Fatalf("ids not in creation order: %s, %s", bob, ann)
			}
			batch := map[string]any{"mode": "upsert", "contacts": []any{
				map[string]any{"email": "ann@example.com", "name": "Ann"}, map[string]any{"email": "bob@example.com", "name": "Bob"}}}
			if byField {
				batch = map[string]any{"mode": "upsert", "matchField": "crm", "contacts": []any{
					map[string]any{"email": "ann@example.com", "name": "Ann"},
					map[string]any{"email": "robert@example.com", "name": "Bob", "customFields": map[string]any{"crm": "B"}}}}
			}
			held := holdContacts(t, a, account, bob)
			waiting := func(n int) func() bool {
				return func() bool {
					return a.LockWaiters(t) >= n
				}
			}
			answers := make(chan string, 2)
			go func() {
				r := a.Do("POST", "/public/v1/contacts/merge", key, map[string]any{"primaryContactId": bob, "duplicateContactIds": []string{ann}})
				answers <- fmt.Sprintf("merge: %d %s", r.Status, r.Body)
			}()
			testkit.Eventually(t, "the merge waiting for the first contact", waiting(1))
			go func() {
				r := a.Do("POST", "/public/v1/contacts/batch", key, batch)
				answers <- fmt.Sprintf("batch: %d %s", r.Status, r.Body)
			}()
			testkit.Eventually(t, "the batch waiting too", waiting(2))
			if err := held.Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if got := <-answers; !strings.Contains(got, ": 200 ") {
					t.Error(got)
				}
			}
		})
	}
}
