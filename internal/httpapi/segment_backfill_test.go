package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/segment"
	"github.com/contactd/contactd/internal/testkit"
)

// failingPage fails a backfill's first page, then reads the contacts as its Contacts do.
type failingPage struct {
	segment.Contacts
	failed atomic.Bool
}

var errPageFailed = errors.New("the page failed")

func (f *failingPage) BackfillPage(ctx context.Context, q *db.Queries, account, after uuid.UUID, limit int) ([]segment.Member, bool, error) {
	if f.failed.CompareAndSwap(false, true) {
		return nil, false, errPageFailed
	}
	return f.Contacts.BackfillPage(ctx, q, account, after, limit)
}

// A backfill that stops on an error (the database away for a moment) gives its segment back:
// the next look, this process's or another's, takes it up at once from the last page done,
// rather than once the failed backfill's lease (a minute) has run out.
func TestASegmentBackfillThatFailsIsTakenUpAgainAtOnce(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	for _, email := range []string{"ann@example.com", "bob@example.com", "cy@example.com"} {
		createContact(t, a, key, map[string]any{"email": email, "tags": []string{"vip"}})
	}
	sg := saveVIPSegment(t, a, key)
	ctx := context.Background()
	did, err := a.Svc.Segments.BackfillOne(ctx, &failingPage{Contacts: a.Svc.Contacts})
	if !did || !errors.Is(err, errPageFailed) {
		t.Fatalf("the failing backfill: did %v, %v; want it to have claimed the segment and failed", did, err)
	}
	if n := a.Count(t, "SELECT count(*) FROM segments WHERE segment_id = $1::uuid AND status = 'backfilling' AND backfill_lease IS NULL", sg.SegmentId); n != 1 {
		t.Error("the failed backfill kept its lease on the segment")
	}
	if did, err := a.Svc.Segments.BackfillOne(ctx, a.Svc.Contacts); !did || err != nil {
		t.Fatalf("the next look: did %v, %v; want the segment taken up and filled", did, err)
	}
	if n := a.Count(t, "SELECT count(*) FROM segments WHERE segment_id = $1::uuid AND status = 'ready'", sg.SegmentId); n != 1 {
		t.Error("the segment is not ready after the next look")
	}
	if n := a.Count(t, "SELECT count(*) FROM segment_members WHERE segment_id = $1::uuid", sg.SegmentId); n != 3 {
		t.Errorf("%d members, want the 3 contacts", n)
	}
}

// Backfills take turns between accounts, a page a turn: an account whose three segments each
// take three pages (1,001 contacts) saved them first, and another account's segment, saved
// after, is ready after the first account's first page, not after its nine. Each call of
// BackfillOne is one page (the last page's call makes its segment ready), so all ten pages take
// ten calls and the eleventh finds nothing.
func TestBackfillsTakeTurnsBetweenAccounts(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, heavy := a.Account("heavy")
	_, light := a.Account("light")
	for from := 0; from < 2*segment.BackfillPage+1; from += 500 {
		var items []any
		for i := from; i < min(from+500, 2*segment.BackfillPage+1); i++ {
			items = append(items, map[string]any{"email": fmt.Sprintf("c%04d@example.com", i), "tags": []string{"vip"}})
		}
		if r := a.Do("POST", "/public/v1/contacts/batch", heavy, map[string]any{"mode": "create", "contacts": items}); r.Status != 200 {
			t.Fatalf("batch: %d %s", r.Status, r.Body)
		}
	}
	save := func(key, name string) string {
		t.Helper()
		var sg api.Segment
		r := a.Do("POST", "/public/v1/segments", key, map[string]any{"name": name, "filter": map[string]any{"groups": []any{
			map[string]any{"conditions": []any{map[string]any{"attribute": "tags", "operator": "contains", "value": "vip"}}}}}})
		if r.JSON(t, &sg); r.Status != 200 {
			t.Fatalf("save: %d %s", r.Status, r.Body)
		}
		return sg.SegmentId
	}
	var heavySegments []string
	for i := range 3 {
		heavySegments = append(heavySegments, save(heavy, fmt.Sprintf("heavy %d", i)))
	}
	createContact(t, a, light, map[string]any{"email": "one@example.com", "tags": []string{"vip"}})
	lightSegment := save(light, "light")
	ready := func(id string) bool {
		return a.Count(t, "SELECT count(*) FROM segments WHERE segment_id = $1::uuid AND status = 'ready'", id) == 1
	}
	page := func() bool {
		t.Helper()
		did, err := a.Svc.Segments.BackfillOne(context.Background(), a.Svc.Contacts)
		if err != nil {
			t.Fatal(err)
		}
		return did
	}
	page()
	page()
	if !ready(lightSegment) {
		t.Error("the light account's segment is not ready after the heavy account's first page and its own")
	}
	if n := a.Count(t, "SELECT count(*) FROM segments WHERE segment_id = ANY($1::uuid[]) AND status = 'backfilling'", heavySegments); n != 3 {
		t.Errorf("%d of the heavy account's segments still backfilling after its first page, want all 3", n)
	}
	calls := 2
	for page() {
		calls++
	}
	if calls != 10 {
		t.Errorf("the backfills took %d pages, want 10 (3 segments of 3 pages, and 1)", calls)
	}
	for _, id := range heavySegments {
		if !ready(id) || a.Count(t, "SELECT count(*) FROM segment_members WHERE segment_id = $1::uuid", id) != 2*segment.BackfillPage+1 {
			t.Errorf("heavy segment %s: not ready with its %d members", id, 2*segment.BackfillPage+1)
		}
	}
}
