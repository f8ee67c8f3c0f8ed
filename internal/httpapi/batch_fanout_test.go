package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/config"

	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/segment"
	"github.com/contactd/contactd/internal/testkit"
)

// A batch writes its items a page (contact.BatchPage) a transaction, so that one transaction
// moves its contacts into or out of segments at most segment.MaxChangesPerWrite times: each
// move is a membership row, an event and a delivery to each subscription of its type. A batch
// of the most items that all enter every segment of the most an account may have is written
// whole, every change with its events and deliveries, in as many transactions as it has
// pages.
func TestBatchSegmentChangesAreWrittenInPages(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	account, key := a.Account("acme")
	const segments = segment.MaxPerAccount
	for i := range segments {
		saveSegment(t, a, key, fmt.Sprintf("vip %d", i), "dynamic", cond("tags", "contains", "vip"))
	}
	for range 3 {
		if r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": "https://h.example.com", "eventType": "ContactEnteredSegment"}); r.Status != 200 {
			t.Fatalf("subscribe: %d %s", r.Status, r.Body)
		}
	}
	a.Backfill(t)
	if contact.BatchPage*segments > segment.MaxChangesPerWrite {
		t.Fatalf("a page of %d items can move %d memberships, over a write's %d", contact.BatchPage, contact.BatchPage*segments, segment.MaxChangesPerWrite)
	}
	items := func(n int, tags ...string) []any {
		out := make([]any, n)
		for i := range out {
			item := map[string]any{"email": fmt.Sprintf("p%d@example.com", i)}
			if len(tags) > 0 {
				item["tags"] = tags
			}
			out[i] = item
		}
		return out
	}
	written := func(mode string, n int) {
		t.Helper()
		for what, q := range map[string]string{
			"memberships": `SELECT count(*) FROM segment_members`,
			"events":      `SELECT count(*) FROM webhook_events WHERE event_type = 'ContactEnteredSegment'`,
			"deliveries":  `SELECT count(*) FROM webhook_deliveries d JOIN webhook_events e USING (account_id, event_id) WHERE e.event_type = 'ContactEnteredSegment'`,
		} {
			want := n * segments
			if what == "deliveries" {
				want *= 3
			}
			if got := a.Count(t, q); got != want {
				t.Errorf("%s of %d: %s %d, want %d", mode, n, what, got, want)
			}
		}
		pages := (n + contact.BatchPage - 1) / contact.BatchPage
		if got := a.Count(t, `SELECT count(DISTINCT xid) FROM webhook_events WHERE account_id = $1 AND event_type = 'ContactEnteredSegment'`, account); got != pages {
			t.Errorf("%s of %d: its changes written by %d transactions, want %d (a page each)", mode, n, got, pages)
		}
	}
	const most = 1000 // the most items a batch takes
	batch(t, a, key, "create", items(most, "vip")...)
	written("create", most)

	// upserts: the contacts exist outside every segment, and the batch puts them all in
	if _, err := a.Store.Pool.Exec(context.Background(), `DELETE FROM webhook_deliveries; DELETE FROM webhook_events; DELETE FROM segment_members;
		UPDATE contacts SET tags = '{}'`); err != nil {
		t.Fatal(err)
	}
	batch(t, a, key, "upsert", items(most, "vip")...)
	written("upsert", most)
}

// A page that cannot be written fails its items alone: the pages before it stand, and its
// items and those after it are failed with 503, to be sent again. The test holds a contact of
// the second page, so its transaction waits once the first page has committed, and ends that
// transaction's session (as a database restart would).
func TestABatchPageThatFailsFailsItsItemsAlone(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	account, key := a.Account("acme")
	held := createContact(t, a, key, map[string]any{"email": "held@example.com", "name": "Before"}).Contact.ContactId
	items := make([]any, contact.BatchPage+50)
	for i := range items {
		items[i] = map[string]any{"email": fmt.Sprintf("p%d@example.com", i), "name": "New"}
	}
	items[contact.BatchPage+10] = map[string]any{"email": "held@example.com", "name": "After"}
	hold := holdContacts(t, a, account, held)
	answered := make(chan []api.BatchContactItemResult, 1)
	go func() { answered <- batch(t, a, key, "upsert", items...) }()
	testkit.Eventually(t, "the second page waiting for the held contact", func() bool { return a.LockWaiters(t) == 1 })
	if _, err := a.Store.Pool.Exec(context.Background(), `SELECT pg_terminate_backend(s.pid) FROM pg_locks l JOIN pg_stat_activity s USING (pid)
		WHERE NOT l.granted AND s.datname = current_database()`); err != nil {
		t.Fatal(err)
	}
	results := <-answered
	if err := hold.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, r := range results {
		switch {
		case i < contact.BatchPage && r.Status != api.BatchContactItemResultStatusCreated:
			t.Errorf("item %d of the first page: %s, want created", i, r.Status)
		case i >= contact.BatchPage && (r.Status != api.BatchContactItemResultStatusFailed || r.Error == nil || r.Error.Code != "ServiceUnavailable"):
			t.Errorf("item %d of the failed page: %s %+v, want failed ServiceUnavailable", i, r.Status, r.Error)
		}
	}
	if n := a.Count(t, `SELECT count(*) FROM contacts WHERE account_id = $1`, account); n != 1+contact.BatchPage {
		t.Errorf("%d contacts, want the held one and the first page's %d", n, contact.BatchPage)
	}
	if c := getContact(t, a, key, held); c.Name == nil || *c.Name != "Before" {
		t.Errorf("the held contact's name: %v, want Before (its page failed)", c.Name)
	}
}

// An account runs at most CONTACTD_BATCHES_PER_ACCOUNT batches at once: the next answers 429
// with Retry-After, before its body is read, while another account's batch runs. The test
// holds a contact that the account's running batches upsert, so they stay in flight.
func TestAnAccountRunsItsBatchesAFewAtATime(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, func(c *config.Config) { c.BatchesPerAccount = 2 })
	account, key := a.Account("acme")
	_, otherKey := a.Account("other")
	held := createContact(t, a, key, map[string]any{"email": "held@example.com"}).Contact.ContactId
	hold := holdContacts(t, a, account, held)
	upsert := map[string]any{"mode": "upsert", "contacts": []any{map[string]any{"email": "held@example.com", "name": "Held"}}}
	answers := make(chan *testkit.Response, 2)
	for range 2 {
		go func() { answers <- a.Do("POST", "/public/v1/contacts/batch", key, upsert) }()
	}
	testkit.Eventually(t, "the account's two batches waiting for the held contact", func() bool { return a.LockWaiters(t) == 2 })
	r := a.Do("POST", "/public/v1/contacts/batch", key, map[string]any{"contacts": []any{map[string]any{"email": "third@example.com"}}})
	if r.Status != 429 || r.Header.Get("Retry-After") != "1" || !strings.Contains(string(r.Body), "runs 2 batches at once") {
		t.Errorf("a third batch of the account: %d %s (Retry-After %q), want 429 naming the bound", r.Status, r.Body, r.Header.Get("Retry-After"))
	}
	if r := a.Do("POST", "/public/v1/contacts/batch", otherKey, map[string]any{"contacts": []any{map[string]any{"email": "other@example.com"}}}); r.Status != 200 {
		t.Errorf("another account's batch beside them: %d %s", r.Status, r.Body)
	}
	if err := hold.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if r := <-answers; r.Status != 200 {
			t.Errorf("a running batch: %d %s", r.Status, r.Body)
		}
	}
	batch(t, a, key, "create", map[string]any{"email": "third@example.com"}) // its slots are free again
	if n := a.Count(t, `SELECT count(*) FROM contacts WHERE account_id = $1`, account); n != 2 {
		t.Errorf("%d contacts of the account, want the held one and the third", n)
	}
}
