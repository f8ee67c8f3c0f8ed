package contact

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apitime"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/field"
	"github.com/contactd/contactd/internal/platform/store"
)

// Record statuses.
const (
	RecordMarketing    = "Marketing"
	RecordNonMarketing = "NonMarketing"
)

// Patch is one field of an update: absent (Set false), cleared (Set, Value nil) or a value.
type Patch[T any] struct {
	Set   bool
	Value *T
}

// apply returns the field's new value given its current one.
func (p Patch[T]) apply(current *T) *T {
	if !p.Set {
		return current
	}
	return p.Value
}

// CRMPatch changes some CRM fields.
type CRMPatch struct {
	Name, URL, Source, Stage Patch[string]
	CreatedDate              Patch[time.Time]
}

// UpdateInput is a PATCH of a contact. Email and RecordStatus cannot be cleared (the spec
// refuses null for them), so a nil Value there means absent.
type UpdateInput struct {
	Email, RecordStatus              Patch[string]
	Name, Phone, AssignedUserEmailID Patch[string]
	CRM                              Patch[CRMPatch]
	// CustomFields is the request's customFields object, as sent (nil: absent): the keys it
	// has are set, null or "" clears one, the others are left as they are.
	CustomFields json.RawMessage
}

// Update changes the fields sent and emits ContactDetailsUpdated (each changed field with its
// previous value) and ContactUnsubscribed (recordStatus to NonMarketing); a patch that changes
// nothing writes nothing. A new email is Pending again and is
// enriched; an email another contact has is DuplicateContact.
func (s *Service) Update(ctx context.Context, accountID uuid.UUID, rawID string, in UpdateInput) (Contact, error) {
	id, err := ParseID(rawID)
	if err != nil {
		return Contact{}, err
	}
	var c Contact
	err = s.store.InTx(ctx, func(tx store.Tx) error {
		row, err := s.lock(ctx, tx, accountID, id)
		if err != nil {
			return err
		}
		next := patched(row, in)
		if len(in.CustomFields) > 0 {
			if next.CustomFields, err = s.patchFields(ctx, tx, row, in.CustomFields); err != nil {
				return err
			}
		}
		if err := s.checkEmailFree(ctx, tx, row, next); err != nil {
			return err
		}
		if refusal, err := s.suppressedChange(ctx, tx.Queries, row, next); err != nil {
			return err
		} else if refusal != nil {
			return refusal
		}
		if len(changedFields(row, next)) > 0 {
			now := s.now()
			if err := tx.ContactUpdateDetails(ctx, updateParams(next, now)); err != nil {
				return err
			}
			if err := s.emitUpdateEvents(ctx, tx, row, next, now); err != nil {
				return err
			}
		}
		if c, err = s.load(ctx, tx.Queries, accountID, id); err != nil {
			return err
		}
		return s.keepContact(ctx, tx, accountID, c)
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		// another change took the email between the check and the update.
		return Contact{}, s.duplicateOf(ctx, accountID, in.Email.Value)
	}
	return c, err
}

// patchFields writes raw customFields over the locked row's values, against the definitions
// as they are now (read in the transaction: a patch is rare enough not to trust a cache), and
// claims the new values of unique fields: the row's new custom_fields, or its own when
// nothing changes.
func (s *Service) patchFields(ctx context.Context, tx store.Tx, row db.ContactRow, raw json.RawMessage) ([]byte, error) {
	defs, err := s.fields.Of(ctx, tx.Queries, row.AccountID, true)
	if err != nil {
		return nil, err
	}
	current, err := field.ParseValues(row.CustomFields)
	if err != nil {
		return nil, err
	}
	w, err := fieldsWrite(defs, current, raw, false)
	if err != nil || len(w.Changed) == 0 {
		return row.CustomFields, err
	}
	if refusal, err := s.suppressedFields(ctx, tx.Queries, row.AccountID, defs, w); refusal != nil || err != nil {
		return nil, errors.Join(refusal, err)
	}
	if err := claimValues(ctx, tx.Queries, row.AccountID, row.ContactID, w); err != nil {
		return nil, err
	}
	return w.JSON(), nil
}

// lock reads and locks a contact for a read-modify-write.
func (s *Service) lock(ctx context.Context, tx store.Tx, accountID, id uuid.UUID) (db.ContactRow, error) {
	row, err := tx.ContactLock(ctx, db.ContactLockParams{AccountID: accountID, ContactID: id})
	if errors.Is(store.Translate(err), apperr.ErrNoRows) {
		return row, ErrNotFound
	}
	return row, err
}

// patched is the row with the patch applied.
func patched(row db.ContactRow, in UpdateInput) db.ContactRow {
	next := row
	if in.Email.Set && in.Email.Value != nil && *in.Email.Value != row.Email {
		next.Email = *in.Email.Value
		if EmailKey(next.Email) != EmailKey(row.Email) {
			next.EmailStatus = EmailPending
		}
	}
	if in.RecordStatus.Set && in.RecordStatus.Value != nil {
		next.RecordStatus = *in.RecordStatus.Value
	}
	next.Name = in.Name.apply(row.Name)
	next.Phone = in.Phone.apply(row.Phone)
	next.AssignedUserEmailID = in.AssignedUserEmailID.apply(row.AssignedUserEmailID)
	if in.CRM.Set {
		crm := CRMPatch{Name: Patch[string]{Set: true}, URL: Patch[string]{Set: true}, Source: Patch[string]{Set: true},
			Stage: Patch[string]{Set: true}, CreatedDate: Patch[time.Time]{Set: true}} // null clears all
		if in.CRM.Value != nil {
			crm = *in.CRM.Value
		}
		next.CrmName, next.CrmUrl = crm.Name.apply(row.CrmName), crm.URL.apply(row.CrmUrl)
		next.CrmSource, next.CrmStage = crm.Source.apply(row.CrmSource), crm.Stage.apply(row.CrmStage)
		next.CrmCreatedDate = crm.CreatedDate.apply(row.CrmCreatedDate)
	}
	return next
}

func (s *Service) checkEmailFree(ctx context.Context, tx store.Tx, row, next db.ContactRow) error {
	key := EmailKey(next.Email)
	if key == EmailKey(row.Email) {
		return nil
	}
	other, err := tx.ContactOtherWithEmail(ctx, db.ContactOtherWithEmailParams{AccountID: row.AccountID, EmailKey: key, ContactID: row.ContactID})
	if errors.Is(store.Translate(err), apperr.ErrNoRows) {
		return nil
	} else if err != nil {
		return err
	}
	return duplicate(other)
}

func (s *Service) duplicateOf(ctx context.Context, accountID uuid.UUID, email *string) error {
	if email == nil {
		return errDuplicate
	}
	var other uuid.UUID
	err := s.store.Do(ctx, func(q *db.Queries) (err error) {
		other, err = q.ContactIDByEmail(ctx, db.ContactIDByEmailParams{AccountID: accountID, EmailKey: EmailKey(*email)})
		return err
	})
	if err != nil {
		return errDuplicate
	}
	return duplicate(other)
}

func duplicate(existing uuid.UUID) error {
	dup := *errDuplicate
	dup.ContactID = existing.String()
	return &dup
}

func updateParams(c db.ContactRow, now time.Time) db.ContactUpdateDetailsParams {
	return db.ContactUpdateDetailsParams{
		AccountID: c.AccountID, ContactID: c.ContactID, Email: c.Email, EmailKey: EmailKey(c.Email),
		EmailStatus: c.EmailStatus, Name: c.Name, Phone: c.Phone, RecordStatus: c.RecordStatus,
		AssignedUserEmailID: c.AssignedUserEmailID, CrmName: c.CrmName, CrmUrl: c.CrmUrl,
		CrmSource: c.CrmSource, CrmStage: c.CrmStage, CrmCreatedDate: c.CrmCreatedDate, CustomFields: c.CustomFields,
		UpdatedAt: now,
	}
}

func (s *Service) emitUpdateEvents(ctx context.Context, tx store.Tx, prev, next db.ContactRow, now time.Time) error {
	info := contactInfo(next.ContactID, next.Email, next.AssignedUserEmailID)
	if changed := changedFields(prev, next); len(changed) > 0 {
		before, after := details(prev, changed), details(next, changed)
		if slices.Contains(changed, fieldCustom) {
			var err error
			if before.CustomFields, after.CustomFields, err = customFieldsDiff(prev.CustomFields, next.CustomFields); err != nil {
				return err
			}
		}
		if err := s.events.Emit(ctx, tx, next.AccountID, event.Event{Type: event.ContactDetailsUpdated,
			ContactID: next.ContactID, Contact: info, At: now,
			Info: event.ContactDetailsUpdatedInfo{ChangedFields: changed, Previous: before, Current: after}}); err != nil {
			return err
		}
	}
	if prev.RecordStatus != RecordNonMarketing && next.RecordStatus == RecordNonMarketing {
		return s.events.Emit(ctx, tx, next.AccountID, event.Event{Type: event.ContactUnsubscribed,
			ContactID: next.ContactID, Contact: info, At: now,
			Info: event.ContactUnsubscribedInfo{UnsubscribedAt: apitime.From(now), Source: event.UnsubscribedByUpdate}})
	}
	return nil
}

// Fields a ContactDetailsUpdated event names, in the spec's order.
const (
	fieldName         = "name"
	fieldEmail        = "email"
	fieldPhone        = "phone"
	fieldAssignedUser = "assignedUserEmailId"
	fieldRecordStatus = "recordStatus"
	fieldCRM          = "crmFields"
	fieldCustom       = "customFields"
)

// changedFields names the fields a change of a contact from a to b changes; none when it
// changes nothing, and then neither the row nor an event is written.
func changedFields(a, b db.ContactRow) []string {
	var changed []string
	for _, f := range []struct {
		name string
		same bool
	}{
		{fieldName, eq(a.Name, b.Name)},
		{fieldEmail, a.Email == b.Email},
		{fieldPhone, eq(a.Phone, b.Phone)},
		{fieldAssignedUser, eq(a.AssignedUserEmailID, b.AssignedUserEmailID)},
		{fieldRecordStatus, a.RecordStatus == b.RecordStatus},
		{fieldCRM, eq(a.CrmName, b.CrmName) && eq(a.CrmUrl, b.CrmUrl) && eq(a.CrmSource, b.CrmSource) &&
			eq(a.CrmStage, b.CrmStage) && eqTime(a.CrmCreatedDate, b.CrmCreatedDate)},
		{fieldCustom, bytes.Equal(a.CustomFields, b.CustomFields)}, // the same bytes unless a write changed a value
	} {
		if !f.same {
			changed = append(changed, f.name)
		}
	}
	return changed
}

func eq(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func eqTime(a, b *time.Time) bool { return (a == nil) == (b == nil) && (a == nil || a.Equal(*b)) }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// details are c's name, email and phone, and its other fields among changed.
func details(c db.ContactRow, changed []string) event.ContactDetails {
	d := event.ContactDetails{Name: deref(c.Name), Email: c.Email, Phone: deref(c.Phone)}
	for _, f := range changed {
		switch f {
		case fieldAssignedUser:
			assigned := deref(c.AssignedUserEmailID)
			d.AssignedUserEmailID = &assigned
		case fieldRecordStatus:
			d.RecordStatus = c.RecordStatus
		case fieldCRM:
			d.CRMFields = &event.CRMFields{Name: c.CrmName, URL: c.CrmUrl, Source: c.CrmSource, Stage: c.CrmStage}
			if c.CrmCreatedDate != nil {
				at := apitime.From(*c.CrmCreatedDate)
				d.CRMFields.CreatedDate = &at
			}
		}
	}
	return d
}

// customFieldsDiff are the values of the fields that differ between two stored sets, before
// and after (nil, sent as null, where a set has none).
func customFieldsDiff(a, b []byte) (before, after map[string]any, err error) {
	va, err := field.ParseValues(a)
	if err != nil {
		return nil, nil, err
	}
	vb, err := field.ParseValues(b)
	if err != nil {
		return nil, nil, err
	}
	before, after = map[string]any{}, map[string]any{}
	for k, x := range va {
		if y, ok := vb[k]; !ok || !reflect.DeepEqual(x, y) {
			before[k], after[k] = x, y
		}
	}
	for k, y := range vb {
		if _, ok := va[k]; !ok {
			before[k], after[k] = nil, y
		}
	}
	return before, after, nil
}
