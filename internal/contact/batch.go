package contact

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/field"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/suppression"
)

// What a batch did with an item.
const (
	BatchCreated   = "created"
	BatchUpdated   = "updated"
	BatchUnchanged = "unchanged"
)

// BatchResult is one item's outcome: a status and the contact, or the item's error.
type BatchResult struct {
	Status    string
	ContactID uuid.UUID
	Warnings  []string
	Err       error
}

// batchItem is an item ready to write: the contact it would create.
type batchItem struct {
	index   int
	in      CreateInput
	key     string
	c       Contact
	events  []event.Prepared
	digests [][]byte // its email's and phone's on the suppression list
	fields  field.Write
	// match is its value of the batch's MatchField in its unique form ("": matched by email).
	match string
}

// Batch writes contacts as creates, or with upsert as upserts — an existing email is updated
// with merge-patch rules: the fields the item sets replace the stored ones (CRM fields one by
// one), tags are added, an address becomes a property unless the contact has it — and
// answers one result per item. Items that fail do so alone (invalid tags, a duplicate email
// without upsert); the others are written in one transaction, emitting what the single
// operations emit. An email that appears again in the batch is applied after the earlier one.
//
// An item's customFields are checked as a create's, required fields included, in upsert mode
// too (an item may create); on an existing contact they are then written as PATCH writes
// them. An item with a value of a unique field is written in a savepoint of its own, so that a
// value another contact holds fails it alone (FieldValueTaken).
//
// With o.MatchField (upsert only), an item with a value of that unique field is matched to
// the contact holding the value instead of by email: updated (its email too, as PATCH
// would), or created when no contact holds it (DuplicateContact when its email is taken).
// An item without a value of it is matched by email.
func (s *Service) Batch(ctx context.Context, accountID uuid.UUID, o BatchOptions, ins []CreateInput) ([]BatchResult, error) {
	results := make([]BatchResult, len(ins))
	done := 0
	defs, err := s.fields.Of(ctx, nil, accountID, false)
	for err == nil && done < len(ins) {
		if done, err = s.batch(ctx, accountID, o, ins, done, results, defs); errors.Is(err, errFieldsChanged) {
			defs, err = s.fields.Of(ctx, nil, accountID, true)
		}
	}
	var e *apperr.Error
	switch {
	case err == nil:
		return results, nil
	case done > 0 && errors.As(err, &e) && e.Kind == apperr.KindUnavailable:
		// the pages before stand: the items of this one and of those after it fail alone, to be
		// sent again (the database went away, or the request ran out of time)
		for i := done; i < len(ins); i++ {
			results[i] = BatchResult{Err: err}
		}
		return results, nil
	}
	return nil, err
}

// BatchPage is how many items of a batch one transaction writes. A page's transaction is
// what others wait on: other writes of its contacts, and its account's events feed, which
// shows an event only once no transaction of the account in flight can place one before it
// (decision 0013). So its work is bounded:
// its contacts evaluated against the account's segments, and at most BatchPage x
// segment.MaxPerAccount memberships moved (segment.MaxChangesPerWrite), each an event with
// its deliveries.
const BatchPage = 100

// MaxBatchFieldValues bounds the custom field values of one batch, all items together: each
// value of a unique field is a claim (about 13 buffers), and 1,000 items of 200 values each
// would be 200,000 of them in one transaction.
const MaxBatchFieldValues = 20_000

// BatchOptions say how a batch writes its items.
type BatchOptions struct {
	// Upsert updates the contacts that exist instead of refusing them.
	Upsert bool
	// MatchField is the key of a unique field items are matched on in an upsert ("": email).
	MatchField string
}

// matchFieldError is the 400 of a MatchField that cannot match.
func matchFieldError(defs *field.Definitions, o BatchOptions) error {
	if o.MatchField == "" {
		return nil
	}
	f, ok := defs.Field(o.MatchField)
	switch {
	case !o.Upsert:
		return apperr.Invalid(apperr.Field("body.matchField", "mode", "matchField applies to upsert"))
	case !ok || !f.Unique:
		return apperr.Invalid(apperr.Field("body.matchField", "unique", "not a unique field of the account"))
	case f.ArchivedAt != nil:
		return apperr.Invalid(apperr.Field("body.matchField", "archived", "the field is archived"))
	}
	return nil
}

// batch writes the items of ins from the from-th on, a page (BatchPage items) a transaction,
// against the field definitions defs, into results, and returns how many items of ins are
// done. errFieldsChanged: defs were not current when the page after the done ones was
// written, which wrote nothing. An error of the first page's is the whole batch's.
func (s *Service) batch(ctx context.Context, accountID uuid.UUID, o BatchOptions, ins []CreateInput, from int, results []BatchResult,
	defs *field.Definitions) (int, error) {
	if err := matchFieldError(defs, o); err != nil {
		return from, err
	}
	now := s.now()
	items := make([]batchItem, 0, len(ins)-from)
	for i := from; i < len(ins); i++ {
		if err := ctx.Err(); err != nil {
			return from, store.Translate(err) // the request's time is up: its items' checks stop between items
		}
		in := ins[i]
		results[i] = BatchResult{}
		c, warnings, events, fields, err := s.newContact(ctx, in, now, defs)
		if err != nil {
			results[i].Err = err
			continue
		}
		results[i].Warnings = warnings
		key := EmailKey(in.Email)
		entries, err := s.suppressed.Entries(ctx, accountID, key, in.Phone)
		if err != nil {
			return from, err
		}
		more, err := s.fieldEntries(ctx, accountID, defs, fields.Values)
		if err != nil {
			return from, err
		}
		entries = append(entries, more...)
		it := batchItem{index: i, in: in, key: key, c: c, events: events, digests: suppression.Digests(entries), fields: fields}
		for _, claim := range fields.Claims {
			if claim.Key == o.MatchField {
				it.match = claim.Value
			}
		}
		items = append(items, it)
	}
	values := 0
	for _, it := range items {
		values += len(it.fields.Values)
	}
	if values > MaxBatchFieldValues {
		return from, apperr.Invalid(apperr.Field("body.contacts", "maxFieldValues",
			fmt.Sprintf("a batch carries at most %d custom field values (this one %d): split it", MaxBatchFieldValues, values)))
	}
	for len(items) > 0 || from < len(ins) {
		end := min(len(ins), from+BatchPage)
		n := 0
		for n < len(items) && items[n].index < end {
			n++
		}
		if err := s.batchPage(ctx, accountID, o, items[:n], results, now, defs); err != nil {
			return from, err
		}
		from, items = end, items[n:]
	}
	return from, nil
}

// batchPage writes a page's items in one transaction, their outcomes into results. A page
// writes what it would write alone, or nothing.
func (s *Service) batchPage(ctx context.Context, accountID uuid.UUID, o BatchOptions, items []batchItem, results []BatchResult,
	now time.Time, defs *field.Definitions) error {
	if len(items) == 0 {
		return nil
	}
	base := make([]BatchResult, len(items))
	for i, it := range items {
		base[i] = results[it.index]
	}
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		for i, it := range items { // a retried transaction starts from the items' checks again
			results[it.index] = base[i]
		}
		if o.Upsert {
			keys, vals := make([]string, len(items)), []string{}
			for i, it := range items {
				keys[i] = it.key
				if it.match != "" {
					vals = append(vals, it.match)
				}
			}
			if err := tx.ContactLockBatch(ctx, db.ContactLockBatchParams{AccountID: accountID, EmailKeys: keys,
				FieldKey: o.MatchField, Vals: vals}); err != nil {
				return err
			}
		}
		for _, round := range byOccurrence(items) {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := s.batchRound(ctx, tx, accountID, o, round, results, now, defs); err != nil {
				return err
			}
		}
		var written []uuid.UUID
		seen := make(map[uuid.UUID]bool, len(items))
		for _, it := range items {
			r := results[it.index]
			if r.Err == nil && (r.Status == BatchCreated || r.Status == BatchUpdated) && !seen[r.ContactID] {
				seen[r.ContactID] = true
				written = append(written, r.ContactID)
			}
		}
		return s.keepSegments(ctx, tx, accountID, written...)
	})
	return err
}

// byOccurrence splits items into rounds: the first item of each email, then the second, and
// so on, so that each round has an email at most once and later rounds see earlier ones.
func byOccurrence(items []batchItem) [][]batchItem {
	seen := make(map[string]int, len(items))
	var rounds [][]batchItem
	for _, it := range items {
		k := it.key
		if it.match != "" { // an item matched on a field: one of its value per round
			k = "\x00" + it.match
		}
		n := seen[k]
		seen[k] = n + 1
		if n == len(rounds) {
			rounds = append(rounds, nil)
		}
		rounds[n] = append(rounds[n], it)
	}
	return rounds
}

// batchRound creates the round's contacts in one statement (ContactCreateMany) with their
// events and the deliveries the fan-out planned for them, then deals with the emails that
// exist: a duplicate, or an update in email order (an upsert's batch locked them, and those
// matched on a field, in id order before its first round).
func (s *Service) batchRound(ctx context.Context, tx store.Tx, accountID uuid.UUID, o BatchOptions, round []batchItem,
	results []BatchResult, now time.Time, defs *field.Definitions) error {
	round, err := s.upsertMatched(ctx, tx, accountID, o, round, results, now, defs)
	if err != nil {
		return err
	}
	upsert := o.Upsert
	var plain, claiming []batchItem
	for _, it := range round {
		if len(it.fields.Claims) > 0 {
			claiming = append(claiming, it)
		} else {
			plain = append(plain, it)
		}
	}
	inserted, err := s.createRound(ctx, tx, accountID, plain, defs)
	if err != nil {
		return err
	}
	for _, it := range claiming {
		err := tx.Savepoint(ctx, func(sp store.Tx) error {
			one, err := s.createRound(ctx, sp, accountID, []batchItem{it}, defs)
			if err != nil || !one[it.c.ID] {
				return err
			}
			inserted[it.c.ID] = true
			return claimValues(ctx, sp.Queries, accountID, it.c.ID, it.fields)
		})
		if errors.Is(err, ErrFieldValueTaken) {
			delete(inserted, it.c.ID)
			results[it.index].Err = err
			continue
		} else if err != nil {
			return err
		}
	}
	var existing []batchItem
	for _, it := range round {
		if results[it.index].Err != nil {
			continue
		}
		if !inserted[it.c.ID] {
			existing = append(existing, it)
			continue
		}
		results[it.index].Status, results[it.index].ContactID = BatchCreated, it.c.ID
	}
	slices.SortFunc(existing, func(a, b batchItem) int { return cmp.Compare(a.key, b.key) })
	for _, it := range existing {
		r := &results[it.index]
		if !upsert || it.match != "" { // an item matched on a field that no contact holds is a create
			id, err := tx.ContactIDByEmail(ctx, db.ContactIDByEmailParams{AccountID: accountID, EmailKey: it.key})
			if errors.Is(store.Translate(err), apperr.ErrNoRows) {
				r.Err, err = s.notInserted(ctx, tx.Queries, accountID, it.digests)
			} else if err == nil {
				r.Err = duplicate(id)
			}
			if err != nil {
				return err
			}
			continue
		}
		if err := s.upsertExisting(ctx, tx, accountID, it, r, now, defs); err != nil {
			return err
		}
	}
	return nil
}

// createRound creates items' contacts in one statement (ContactCreateMany) with their events
// and the deliveries the fan-out planned for them: which it inserted (the others' emails were
// taken, or their people erased).
func (s *Service) createRound(ctx context.Context, tx store.Tx, accountID uuid.UUID, items []batchItem, defs *field.Definitions) (map[uuid.UUID]bool, error) {
	ps := make([]db.ContactCreateParams, len(items))
	var events []event.Prepared
	eventsOf := map[uuid.UUID]uuid.UUID{} // event -> its contact
	for i, it := range items {
		ps[i] = createParams(accountID, it.c, it.in, it.events)
		ps[i].SuppressionDigests = it.digests
		events = append(events, it.events...)
		for _, ev := range it.events {
			eventsOf[ev.ID] = it.c.ID
		}
	}
	var inserted map[uuid.UUID]bool
	plan, err := s.events.WithPlan(ctx, tx.Queries, accountID, event.Of(events), func(plan event.Plan) (current bool, err error) {
		var fieldsCurrent bool
		inserted, current, fieldsCurrent, err = createMany(ctx, tx.Queries, ps, plan, defs.Version)
		if err == nil && !fieldsCurrent {
			return false, errFieldsChanged
		}
		return current, err
	})
	if err != nil {
		return nil, err
	}
	plan = plan.Keep(func(event uuid.UUID) bool { return inserted[eventsOf[event]] })
	tx.AfterCommit(func() { s.events.Planned(accountID, plan) })
	return inserted, nil
}

// upsertExisting applies it to the account's contact with its email and emits what PATCH,
// POST tags and POST property would have emitted for the same changes.
func (s *Service) upsertExisting(ctx context.Context, tx store.Tx, accountID uuid.UUID, it batchItem, r *BatchResult, now time.Time, defs *field.Definitions) error {
	row, err := tx.ContactLockByEmail(ctx, db.ContactLockByEmailParams{AccountID: accountID, EmailKey: it.key})
	if errors.Is(store.Translate(err), apperr.ErrNoRows) {
		r.Err, err = s.notInserted(ctx, tx.Queries, accountID, it.digests)
		return err
	} else if err != nil {
		return err
	}
	return s.upsertRow(ctx, tx, accountID, it, row, mergePatch(it.in), r, now, defs)
}

// upsertMatched updates the round's items whose MatchField value a contact holds (locked in
// id order), and returns the others: to create, or to match by email.
func (s *Service) upsertMatched(ctx context.Context, tx store.Tx, accountID uuid.UUID, o BatchOptions, round []batchItem,
	results []BatchResult, now time.Time, defs *field.Definitions) ([]batchItem, error) {
	var values []string
	for _, it := range round {
		if it.match != "" {
			values = append(values, it.match)
		}
	}
	if len(values) == 0 {
		return round, nil
	}
	held, err := tx.UniqueValueHolders(ctx, db.UniqueValueHoldersParams{AccountID: accountID, FieldKey: o.MatchField, Vals: values})
	if err != nil {
		return nil, err
	}
	holder := make(map[string]uuid.UUID, len(held))
	for _, h := range held {
		holder[h.Value] = h.ContactID
	}
	var rest, matched []batchItem
	for _, it := range round {
		if _, ok := holder[it.match]; it.match != "" && ok {
			matched = append(matched, it)
		} else {
			rest = append(rest, it)
		}
	}
	slices.SortFunc(matched, func(a, b batchItem) int { return compareIDs(holder[a.match], holder[b.match]) })
	for _, it := range matched {
		r := &results[it.index]
		row, err := s.lock(ctx, tx, accountID, holder[it.match])
		if err != nil {
			return nil, err // the holder's claim is in this snapshot: so is the holder
		}
		patch := mergePatch(it.in)
		patch.Email = Patch[string]{Set: true, Value: &it.in.Email}
		if err := s.upsertRow(ctx, tx, accountID, it, row, patch, r, now, defs); err != nil {
			return nil, err
		}
	}
	return rest, nil
}

// upsertRow applies an upsert item, as patch, to the locked row.
func (s *Service) upsertRow(ctx context.Context, tx store.Tx, accountID uuid.UUID, it batchItem, row db.ContactRow, patch UpdateInput,
	r *BatchResult, now time.Time, defs *field.Definitions) error {
	var err error
	var tags tagChange
	if len(it.c.Tags) > 0 {
		if tags, err = applyTagOp(addTags, row.Tags, it.c.Tags); err != nil {
			r.Err = err // over the per-contact limit: nothing of the item is written
			return nil
		}
	}
	next := patched(row, patch)
	if r.Err, err = s.suppressedChange(ctx, tx.Queries, row, next); r.Err != nil || err != nil {
		return err // given an erased person's phone: nothing of the item is written
	}
	if EmailKey(next.Email) != EmailKey(row.Email) {
		if err := s.checkEmailFree(ctx, tx, row, next); err != nil {
			r.Err = err // another contact has the email: nothing of the item is written
			return nil
		}
	}
	if len(it.in.CustomFields) > 0 {
		current, err := field.ParseValues(row.CustomFields)
		if err != nil {
			return err
		}
		w, err := fieldsWrite(defs, current, it.in.CustomFields, false)
		if err != nil {
			r.Err = err
			return nil
		}
		if len(w.Changed) > 0 {
			if r.Err, err = s.suppressedFields(ctx, tx.Queries, accountID, defs, w); r.Err != nil || err != nil {
				return err // an erased person's email or phone: nothing of the item is written
			}
			err := tx.Savepoint(ctx, func(sp store.Tx) error { return claimValues(ctx, sp.Queries, accountID, row.ContactID, w) })
			if errors.Is(err, ErrFieldValueTaken) {
				r.Err = err // nothing of the item is written
				return nil
			} else if err != nil {
				return err
			}
			next.CustomFields = w.JSON()
		}
	}
	r.ContactID, r.Status = row.ContactID, BatchUnchanged
	if len(changedFields(row, next)) > 0 {
		if err := tx.ContactUpdateDetails(ctx, updateParams(next, now)); err != nil {
			return err
		}
		if err := s.emitUpdateEvents(ctx, tx, row, next, now); err != nil {
			return err
		}
		r.Status = BatchUpdated
	}
	if len(it.c.Tags) > 0 && tags.changes(row.Tags) {
		if err := tx.TagsSet(ctx, db.TagsSetParams{AccountID: accountID, ContactID: row.ContactID, Tags: tags.tags, UpdatedAt: now}); err != nil {
			return err
		}
		info := contactInfo(row.ContactID, next.Email, next.AssignedUserEmailID)
		if err := s.emitTagEvents(ctx, tx, accountID, row.ContactID, info, tags, now); err != nil {
			return err
		}
		r.Status = BatchUpdated
	}
	if len(it.c.Properties) > 0 {
		err := insertProperty(ctx, tx, accountID, row.ContactID, it.c.Properties[0], *it.in.Address, now)
		if errors.Is(store.Translate(err), apperr.ErrNoRows) {
			return nil // the contact has this address already
		} else if err != nil {
			return err
		}
		if err := tx.EnrichMarkDue(ctx, db.EnrichMarkDueParams{AccountID: accountID, ContactID: row.ContactID, Now: now}); err != nil {
			return err
		}
		if _, err := tx.ContactRefreshProperties(ctx, db.ContactRefreshPropertiesParams{AccountID: accountID, ContactID: row.ContactID}); err != nil {
			return err
		}
		r.Status = BatchUpdated
	}
	return nil
}

// mergePatch is the update an upsert item makes: what it sets, and nothing it leaves out.
func mergePatch(in CreateInput) UpdateInput {
	u := UpdateInput{Name: setIf(in.Name), Phone: setIf(in.Phone), AssignedUserEmailID: setIf(in.AssignedUserEmailID)}
	if in.CRM != nil {
		u.CRM = Patch[CRMPatch]{Set: true, Value: &CRMPatch{Name: setIf(in.CRM.Name), URL: setIf(in.CRM.URL),
			Source: setIf(in.CRM.Source), Stage: setIf(in.CRM.Stage), CreatedDate: setIf(in.CRM.CreatedDate)}}
	}
	return u
}

func setIf[T any](v *T) Patch[T] { return Patch[T]{Set: v != nil, Value: v} }
