package testkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/segment"
)

// CheckSegmentMembership fails the test when a ready dynamic segment's members are not those a
// full evaluation of its filter over the account's contacts finds (a backfill's, page by page).
// Writes keep memberships in their own transactions, so the two agree in any one snapshot;
// work still running when a test ends (an enrichment, a backfill's last page) is waited for by
// reading again until they agree, and a break is reported once they never do. (A lead score
// decays between writes, and membership is decided at a write: a test whose scores sat on a
// leadScore segment's bound could see the two part; the tests' scores are far from theirs.)
func (a *API) CheckSegmentMembership(t testing.TB) {
	t.Helper()
	if a.seededMemberships != "" {
		return
	}
	ctx := context.Background()
	end := time.Now().Add(Patience)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		diff, err := a.segmentMembershipDiff(ctx)
		var pgErr interface{ SQLState() string }
		switch {
		case err != nil && !(errors.As(err, &pgErr) && pgErr.SQLState() == "40001"):
			t.Errorf("checking segment membership: %v", err)
			return
		case err == nil && diff == "":
			return
		case time.Now().After(end):
			t.Errorf("broken: a ready dynamic segment's members are a full evaluation of its filter: %s", diff)
			return
		}
		time.Sleep(wait)
	}
}

// segmentMembershipDiff compares, in one snapshot, each ready dynamic segment's members with
// its filter's evaluation: "" when they agree.
func (a *API) segmentMembershipDiff(ctx context.Context) (string, error) {
	tx, err := a.Store.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return "", err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read only
	rows, err := tx.Query(ctx, `SELECT account_id, segment_id, filter FROM segments
		WHERE kind = 'dynamic' AND status = 'ready' ORDER BY account_id, segment_id`)
	if err != nil {
		return "", err
	}
	type ready struct {
		account, id uuid.UUID
		filter      segment.Filter
	}
	segments, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (s ready, err error) {
		var raw []byte
		if err = r.Scan(&s.account, &s.id, &raw); err == nil {
			err = json.Unmarshal(raw, &s.filter)
		}
		s.filter = s.filter.Compile()
		return s, err
	})
	if err != nil || len(segments) == 0 {
		return "", err
	}
	q := db.New(tx)
	var diffs []string
	contacts := map[uuid.UUID][]segment.Member{}
	for _, sg := range segments {
		ms, ok := contacts[sg.account]
		if !ok {
			for after := uuid.Nil; ; {
				page, last, err := a.Svc.Contacts.BackfillPage(ctx, q, sg.account, after, segment.BackfillPage)
				if err != nil {
					return "", err
				}
				if len(page) == 0 && !last {
					return "a contact held by a write", nil
				}
				ms = append(ms, page...)
				if last {
					break
				}
				after = page[len(page)-1].ID
			}
			contacts[sg.account] = ms
		}
		rows, err := tx.Query(ctx, `SELECT contact_id FROM segment_members WHERE account_id = $1 AND segment_id = $2`, sg.account, sg.id)
		if err != nil {
			return "", err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return "", err
		}
		stored := make(map[uuid.UUID]bool, len(ids))
		for _, id := range ids {
			stored[id] = true
		}
		for _, m := range ms {
			if is, was := sg.filter.Matches(m.Subject), stored[m.ID]; is != was {
				diffs = append(diffs, fmt.Sprintf("segment %s: contact %s matches %v, member %v", sg.id, m.ID, is, was))
			}
			delete(stored, m.ID)
		}
		for id := range stored {
			diffs = append(diffs, fmt.Sprintf("segment %s: member %s is no contact", sg.id, id))
		}
	}
	if len(diffs) > 5 {
		diffs = append(diffs[:5], fmt.Sprintf("and %d more", len(diffs)-5))
	}
	return strings.Join(diffs, "; "), nil
}

// SeededMemberships tells the API's cleanup not to check segment membership: the test wrote
// memberships that no filter explains, for the reason why (the cost model's worst cases).
func (a *API) SeededMemberships(why string) { a.seededMemberships = why }
