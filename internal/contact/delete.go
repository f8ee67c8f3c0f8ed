package contact

import (
	"context"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/store"
)

// Delete removes a contact for good, with its properties, activity and consent record; its
// email is free again. Events already emitted about it are still delivered.
func (s *Service) Delete(ctx context.Context, accountID uuid.UUID, rawID string) error {
	id, err := ParseID(rawID)
	if err != nil {
		return err
	}
	return s.store.InTx(ctx, func(tx store.Tx) error {
		n, err := tx.ContactDelete(ctx, db.ContactDeleteParams{AccountID: accountID, ContactID: id})
		if err == nil && n == 0 {
			return ErrNotFound
		}
		return err
	})
}
