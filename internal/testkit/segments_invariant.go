package testkit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// CheckSegmentMembership fails the test when a ready dynamic segment's members are not those
// the segment oracle (segment_oracle.go) finds its filter selects among the stored rows.
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
// the contacts the oracle (oracleSQL) finds its filter selects: "" when they agree.
func (a *API) segmentMembershipDiff(ctx context.Context) (string, error) {
	tx, err := a.Store.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
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
		filter      []byte
	}
	segments, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (s ready, err error) {
		err = r.Scan(&s.account, &s.id, &s.filter)
		return s, err
	})
	if err != nil {
		return "", err
	}
	var diffs []string
	for _, sg := range segments {
		query, args, err := oracleSQL(sg.filter)
		if err != nil {
			return "", fmt.Errorf("segment %s: %w", sg.id, err)
		}
		rows, err := tx.Query(ctx, `WITH oracle AS (`+query+`), stored AS (
				SELECT contact_id FROM segment_members WHERE account_id = $1 AND segment_id = '`+sg.id.String()+`')
			SELECT contact_id, true FROM oracle EXCEPT SELECT contact_id, true FROM stored
			UNION ALL
			(SELECT contact_id, false FROM stored EXCEPT SELECT contact_id, false FROM oracle)`, append([]any{sg.account}, args...)...)
		if err != nil {
			return "", fmt.Errorf("segment %s: %w", sg.id, err)
		}
		for rows.Next() {
			var id uuid.UUID
			var selected bool
			if err := rows.Scan(&id, &selected); err != nil {
				rows.Close()
				return "", err
			}
			diffs = append(diffs, fmt.Sprintf("segment %s: contact %s selected by the filter %v, member %v", sg.id, id, selected, !selected))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return "", err
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
