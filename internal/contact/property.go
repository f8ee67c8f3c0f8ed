package contact

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/address"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/platform/ids"
	"github.com/contactd/contactd/internal/platform/store"
)

// Errors of the property operations.
var (
	ErrPropertyNotFound  = apperr.New(apperr.KindNotFound, "PropertyDoesNotExist", "property does not exist")
	errInvalidAddress    = apperr.New(apperr.KindInvalid, "InvalidAddress", "the address could not be parsed as a US address")
	errDuplicateProperty = apperr.New(apperr.KindInvalid, "DuplicateProperty", "the contact already has this address")
	errTooManyProperties = apperr.Invalid(apperr.FieldError{Field: "body.address", Reason: "maxProperties",
		Message: fmt.Sprintf("a contact has at most %d active properties and %d in all with the archived ones: archive one, or delete and recreate the contact",
			MaxActiveProperties, MaxProperties)})
)

// A contact's properties are bounded, so that one contact cannot grow without end (each
// add rewrites the contact's copy of its active properties, and every read carries them):
// MaxActiveProperties active ones, MaxProperties with the archived ones kept as history.
const (
	MaxActiveProperties = 50
	MaxProperties       = 500
)

// AddProperty parses raw into a new property of the contact and returns the contact. The
// enrichment job runs on it afterwards.
func (s *Service) AddProperty(ctx context.Context, accountID uuid.UUID, rawID, raw string) (Contact, error) {
	id, err := ParseID(rawID)
	if err != nil {
		return Contact{}, err
	}
	a, err := address.Parse(raw)
	if err != nil {
		return Contact{}, errInvalidAddress
	}
	p := Property{ID: uuid.Must(uuid.NewV7()), Address: a}
	var c Contact
	err = s.store.InTx(ctx, func(tx store.Tx) error {
		row, err := s.lock(ctx, tx, accountID, id)
		if err != nil {
			return err
		}
		n, err := tx.PropertyCount(ctx, db.PropertyCountParams{AccountID: accountID, ContactID: id})
		if err != nil {
			return err
		}
		if n.Active >= MaxActiveProperties || n.Total >= MaxProperties {
			return errTooManyProperties
		}
		err = insertProperty(ctx, tx, accountID, id, p, raw, s.now())
		if errors.Is(store.Translate(err), apperr.ErrNoRows) {
			return errDuplicateProperty
		} else if err != nil {
			return err
		}
		if err := tx.EnrichMarkDue(ctx, db.EnrichMarkDueParams{AccountID: accountID, ContactID: id, Now: s.now()}); err != nil {
			return err
		}
		if c, err = s.refreshed(ctx, tx, row); err != nil {
			return err
		}
		return s.keepContact(ctx, tx, accountID, c)
	})
	return c, err
}

// ArchiveProperty archives a property and returns its contact; archiving again is a no-op.
func (s *Service) ArchiveProperty(ctx context.Context, accountID uuid.UUID, rawPropertyID string) (Contact, error) {
	pid, ok := ids.Parse(rawPropertyID)
	if !ok {
		return Contact{}, ErrPropertyNotFound
	}
	var c Contact
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		contactID, err := tx.PropertyArchive(ctx, db.PropertyArchiveParams{AccountID: accountID, PropertyID: pid, Now: s.now()})
		if errors.Is(store.Translate(err), apperr.ErrNoRows) {
			return ErrPropertyNotFound
		} else if err != nil {
			return err
		}
		// the contact's lock, in a statement of its own, before its copy is rewritten (see
		// ContactRefreshProperties).
		row, err := s.lock(ctx, tx, accountID, contactID)
		if err != nil {
			return err
		}
		if c, err = s.refreshed(ctx, tx, row); err != nil {
			return err
		}
		return s.keepContact(ctx, tx, accountID, c)
	})
	return c, err
}

// refreshed rewrites the copy of the active properties on a contact whose row the caller
// locked (row), and returns the contact with it.
func (s *Service) refreshed(ctx context.Context, tx store.Tx, row db.ContactRow) (Contact, error) {
	props, err := tx.ContactRefreshProperties(ctx, db.ContactRefreshPropertiesParams{AccountID: row.AccountID, ContactID: row.ContactID})
	if err != nil {
		return Contact{}, err
	}
	row.ActiveProperties = props
	return s.FromRow(row)
}
