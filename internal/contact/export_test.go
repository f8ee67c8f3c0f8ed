package contact

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/event"
)

// TagSwap is a tag change of an account without dynamic segments, for SwapTagsOf.
type TagSwap struct {
	Account, Contact uuid.UUID
	Previous, Tags   []string
	Events           []event.Prepared
	Plan             event.Plan
}

// SwapTagsOf sends swaps as the tag changes' group sends a group of them.
func SwapTagsOf(ctx context.Context, q *db.Queries, swaps []TagSwap) ([]db.TagsSwapManyRow, error) {
	in := make([]tagSwap, len(swaps))
	for i, s := range swaps {
		in[i] = tagSwap{accountID: s.Account, contactID: s.Contact, tags: s.Tags, previous: s.Previous,
			updatedAt: time.Now(), segmentsVersion: -1, rowVersion: -1, events: s.Events, plan: s.Plan}
	}
	return swapTagsOf(ctx, q, in)
}
