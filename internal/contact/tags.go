package contact

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/platform/store"
)

// Tag limits beyond the per-tag length, which the spec enforces.
const (
	MaxTagsPerRequest = 100
	MaxTagsPerContact = 500
)

// NormalizeTags trims each tag and drops case-insensitive duplicates, keeping the first
// spelling and the order. A tag that is empty after trimming is a violation.
func NormalizeTags(tags []string) ([]string, error) {
	out := make([]string, 0, len(tags))
	seen := make(map[string]bool, len(tags))
	var errs []apperr.FieldError
	for i, t := range tags {
		t = strings.TrimSpace(t)
		if t == "" {
			errs = append(errs, apperr.Field(fmt.Sprintf("body.tags.%d", i), "minLength", "tag is empty after trimming whitespace"))
			continue
		}
		if k := strings.ToLower(t); !seen[k] {
			seen[k] = true
			out = append(out, t)
		}
	}
	if len(errs) > 0 {
		return nil, apperr.Invalid(errs...)
	}
	if len(tags) > MaxTagsPerRequest {
		return nil, apperr.Invalid(apperr.Field("body.tags", "maxItems", fmt.Sprintf("at most %d tags per request", MaxTagsPerRequest)))
	}
	return out, nil
}

// tagChange is the outcome of a tag operation: the new list and what it added and removed.
type tagChange struct {
	tags, added, removed []string
}

// addTags appends the tags not already present (case-insensitively).
func addTags(existing, tags []string) tagChange {
	have := lowerSet(existing)
	c := tagChange{tags: append([]string(nil), existing...)}
	for _, t := range tags {
		if !have[strings.ToLower(t)] {
			c.tags = append(c.tags, t)
			c.added = append(c.added, t)
		}
	}
	return c
}

// replaceTags makes tags the list; a tag kept with another spelling is neither added nor removed.
func replaceTags(existing, tags []string) tagChange {
	have, want := lowerSet(existing), lowerSet(tags)
	c := tagChange{tags: tags}
	for _, t := range tags {
		if !have[strings.ToLower(t)] {
			c.added = append(c.added, t)
		}
	}
	for _, t := range existing {
		if !want[strings.ToLower(t)] {
			c.removed = append(c.removed, t)
		}
	}
	return c
}

// removeTags drops the listed tags (case-insensitively).
func removeTags(existing, tags []string) tagChange {
	drop := lowerSet(tags)
	c := tagChange{tags: []string{}}
	for _, t := range existing {
		if drop[strings.ToLower(t)] {
			c.removed = append(c.removed, t)
		} else {
			c.tags = append(c.tags, t)
		}
	}
	return c
}

func lowerSet(tags []string) map[string]bool {
	m := make(map[string]bool, len(tags))
	for _, t := range tags {
		m[strings.ToLower(t)] = true
	}
	return m
}

// AddTags adds tags to a contact and returns its full list.
func (s *Service) AddTags(ctx context.Context, accountID uuid.UUID, contactID string, tags []string) ([]string, error) {
	return s.changeTags(ctx, accountID, contactID, tags, addTags)
}

// ReplaceTags replaces a contact's tags and returns its full list.
func (s *Service) ReplaceTags(ctx context.Context, accountID uuid.UUID, contactID string, tags []string) ([]string, error) {
	return s.changeTags(ctx, accountID, contactID, tags, replaceTags)
}

// RemoveTags removes tags from a contact and returns its full remaining list.
func (s *Service) RemoveTags(ctx context.Context, accountID uuid.UUID, contactID string, tags []string) ([]string, error) {
	return s.changeTags(ctx, accountID, contactID, tags, removeTags)
}

func (s *Service) changeTags(ctx context.Context, accountID uuid.UUID, rawID string, tags []string,
	op func(existing, tags []string) tagChange) ([]string, error) {
	id, err := ParseID(rawID)
	if err != nil {
		return nil, err
	}
	tags, err = NormalizeTags(tags)
	if err != nil {
		return nil, err
	}
	return s.swapTags(ctx, accountID, id, tags, op)
}

// MaxTagSwapAttempts bounds a tag change's compare-and-swap: each attempt reads the contact
// and evaluates its segments again, so changes of one contact racing without end would each
// cost that without end. A round of racing changes of one contact lets one of them through (a
// group sends one change of a contact), so up to this many at once all land; past it the
// change is refused with 503, to be retried. Its price: at most this many evaluations of the
// account's segments (segment.MaxAccountPrice each) for one request.
const MaxTagSwapAttempts = 64

var errTagsContended = apperr.New(apperr.KindUnavailable, "ServiceUnavailable",
	"the contact's tags changed again and again while this change was made; retry it")

// swapTags is a tag change: read (with the other reads in flight), then compare-and-swap with
// its events and their deliveries (sent with the other swaps in flight), again if another
// change came in between. Two statements, no transaction of its own, no lock held between
// them. In an account with dynamic segments, the read is the whole contact and its segments,
// and the swap records the change of its membership too (segment.Service.Changed).
func (s *Service) swapTags(ctx context.Context, accountID, id uuid.UUID, tags []string,
	op func(existing, tags []string) tagChange) ([]string, error) {
	for attempt := 1; ; attempt++ {
		if attempt > MaxTagSwapAttempts {
			return nil, errTagsContended
		}
		version, quiet, err := s.segmentsQuiet(ctx, accountID)
		if err != nil {
			return nil, err
		}
		var row db.TagsGetForSegmentsRow
		if quiet {
			var r returned[db.TagsGetRow]
			r, err = s.tagsOf.Do(ctx, db.TagsGetParams{AccountID: accountID, ContactID: id})
			if err == nil && !r.ok {
				err = apperr.ErrNoRows
			}
			row.ContactRow.Tags, row.ContactRow.Email, row.ContactRow.AssignedUserEmailID, row.RowVersion = r.row.Tags, r.row.Email, r.row.AssignedUserEmailID, -1
		} else {
			err = s.store.Do(ctx, func(q *db.Queries) (err error) {
				row, err = q.TagsGetForSegments(ctx, db.TagsGetForSegmentsParams{AccountID: accountID, ContactID: id})
				return err
			})
		}
		if errors.Is(err, apperr.ErrNoRows) {
			return nil, ErrNotFound
		} else if err != nil {
			return nil, err
		}
		existing := row.ContactRow.Tags
		c, err := applyTagOp(op, existing, tags)
		if err != nil || !c.changes(existing) {
			return c.tags, err
		}
		now := s.now()
		sw := tagSwap{accountID: accountID, contactID: id, tags: c.tags, previous: existing, updatedAt: now,
			segmentsVersion: version, rowVersion: row.RowVersion}
		info := contactInfo(id, row.ContactRow.Email, row.ContactRow.AssignedUserEmailID)
		for _, ev := range tagEvents(id, info, c, now) {
			prepared, err := event.Prepare(ctx, ev)
			if err != nil {
				return nil, err
			}
			sw.events = append(sw.events, prepared)
		}
		if !quiet {
			after := row.ContactRow
			after.Tags, after.UpdatedAt = c.tags, now
			contact, err := s.FromRow(after)
			if err != nil {
				return nil, err
			}
			m, err := contact.member()
			if err != nil {
				return nil, err
			}
			change, err := s.segments.Changed(ctx, accountID, m, row.SegmentIds, now)
			if err != nil {
				return nil, err
			}
			sw.segmentsVersion, sw.segmentsEntered, sw.segmentsLeft = change.Version, change.Entered, change.Left
			sw.events = append(sw.events, change.Events...)
		}
		var swapped db.TagsSwapManyRow
		plan, err := s.events.WithPlan(ctx, nil, accountID, event.Of(sw.events), func(plan event.Plan) (current bool, err error) {
			sw.plan = plan
			swapped, err = s.tagSwaps.Do(ctx, sw)
			if err == nil && !swapped.SegmentsCurrent {
				return false, s.segmentsChanged(accountID)
			}
			return swapped.Current, err
		})
		if errors.Is(err, errSegmentsChanged) {
			continue
		} else if err != nil {
			return nil, err
		}
		if swapped.ContactID != uuid.Nil {
			s.events.Planned(accountID, plan)
			return c.tags, nil
		}
		s.tagSwapRetries.Add(1)
	}
}

// TagSwapRetries counts the tag changes read again because another change of their contact
// came in between: a race test's proof that its changes met.
func (s *Service) TagSwapRetries() uint64 { return s.tagSwapRetries.Load() }

// TagSwapsWaiting is how many tag changes wait for the group in flight to leave: a race
// test's barrier.
func (s *Service) TagSwapsWaiting() int { return s.tagSwaps.Waiting() }

// tagEvents is what a tag change emits: TagsAdded for the tags that are new, TagsRemoved for
// those that went.
func tagEvents(id uuid.UUID, info event.ContactInfo, c tagChange, now time.Time) []event.Event {
	var evs []event.Event
	if len(c.added) > 0 {
		evs = append(evs, event.Event{Type: event.TagsAdded, ContactID: id, Contact: info,
			Info: event.TagsAddedInfo{TagsAdded: c.added}, At: now})
	}
	if len(c.removed) > 0 {
		evs = append(evs, event.Event{Type: event.TagsRemoved, ContactID: id, Contact: info,
			Info: event.TagsRemovedInfo{TagsRemoved: c.removed}, At: now})
	}
	return evs
}

// applyTagOp computes a tag change and holds it to the per-contact limit.
func applyTagOp(op func(existing, tags []string) tagChange, existing, tags []string) (tagChange, error) {
	c := op(existing, tags)
	if len(c.tags) > MaxTagsPerContact {
		return tagChange{}, apperr.Invalid(apperr.Field("body.tags", "maxItems", fmt.Sprintf("a contact can have at most %d tags", MaxTagsPerContact)))
	}
	return c, nil
}

// changes reports whether the change alters the contact's tags at all.
func (c tagChange) changes(existing []string) bool {
	return len(c.added) > 0 || len(c.removed) > 0 || !slices.Equal(existing, c.tags)
}

func (s *Service) emitTagEvents(ctx context.Context, tx store.Tx, accountID, id uuid.UUID, info event.ContactInfo, c tagChange, now time.Time) error {
	for _, ev := range tagEvents(id, info, c, now) {
		if err := s.events.Emit(ctx, tx, accountID, ev); err != nil {
			return err
		}
	}
	return nil
}

// tagsOfContacts reads contacts' tags (with what their events carry) in one batch.
func tagsOfContacts(ctx context.Context, q *db.Queries, ps []db.TagsGetParams) ([]returned[db.TagsGetRow], error) {
	return returnedRows(ps, nil, func(ps []db.TagsGetParams) rowBatch[db.TagsGetRow] { return q.TagsGet(ctx, ps) })
}

// tagSwap is a tag change's compare-and-swap, with its events and their planned deliveries
// (TagsSwapMany).
type tagSwap struct {
	accountID, contactID uuid.UUID
	tags, previous       []string
	updatedAt            time.Time
	// segmentsVersion and rowVersion are -1 in an account without dynamic segments
	segmentsVersion, rowVersion   int64
	segmentsEntered, segmentsLeft []uuid.UUID
	events                        []event.Prepared
	plan                          event.Plan
}

// swapTagsOf sends a group's tag changes as one batch of TagsSwapMany, one statement per
// account, the changes in contact order: whether each swapped (uuid.Nil: the tags changed
// since they were read), or the error that failed them all (one implicit transaction). A
// second change of a contact in the group is not sent and reports that the tags changed: its
// caller reads them again once the first has committed.
func swapTagsOf(ctx context.Context, q *db.Queries, swaps []tagSwap) ([]db.TagsSwapManyRow, error) {
	sorted, order := store.Sorted(swaps, func(a, b tagSwap) int {
		if c := compareIDs(a.accountID, b.accountID); c != 0 {
			return c
		}
		return compareIDs(a.contactID, b.contactID)
	})
	var ps []db.TagsSwapManyParams
	var sent [][]int // for each statement, the position in sorted of each change it carries
	for i, sw := range sorted {
		if i > 0 && sw.accountID == sorted[i-1].accountID && sw.contactID == sorted[i-1].contactID {
			continue
		}
		if len(ps) == 0 || ps[len(ps)-1].AccountID != sw.accountID {
			// empty, not nil: pgx sends a nil slice as NULL, and a slice of NULL is NULL
			ps = append(ps, db.TagsSwapManyParams{AccountID: sw.accountID, Tags: []string{}, Previous: []string{}})
			sent = append(sent, nil)
		}
		p := &ps[len(ps)-1]
		sent[len(sent)-1] = append(sent[len(sent)-1], i)
		change := int32(len(sent[len(sent)-1]))
		p.ContactIds = append(p.ContactIds, sw.contactID)
		p.TagFrom, p.TagCount = append(p.TagFrom, int32(len(p.Tags))), append(p.TagCount, int32(len(sw.tags)))
		p.Tags = append(p.Tags, sw.tags...)
		p.PreviousFrom, p.PreviousCount = append(p.PreviousFrom, int32(len(p.Previous))), append(p.PreviousCount, int32(len(sw.previous)))
		p.Previous = append(p.Previous, sw.previous...)
		p.RowVersions, p.SegmentsVersions = append(p.RowVersions, sw.rowVersion), append(p.SegmentsVersions, sw.segmentsVersion)
		p.SubscriptionsVersions, p.UpdatedAts = append(p.SubscriptionsVersions, sw.plan.Version), append(p.UpdatedAts, sw.updatedAt)
		for _, id := range sw.segmentsEntered {
			p.EnteredChanges, p.EnteredSegmentIds = append(p.EnteredChanges, change), append(p.EnteredSegmentIds, id)
		}
		for _, id := range sw.segmentsLeft {
			p.LeftChanges, p.LeftSegmentIds = append(p.LeftChanges, change), append(p.LeftSegmentIds, id)
		}
		for _, ev := range sw.events {
			p.EventChanges, p.EventIds, p.EventTypes = append(p.EventChanges, change), append(p.EventIds, ev.ID), append(p.EventTypes, string(ev.Type))
			p.EventPayloads, p.EventTraces = append(p.EventPayloads, string(ev.Payload)), append(p.EventTraces, ev.Trace)
		}
		p.DeliveryEventIds = append(p.DeliveryEventIds, sw.plan.EventIDs...)
		p.DeliverySubscriptionIds = append(p.DeliverySubscriptionIds, sw.plan.SubscriptionIDs...)
	}
	out := make([]db.TagsSwapManyRow, len(swaps))
	for i := range out {
		out[i] = db.TagsSwapManyRow{Current: true, SegmentsCurrent: true} // a second change of its contact
	}
	var failed error
	results := q.TagsSwapMany(ctx, ps)
	results.Query(func(i int, rows []db.TagsSwapManyRow, err error) {
		switch {
		case err != nil:
			failed = cmp.Or(failed, err)
		case len(rows) != len(sent[i]):
			failed = cmp.Or(failed, fmt.Errorf("tags swap: %d changes sent, %d rows returned", len(sent[i]), len(rows)))
		default:
			for j, at := range sent[i] {
				out[order[at]] = rows[j]
			}
		}
	})
	// the implicit transaction commits after the last result: Close reports whether it did
	if err := results.Close(); failed == nil {
		failed = err
	}
	if failed != nil {
		return nil, failed
	}
	return out, nil
}
