package contact

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/field"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/suppression"
)

// ErrFieldValueTaken is the 409 of a unique field's value another contact holds: its
// ContactID is the holder, its Fields the field.
var ErrFieldValueTaken = apperr.New(apperr.KindConflict, "FieldValueTaken", "another contact holds this value of a unique field")

// errFieldsChanged is a write checked against definitions that changed before it was made:
// it wrote nothing, and is checked again.
var errFieldsChanged = errors.New("contact: the field definitions changed")

// fieldsWrite is what a write of raw customFields does to current (nil on a create), or the
// 400 naming every value that breaks its field's rules.
func fieldsWrite(defs *field.Definitions, current field.Values, raw json.RawMessage, creating bool) (field.Write, error) {
	if !defs.Has() && len(raw) == 0 {
		return field.Write{Values: current}, nil
	}
	w, errs := defs.Apply(current, raw, creating)
	if len(errs) > 0 {
		return field.Write{}, apperr.Invalid(errs...)
	}
	return w, nil
}

// claimValues releases the contact's claims of w.Released and claims w.Claims, in the
// transaction of the write; a value another contact holds is ErrFieldValueTaken naming it
// (the transaction must then roll back: the claims before it were made).
func claimValues(ctx context.Context, q *db.Queries, accountID, contactID uuid.UUID, w field.Write) error {
	if len(w.Released) > 0 {
		if err := q.UniqueValuesRelease(ctx, db.UniqueValuesReleaseParams{AccountID: accountID, ContactID: contactID, FieldKeys: w.Released}); err != nil {
			return err
		}
	}
	if len(w.Claims) == 0 {
		return nil
	}
	p := db.UniqueValuesClaimParams{AccountID: accountID, ContactID: contactID}
	for _, c := range w.Claims {
		p.FieldKeys, p.Vals = append(p.FieldKeys, c.Key), append(p.Vals, c.Value)
	}
	claimed, err := q.UniqueValuesClaim(ctx, p)
	if err != nil || len(claimed) == len(w.Claims) {
		return err
	}
	for _, c := range w.Claims {
		if slices.Contains(claimed, c.Key) {
			continue
		}
		holder, err := q.UniqueValueHolder(ctx, db.UniqueValueHolderParams{AccountID: accountID, FieldKey: c.Key, Value: c.Value})
		if errors.Is(store.Translate(err), apperr.ErrNoRows) {
			// the holder let it go after the claim: a rare race, answered as a conflict to retry
			holder = uuid.Nil
		} else if err != nil {
			return err
		}
		return valueTaken(c.Key, holder)
	}
	return nil
}

func valueTaken(key string, holder uuid.UUID) error {
	taken := *ErrFieldValueTaken
	if holder != uuid.Nil {
		taken.ContactID = holder.String()
	}
	taken.Fields = []apperr.FieldError{apperr.Field("body.customFields."+key, "unique", "the field is unique, and another contact holds this value")}
	return &taken
}

// personValues are the values among values of the account's unique email and phone fields:
// the person's own addresses, which an erasure suppresses and a new contact may not carry.
func personValues(defs *field.Definitions, values field.Values) (emails, phones []string) {
	for k, v := range values {
		f, ok := defs.Field(k)
		s, isString := v.(string)
		if !ok || !f.Unique || !isString {
			continue
		}
		switch f.Type {
		case field.Email:
			emails = append(emails, s)
		case field.Phone:
			phones = append(phones, s)
		}
	}
	return emails, phones
}

// fieldEntries are the suppression list's entries of values' unique email and phone fields.
func (s *Service) fieldEntries(ctx context.Context, accountID uuid.UUID, defs *field.Definitions, values field.Values) ([]suppression.Entry, error) {
	emails, phones := personValues(defs, values)
	return s.suppressed.EntriesOf(ctx, accountID, emailKeys(emails), phones)
}

// emailKeys are emails' dedupe keys.
func emailKeys(emails []string) []string {
	out := make([]string, len(emails))
	for i, e := range emails {
		out[i] = EmailKey(e)
	}
	return out
}
