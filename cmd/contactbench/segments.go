package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// benchSegments is how many dynamic segments the segments account has: an account's most.
const benchSegments = 100

// segmentsAccount is the account the create-segments and add-tags-segments workloads write
// to: contacts (10,000; 1,000 in a smoke run), benchSegments dynamic segments, the same
// subscriber of TagsAdded as the workloads' account.
type segmentsAccount struct {
	key string
	ids []uuid.UUID
	// quietKey is the key of the account nobody subscribes to (create-unsubscribed)
	quietKey string
}

// segmentFilter is the i-th bench segment's filter: a tenth of them hold every contact with
// the create workload's "lead" tag, the others one of the fifty tags add-tags adds, in
// Illinois, or one name.
func segmentFilter(i int) map[string]any {
	first := []any{map[string]any{"attribute": "tags", "operator": "contains", "value": fmt.Sprintf("t%d", i%50)},
		map[string]any{"attribute": "address.state", "operator": "eq", "value": "IL"}}
	if i%10 == 0 {
		first = []any{map[string]any{"attribute": "tags", "operator": "contains", "value": "lead"}}
	}
	return map[string]any{"groups": []any{
		map[string]any{"conditions": first},
		map[string]any{"conditions": []any{map[string]any{"attribute": "name", "operator": "eq", "value": fmt.Sprintf("Segment Person %d", i)}}},
	}}
}

// prepareSegments seeds the segments account and saves its segments, and waits until every
// one is backfilled.
func prepareSegments(ctx context.Context, dr *driver, base, key string, contacts int) (*segmentsAccount, error) {
	acc := &segmentsAccount{key: key}
	for from := 0; from < contacts; from += 1000 {
		items := make([]any, 1000)
		for i := range items {
			items[i] = map[string]any{"email": fmt.Sprintf("seg-%d@example.com", from+i), "name": "Bench Contact",
				"tags": []string{"bench", "lead"}, "address": "123 N Main St Apt 4, Springfield, IL 62704"}
		}
		body, _ := json.Marshal(map[string]any{"mode": "create", "contacts": items})
		var out struct {
			Results []struct {
				ContactID uuid.UUID `json:"contactId"`
			} `json:"results"`
		}
		if err := dr.doJSON(ctx, request{method: "POST", url: base + "/public/v1/contacts/batch", body: body, want: 200, key: key}, &out); err != nil {
			return nil, fmt.Errorf("seed the segments account: %w", err)
		}
		for _, r := range out.Results {
			acc.ids = append(acc.ids, r.ContactID)
		}
	}
	for i := range benchSegments {
		body, _ := json.Marshal(map[string]any{"name": fmt.Sprintf("bench segment %d", i), "filter": segmentFilter(i)})
		if err := dr.do(ctx, request{method: "POST", url: base + "/public/v1/segments", body: body, want: 200, key: key}); err != nil {
			return nil, fmt.Errorf("save a bench segment: %w", err)
		}
	}
	for {
		var list struct {
			Segments []struct {
				Status string `json:"status"`
			} `json:"segments"`
		}
		if err := dr.doJSON(ctx, request{method: "GET", url: base + "/public/v1/segments", want: 200, key: key}, &list); err != nil {
			return nil, err
		}
		ready := 0
		for _, s := range list.Segments {
			if s.Status == "ready" {
				ready++
			}
		}
		if ready == benchSegments {
			return acc, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
