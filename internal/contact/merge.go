package contact

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apitime"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/field"
	"github.com/contactd/contactd/internal/platform/store"
)

// MaxMergeDuplicates is how many duplicates one merge takes.
const MaxMergeDuplicates = 10

// MergeInput names the contact that stays and the duplicates merged into it, in order of
// precedence.
type MergeInput struct {
	Primary    string
	Duplicates []string
	DryRun     bool
}

// Merged is a merge's outcome: the merged contact and the ids that now answer for it.
type Merged struct {
	Contact    Contact
	Duplicates []uuid.UUID
}

// errDryRun rolls a dry run's transaction back once its answer is read.
var errDryRun = &apperr.Error{Kind: apperr.KindInternal, Code: "DryRun", Message: "dry run"}

// Merge merges the duplicates into the primary in one transaction (docs/api.md has the
// rules) and emits one ContactsMerged event; with DryRun it answers the same contact and
// writes nothing. All the contacts are locked in id order first: a concurrent write to any
// of them waits, and then finds the merged contact (or no duplicate) rather than a half.
func (s *Service) Merge(ctx context.Context, accountID uuid.UUID, in MergeInput) (Merged, error) {
	primary, dups, err := mergeIDs(in)
	if err != nil {
		return Merged{}, err
	}
	var out Merged
	err = s.store.InTx(ctx, func(tx store.Tx) error {
		rows, err := tx.ContactLockMany(ctx, db.ContactLockManyParams{AccountID: accountID, ContactIds: append([]uuid.UUID{primary}, dups...)})
		if err != nil {
			return err
		}
		byID := make(map[uuid.UUID]db.ContactRow, len(rows))
		for _, r := range rows {
			byID[r.ContactID] = r
		}
		for _, id := range append([]uuid.UUID{primary}, dups...) {
			if _, ok := byID[id]; !ok {
				return notFoundID(id)
			}
		}
		prev := byID[primary]
		next, tags, err := merged(prev, dups, byID)
		if err != nil {
			return err
		}
		taken, err := mergedFields(&next, dups, byID)
		if err != nil {
			return err
		}
		now := s.now()
		p := db.MergeKeepParams{AccountID: accountID, PrimaryID: primary, DuplicateIds: dups, MergedAt: now}
		if err := tx.MergeKeep(ctx, p); err != nil {
			return err
		}
		moves := db.MergeMovePropertiesParams{AccountID: accountID, PrimaryID: primary, DuplicateIds: dups}
		if err := tx.MergeMoveProperties(ctx, moves); err != nil {
			return err
		}
		if err := tx.MergeMoveActivities(ctx, db.MergeMoveActivitiesParams(moves)); err != nil {
			return err
		}
		if len(taken.FieldKeys) > 0 { // before the duplicates go, and their claims with them
			taken.AccountID, taken.PrimaryID = accountID, primary
			if err := tx.UniqueValuesMove(ctx, taken); err != nil {
				return err
			}
		}
		leaving := make(map[uuid.UUID]event.ContactInfo, len(dups))
		for _, id := range dups {
			leaving[id] = contactInfo(id, byID[id].Email, byID[id].AssignedUserEmailID)
		}
		if err := s.leaveSegments(ctx, tx, accountID, leaving); err != nil {
			return err
		}
		if _, err := tx.MergeDeleteDuplicates(ctx, db.MergeDeleteDuplicatesParams{AccountID: accountID, DuplicateIds: dups}); err != nil {
			return err
		}
		if err := s.writeMerged(ctx, tx, next, tags, now); err != nil {
			return err
		}
		if err := s.emitMerged(ctx, tx, prev, next, dups, tags, now); err != nil {
			return err
		}
		if out.Contact, err = s.load(ctx, tx.Queries, accountID, primary); err != nil {
			return err
		}
		if err := s.keepContact(ctx, tx, accountID, out.Contact); err != nil {
			return err
		}
		out.Duplicates = dups
		if in.DryRun {
			return errDryRun
		}
		return nil
	})
	if err == errDryRun {
		err = nil
	}
	return out, err
}

// mergeIDs parses a merge's ids: an id that is no contact's is not found, the primary among
// the duplicates or a duplicate twice is invalid.
func mergeIDs(in MergeInput) (uuid.UUID, []uuid.UUID, error) {
	primary, err := ParseID(in.Primary)
	if err != nil {
		return uuid.Nil, nil, notFound(in.Primary)
	}
	dups := make([]uuid.UUID, 0, len(in.Duplicates))
	for i, raw := range in.Duplicates {
		id, err := ParseID(raw)
		if err != nil {
			return uuid.Nil, nil, notFound(raw)
		}
		field := fmt.Sprintf("body.duplicateContactIds.%d", i)
		if id == primary {
			return uuid.Nil, nil, apperr.Invalid(apperr.Field(field, "distinct", "the primary contact cannot be its own duplicate"))
		}
		if slices.Contains(dups, id) {
			return uuid.Nil, nil, apperr.Invalid(apperr.Field(field, "uniqueItems", "this duplicate is named twice"))
		}
		dups = append(dups, id)
	}
	return primary, dups, nil
}

// notFound is ContactDoesNotExist naming the id a merge could not find.
func notFound(raw string) error {
	e := *ErrNotFound
	e.ContactID = raw
	return &e
}

func notFoundID(id uuid.UUID) error { return notFound(id.String()) }

// merged is the primary with the duplicates merged in: its fields win and its empty ones take
// the first duplicate's value; NonMarketing if any is; tags united; engagement added.
func merged(primary db.ContactRow, dups []uuid.UUID, byID map[uuid.UUID]db.ContactRow) (db.ContactRow, tagChange, error) {
	next := primary
	tags := tagChange{tags: primary.Tags}
	eng := engagementOf(primary)
	for _, id := range dups {
		d := byID[id]
		fill(&next.Name, d.Name)
		fill(&next.Phone, d.Phone)
		fill(&next.AssignedUserEmailID, d.AssignedUserEmailID)
		fill(&next.CrmName, d.CrmName)
		fill(&next.CrmUrl, d.CrmUrl)
		fill(&next.CrmSource, d.CrmSource)
		fill(&next.CrmStage, d.CrmStage)
		if next.CrmCreatedDate == nil {
			next.CrmCreatedDate = d.CrmCreatedDate
		}
		if d.RecordStatus == RecordNonMarketing {
			next.RecordStatus = RecordNonMarketing
		}
		added := addTags(tags.tags, d.Tags)
		tags = tagChange{tags: added.tags, added: append(tags.added, added.added...)}
		eng = addEngagement(eng, engagementOf(d))
	}
	if len(tags.tags) > MaxTagsPerContact {
		return db.ContactRow{}, tagChange{}, apperr.Invalid(apperr.Field("body.duplicateContactIds", "maxItems",
			fmt.Sprintf("the merged contact would have %d tags; a contact can have at most %d", len(tags.tags), MaxTagsPerContact)))
	}
	next.Tags = tags.tags
	setEngagement(&next, eng)
	return next, tags, nil
}

// mergedFields gives the primary (next) each custom field value it lacks from the first
// duplicate that has one, and says which duplicate's value each such field took: a unique
// field's claim moves with its value.
func mergedFields(next *db.ContactRow, dups []uuid.UUID, byID map[uuid.UUID]db.ContactRow) (db.UniqueValuesMoveParams, error) {
	var taken db.UniqueValuesMoveParams
	values, err := field.ParseValues(next.CustomFields)
	if err != nil {
		return taken, err
	}
	for _, id := range dups {
		theirs, err := field.ParseValues(byID[id].CustomFields)
		if err != nil {
			return taken, err
		}
		keys := make([]string, 0, len(theirs))
		for k := range theirs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if _, has := values[k]; !has {
				values[k] = theirs[k]
				taken.FromIds, taken.FieldKeys = append(taken.FromIds, id), append(taken.FieldKeys, k)
			}
		}
	}
	if len(taken.FieldKeys) > 0 {
		next.CustomFields = values.JSON()
	}
	return taken, nil
}

// fill gives an empty field the duplicate's value.
func fill(field **string, from *string) {
	if *field == nil || **field == "" {
		*field = from
	}
}

// addEngagement adds b's counters to a's; each last date is the later one.
func addEngagement(a, b Engagement) Engagement {
	add := func(n *int, last **time.Time, m int, other *time.Time) {
		*n += m
		if other != nil && (*last == nil || other.After(**last)) {
			*last = other
		}
	}
	add(&a.FormSubmissions, &a.LastFormSubmission, b.FormSubmissions, b.LastFormSubmission)
	add(&a.EmailSends, &a.LastEmailSend, b.EmailSends, b.LastEmailSend)
	add(&a.EmailOpens, &a.LastEmailOpen, b.EmailOpens, b.LastEmailOpen)
	add(&a.EmailClicks, &a.LastEmailClick, b.EmailClicks, b.LastEmailClick)
	add(&a.DashboardViews, &a.LastDashboardView, b.DashboardViews, b.LastDashboardView)
	add(&a.DashboardClicks, &a.LastDashboardClick, b.DashboardClicks, b.LastDashboardClick)
	add(&a.PostcardScans, &a.LastPostcardScan, b.PostcardScans, b.LastPostcardScan)
	add(&a.AIHandoffs, &a.LastAIHandoff, b.AIHandoffs, b.LastAIHandoff)
	return a
}

// setEngagement puts e on the row (the inverse of engagementOf).
func setEngagement(r *db.ContactRow, e Engagement) {
	r.NumFormSubmissions, r.LastFormSubmissionAt = int32(e.FormSubmissions), e.LastFormSubmission
	r.NumEmailSends, r.LastEmailSendAt = int32(e.EmailSends), e.LastEmailSend
	r.NumEmailOpens, r.LastEmailOpenAt = int32(e.EmailOpens), e.LastEmailOpen
	r.NumEmailClicks, r.LastEmailClickAt = int32(e.EmailClicks), e.LastEmailClick
	r.NumDashboardViews, r.LastDashboardViewAt = int32(e.DashboardViews), e.LastDashboardView
	r.NumDashboardClicks, r.LastDashboardClickAt = int32(e.DashboardClicks), e.LastDashboardClick
	r.NumPostcardScans, r.LastPostcardScanAt = int32(e.PostcardScans), e.LastPostcardScan
	r.NumAiHandoffs, r.LastAiHandoffAt = int32(e.AIHandoffs), e.LastAIHandoff
}

// writeMerged writes the merged primary: its details, tags, engagement and score, and its
// copy of its active properties (the duplicates' moved in).
func (s *Service) writeMerged(ctx context.Context, tx store.Tx, next db.ContactRow, tags tagChange, now time.Time) error {
	if err := tx.ContactUpdateDetails(ctx, updateParams(next, now)); err != nil {
		return err
	}
	if len(tags.added) > 0 {
		if err := tx.TagsSet(ctx, db.TagsSetParams{AccountID: next.AccountID, ContactID: next.ContactID, Tags: tags.tags, UpdatedAt: now}); err != nil {
			return err
		}
	}
	eng := engagementOf(next)
	if err := tx.ContactEngagementSet(ctx, engagementParams(next, eng, next.RecordStatus, LeadScore(eng, now), now)); err != nil {
		return err
	}
	_, err := tx.ContactRefreshProperties(ctx, db.ContactRefreshPropertiesParams{AccountID: next.AccountID, ContactID: next.ContactID})
	return err
}

// emitMerged emits the merge's ContactsMerged about the primary, and ContactUnsubscribed when
// the merge made it NonMarketing.
func (s *Service) emitMerged(ctx context.Context, tx store.Tx, prev, next db.ContactRow, dups []uuid.UUID, tags tagChange, now time.Time) error {
	changed := changedFields(prev, next)
	ids := make([]string, len(dups))
	for i, id := range dups {
		ids[i] = id.String()
	}
	added := tags.added
	if added == nil {
		added = []string{}
	}
	if changed == nil {
		changed = []string{}
	}
	info := contactInfo(next.ContactID, next.Email, next.AssignedUserEmailID)
	before, after := details(prev, changed), details(next, changed)
	if slices.Contains(changed, fieldCustom) {
		var err error
		if before.CustomFields, after.CustomFields, err = customFieldsDiff(prev.CustomFields, next.CustomFields); err != nil {
			return err
		}
	}
	if err := s.events.Emit(ctx, tx, next.AccountID, event.Event{Type: event.ContactsMerged, ContactID: next.ContactID,
		Contact: info, At: now, Info: event.ContactsMergedInfo{MergedContactIDs: ids, ChangedFields: changed,
			Previous: before, Current: after, TagsAdded: added}}); err != nil {
		return err
	}
	if prev.RecordStatus == RecordNonMarketing || next.RecordStatus != RecordNonMarketing {
		return nil
	}
	// a receiver that stops marketing on ContactUnsubscribed must hear of the primary too
	return s.events.Emit(ctx, tx, next.AccountID, event.Event{Type: event.ContactUnsubscribed, ContactID: next.ContactID,
		Contact: info, At: now, Info: event.ContactUnsubscribedInfo{UnsubscribedAt: apitime.From(now), Source: event.UnsubscribedByMerge}})
}

// MergedInto is the contact a merged duplicate's id answers for; ErrNotFound when the id is
// no merged duplicate's.
func (s *Service) MergedInto(ctx context.Context, accountID uuid.UUID, rawID string) (uuid.UUID, error) {
	id, err := ParseID(rawID)
	if err != nil {
		return uuid.Nil, err
	}
	var into uuid.UUID
	err = s.store.Do(ctx, func(q *db.Queries) (err error) {
		into, err = q.ContactMergedInto(ctx, db.ContactMergedIntoParams{AccountID: accountID, ContactID: id})
		return err
	})
	if errors.Is(err, apperr.ErrNoRows) {
		return uuid.Nil, ErrNotFound
	}
	return into, err
}
