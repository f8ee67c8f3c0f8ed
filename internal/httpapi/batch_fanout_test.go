package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/contactd/contactd/internal/segment"
	"github.com/contactd/contactd/internal/testkit"
)

// A batch moves its contacts into or out of segments at most segment.MaxChangesPerWrite
// times: each move is a membership row, an event and a delivery to each subscription of its
// type, all in the batch's transaction. One over is refused whole with 400, before anything
// is written; at the bound, every change is written with its events and deliveries.
func TestBatchSegmentChangesAreBounded(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	const segments = 100
	for i := range segments {
		saveSegment(t, a, key, fmt.Sprintf("vip %d", i), "dynamic", cond("tags", "contains", "vip"))
	}
	for range 3 {
		if r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": "https://h.example.com", "eventType": "ContactEnteredSegment"}); r.Status != 200 {
			t.Fatalf("subscribe: %d %s", r.Status, r.Body)
		}
	}
	a.Backfill(t)
	perBatch := segment.MaxChangesPerWrite / segments
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
	refused := func(mode string, items []any) {
		t.Helper()
		r := a.Do("POST", "/public/v1/contacts/batch", key, map[string]any{"mode": mode, "contacts": items})
		want := fmt.Sprintf("at most %d times (this one %d)", segment.MaxChangesPerWrite, len(items)*segments)
		if r.Status != 400 || !strings.Contains(string(r.Body), `"reason":"maxSegmentChanges"`) || !strings.Contains(string(r.Body), want) {
			t.Fatalf("%s of %d: %d %.300s", mode, len(items), r.Status, r.Body)
		}
	}

	refused("create", items(perBatch+1, "vip"))
	if n := a.Count(t, `SELECT count(*) FROM contacts`); n != 0 {
		t.Fatalf("a refused batch left %d contacts", n)
	}
	// upserts: the contacts exist outside every segment, and the batch would put them all in
	batch(t, a, key, "create", items(perBatch+1)...)
	refused("upsert", items(perBatch+1, "vip"))
	if n := a.Count(t, `SELECT count(*) FROM contacts WHERE tags <> '{}'`) + a.Count(t, `SELECT count(*) FROM segment_members`); n != 0 {
		t.Fatalf("a refused upsert left %d tagged contacts and memberships", n)
	}

	batch(t, a, key, "upsert", items(perBatch, "vip")...)
	for what, q := range map[string]string{
		"memberships": `SELECT count(*) FROM segment_members`,
		"events":      `SELECT count(*) FROM webhook_events WHERE event_type = 'ContactEnteredSegment'`,
		"deliveries":  `SELECT count(*) FROM webhook_deliveries d JOIN webhook_events e USING (account_id, event_id) WHERE e.event_type = 'ContactEnteredSegment'`,
	} {
		want := segment.MaxChangesPerWrite
		if what == "deliveries" {
			want *= 3
		}
		if n := a.Count(t, q); n != want {
			t.Errorf("%s: %d, want %d", what, n, want)
		}
	}
}
