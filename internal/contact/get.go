package contact

import (
	"context"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/ids"
)

// Get finds a contact by id, by email, or by both (which must then name the same contact).
// An id that is not a UUID is simply not found.
func (s *Service) Get(ctx context.Context, accountID uuid.UUID, contactID, email *string) (Contact, error) {
	if contactID == nil && email == nil {
		return Contact{}, apperr.Invalid(apperr.Field("query", "required", "one of contactId or emailId is required"))
	}
	var c Contact
	var err error
	if contactID != nil {
		var id uuid.UUID
		if id, err = ParseID(*contactID); err == nil {
			c, err = s.loaded(s.byID.Do(ctx, db.ContactGetByIDParams{AccountID: accountID, ContactID: id}))
		}
		if err == ErrNotFound {
			c, err = s.getMerged(ctx, accountID, *contactID)
		}
	} else {
		c, err = s.loaded(s.byEmail.Do(ctx, db.ContactGetByEmailParams{AccountID: accountID, EmailKey: EmailKey(*email)}))
	}
	if err == nil && contactID != nil && email != nil && EmailKey(c.Email) != EmailKey(*email) {
		return Contact{}, ErrNotFound
	}
	return c, err
}

// getMerged answers for a merged duplicate's id: the contact it was merged into, marked so.
func (s *Service) getMerged(ctx context.Context, accountID uuid.UUID, rawID string) (Contact, error) {
	into, err := s.MergedInto(ctx, accountID, rawID)
	if err != nil {
		return Contact{}, err
	}
	c, err := s.loaded(s.byID.Do(ctx, db.ContactGetByIDParams{AccountID: accountID, ContactID: into}))
	c.MergedInto = &into
	return c, err
}

// load reads one contact, its properties included, in one round trip, in tx.
func (s *Service) load(ctx context.Context, tx *db.Queries, accountID, id uuid.UUID) (Contact, error) {
	rows, err := contactsByID(ctx, tx, []db.ContactGetByIDParams{{AccountID: accountID, ContactID: id}})
	if err != nil {
		return Contact{}, err
	}
	return s.loaded(rows[0], nil)
}

// contactsByID reads contacts by id in one batch (reads in a group: one round trip for all).
func contactsByID(ctx context.Context, q *db.Queries, ps []db.ContactGetByIDParams) ([]returned[db.ContactRow], error) {
	return returnedRows(ps, nil, func(ps []db.ContactGetByIDParams) rowBatch[db.ContactRow] { return q.ContactGetByID(ctx, ps) })
}

// contactsByEmail reads contacts by email in one batch.
func contactsByEmail(ctx context.Context, q *db.Queries, ps []db.ContactGetByEmailParams) ([]returned[db.ContactRow], error) {
	return returnedRows(ps, nil, func(ps []db.ContactGetByEmailParams) rowBatch[db.ContactRow] { return q.ContactGetByEmail(ctx, ps) })
}

// loaded is the contact of a row a read returned.
func (s *Service) loaded(r returned[db.ContactRow], err error) (Contact, error) {
	switch {
	case err != nil:
		return Contact{}, err
	case !r.ok:
		return Contact{}, ErrNotFound
	}
	return s.fromRow(r.row)
}

// ParseID parses a contact id; anything but a canonical UUID is not found.
func ParseID(raw string) (uuid.UUID, error) {
	id, ok := ids.Parse(raw)
	if !ok {
		return uuid.Nil, ErrNotFound
	}
	return id, nil
}
