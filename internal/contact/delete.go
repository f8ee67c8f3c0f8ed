package contact

import (
	"context"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/field"
	"github.com/contactd/contactd/internal/platform/store"
)

// Delete removes a contact for good, with its properties, activity and consent record; its
// email is free again. Events already emitted about it are still delivered.
func (s *Service) Delete(ctx context.Context, accountID uuid.UUID, rawID string) error {
	id, err := ParseID(rawID)
	if err != nil {
		return err
	}
	return s.store.InTx(ctx, func(tx store.Tx) error {
		// locked first: a hand change of its snapshot segments waits, and is then refused
		row, err := s.lock(ctx, tx, accountID, id)
		if err != nil {
			return err
		}
		info := contactInfo(id, row.Email, row.AssignedUserEmailID)
		if err := s.leaveSegments(ctx, tx, accountID, map[uuid.UUID]event.ContactInfo{id: info}); err != nil {
			return err
		}
		_, err = tx.ContactDelete(ctx, db.ContactDeleteParams{AccountID: accountID, ContactID: id})
		return err
	})
}

// Removed is what an erasure needs of a contact it removed: the values the suppression list
// keeps (as digests), and the same of each duplicate merged into it earlier (the same person,
// whose events carry its own id).
type Removed struct {
	ID       uuid.UUID
	EmailKey string
	Phone    *string
	// Emails and Phones are its values of the account's unique email and phone fields.
	Emails, Phones []string
	Merged         []Removed
}

// Remove deletes a contact as Delete does, in the caller's transaction (an erasure's), and
// returns what the suppression list needs of it.
func (s *Service) Remove(ctx context.Context, tx store.Tx, accountID uuid.UUID, rawID string) (Removed, error) {
	id, err := ParseID(rawID)
	if err != nil {
		return Removed{}, err
	}
	row, err := s.lock(ctx, tx, accountID, id)
	if err != nil {
		return Removed{}, err
	}
	merges, err := tx.ContactMergesOf(ctx, db.ContactMergesOfParams{AccountID: accountID, ContactID: id})
	if err != nil {
		return Removed{}, err
	}
	// the erased person's leave events carry no personal data, as ContactErased does not
	if err := s.leaveSegments(ctx, tx, accountID, map[uuid.UUID]event.ContactInfo{id: {ContactID: id.String()}}); err != nil {
		return Removed{}, err
	}
	if _, err := tx.ContactDelete(ctx, db.ContactDeleteParams{AccountID: accountID, ContactID: id}); err != nil {
		return Removed{}, err
	}
	gone := Removed{ID: id, EmailKey: EmailKey(row.Email), Phone: row.Phone}
	if values, err := field.ParseValues(row.CustomFields); err != nil {
		return Removed{}, err
	} else if len(values) > 0 {
		defs, err := s.fields.Of(ctx, tx.Queries, accountID, true)
		if err != nil {
			return Removed{}, err
		}
		gone.Emails, gone.Phones = personValues(defs, values)
	}
	for _, m := range merges {
		gone.Merged = append(gone.Merged, Removed{ID: m.ContactID, EmailKey: m.EmailKey, Phone: m.Phone})
	}
	return gone, nil
}
