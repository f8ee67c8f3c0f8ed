package contact

import (
	"context"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/field"
	"github.com/contactd/contactd/internal/suppression"
)

// notInserted says why a new contact whose email the account does not have was not
// inserted: its email or phone is an erased person's (ContactSuppressed), or the contact
// that had its email was deleted after the insert skipped it (ContactDoesNotExist).
func (s *Service) notInserted(ctx context.Context, q *db.Queries, accountID uuid.UUID, digests [][]byte) (refusal, err error) {
	refusal, err = s.suppressedAny(ctx, q, accountID, digests)
	if err == nil && refusal == nil {
		refusal = ErrNotFound
	}
	return refusal, err
}

// suppressedChange refuses a change that gives a contact an erased person's email or phone
// (ContactSuppressed). Only the values the change sets anew are checked: a contact keeps what
// it had.
func (s *Service) suppressedChange(ctx context.Context, q *db.Queries, row, next db.ContactRow) (refusal, err error) {
	emailKey := EmailKey(next.Email)
	newEmail := emailKey != EmailKey(row.Email)
	newPhone := suppression.PhoneKey(next.Phone) != suppression.PhoneKey(row.Phone)
	if !newEmail && !newPhone {
		return nil, nil
	}
	entries, err := s.suppressed.Entries(ctx, row.AccountID, emailKey, next.Phone)
	if err != nil {
		return nil, err
	}
	var changed [][]byte
	for _, e := range entries {
		if (e.Kind == suppression.Email && newEmail) || (e.Kind == suppression.Phone && newPhone) {
			changed = append(changed, e.Digest)
		}
	}
	return s.suppressedAny(ctx, q, row.AccountID, changed)
}

// suppressedAny is ContactSuppressed when the account suppresses one of digests.
func (s *Service) suppressedAny(ctx context.Context, q *db.Queries, accountID uuid.UUID, digests [][]byte) (refusal, err error) {
	if len(digests) == 0 {
		return nil, nil
	}
	found, err := suppression.Matching(ctx, q, accountID, digests)
	if err != nil || len(found) == 0 {
		return nil, err
	}
	return suppression.ErrSuppressed, nil
}

// suppressedFields refuses a write of custom fields that gives a contact an erased person's
// email or phone in a unique email or phone field (ContactSuppressed): only the values it
// sets anew.
func (s *Service) suppressedFields(ctx context.Context, q *db.Queries, accountID uuid.UUID, defs *field.Definitions, w field.Write) (refusal, err error) {
	changed := field.Values{}
	for _, k := range w.Changed {
		if v, ok := w.Values[k]; ok {
			changed[k] = v
		}
	}
	emails, phones := personValues(defs, changed)
	if len(emails)+len(phones) == 0 {
		return nil, nil
	}
	entries, err := s.suppressed.EntriesOf(ctx, accountID, emailKeys(emails), phones)
	if err != nil {
		return nil, err
	}
	return s.suppressedAny(ctx, q, accountID, suppression.Digests(entries))
}
