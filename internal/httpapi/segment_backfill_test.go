package httpapi_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

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
