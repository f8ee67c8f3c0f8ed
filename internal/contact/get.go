package contact

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/ids"
	"github.com/contactd/contactd/internal/store"
)

// Get finds a contact by id, by email, or by both (which must then name the same contact).
// An id that is not a UUID is simply not found.
func (s *Service) Get(ctx context.Context, accountID uuid.UUID, contactID, email *string) (Contact, error) {
	if contactID == nil && email == nil {
		return Contact{}, apperr.Invalid(apperr.Field("query", "required", "one of contactId or emailId is required"))
	}
	var c Contact
	err := s.store.Read(ctx, func(q *db.Queries) error {
		var err error
		if contactID != nil {
			c, err = s.getByID(ctx, q, accountID, *contactID)
		} else {
			c, err = s.loaded(q.ContactGetByEmail(ctx, db.ContactGetByEmailParams{AccountID: accountID, EmailKey: EmailKey(*email)}))
		}
		return err
	})
	if err == nil && contactID != nil && email != nil && EmailKey(c.Email) != EmailKey(*email) {
		return Contact{}, ErrNotFound
	}
	return c, err
}

func (s *Service) getByID(ctx context.Context, q *db.Queries, accountID uuid.UUID, rawID string) (Contact, error) {
	id, err := ParseID(rawID)
	if err != nil {
		return Contact{}, err
	}
	return s.load(ctx, q, accountID, id)
}

// load reads one contact, its properties included, in one round trip.
func (s *Service) load(ctx context.Context, q *db.Queries, accountID, id uuid.UUID) (Contact, error) {
	return s.loaded(q.ContactGetByID(ctx, db.ContactGetByIDParams{AccountID: accountID, ContactID: id}))
}

// loaded is the contact of a row a query returned.
func (s *Service) loaded(r db.ContactRow, err error) (Contact, error) {
	if err != nil {
		if errors.Is(store.Translate(err), apperr.ErrNoRows) {
			return Contact{}, ErrNotFound
		}
		return Contact{}, err
	}
	return s.fromRow(r)
}

// ParseID parses a contact id; anything but a canonical UUID is not found.
func ParseID(raw string) (uuid.UUID, error) {
	id, ok := ids.Parse(raw)
	if !ok {
		return uuid.Nil, ErrNotFound
	}
	return id, nil
}
