package contact

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/platform/ids"
)

// Match finds a contact by the value of a unique custom field.
type Match struct{ Field, Value string }

// Get finds a contact by id, by email, by a unique field's value, or by several (which must
// then name the same contact). An id that is not a UUID is simply not found.
func (s *Service) Get(ctx context.Context, accountID uuid.UUID, contactID, email *string, match *Match) (Contact, error) {
	if contactID == nil && email == nil && match == nil {
		return Contact{}, apperr.Invalid(apperr.Field("query", "required", "one of contactId, emailId or field and value is required"))
	}
	var c Contact
	var err error
	if match != nil {
		id, err := s.holder(ctx, accountID, *match)
		if err != nil {
			return Contact{}, err
		}
		if contactID == nil {
			raw := id.String()
			contactID = &raw
		} else if pid, perr := ParseID(*contactID); perr != nil || pid != id {
			return Contact{}, ErrNotFound
		}
	}
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

// holder is the contact that holds match's value, or ErrNotFound.
func (s *Service) holder(ctx context.Context, accountID uuid.UUID, match Match) (uuid.UUID, error) {
	defs, err := s.fields.Of(ctx, nil, accountID, false)
	if err != nil {
		return uuid.Nil, err
	}
	if _, known := defs.Field(match.Field); !known { // maybe defined by another process since
		if defs, err = s.fields.Of(ctx, nil, accountID, true); err != nil {
			return uuid.Nil, err
		}
	}
	unique, err := defs.UniqueForm(match.Field, match.Value, "query.field")
	if err != nil {
		return uuid.Nil, err
	}
	var id uuid.UUID
	err = s.store.Do(ctx, func(q *db.Queries) (err error) {
		id, err = q.UniqueValueHolder(ctx, db.UniqueValueHolderParams{AccountID: accountID, FieldKey: match.Field, Value: unique})
		return err
	})
	if errors.Is(err, apperr.ErrNoRows) {
		return uuid.Nil, ErrNotFound
	}
	return id, err
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
	return s.FromRow(r.row)
}

// ParseID parses a contact id; anything but a canonical UUID is not found.
func ParseID(raw string) (uuid.UUID, error) {
	id, ok := ids.Parse(raw)
	if !ok {
		return uuid.Nil, ErrNotFound
	}
	return id, nil
}
