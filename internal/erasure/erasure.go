// Package erasure forgets a person (GDPR art. 17, CCPA): it removes a contact's personal
// data from every copy contactd keeps, in one transaction, and keeps them out. Each copy's
// owner does its part — the contact package the contact (with its properties, activity and
// consent record), the webhook package the events (tombstones), the delivery package the
// attempts' response excerpts, the idempotency package the stored responses, the suppress
// package the suppression list — and this package orders them and records the erasure for
// audit, without personal data.
//
// What holds no personal data and is left alone: console sessions (a session is a key's, and
// console pages are never cached: Cache-Control no-store), the in-process caches (API keys
// and subscribed event types only), the access log (paths, never query strings or bodies).
// What this package cannot reach: the operator's backups, and the copies receivers made
// (they get ContactErased).
package erasure

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apitime"
	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/delivery"
	"github.com/contactd/contactd/internal/idempotency"
	"github.com/contactd/contactd/internal/store"
	"github.com/contactd/contactd/internal/suppress"
	"github.com/contactd/contactd/internal/webhook"
)

// Requester is the API key that asked for an erasure, as the audit record keeps it.
type Requester struct {
	KeyID              uuid.UUID
	KeyPrefix, KeyName string
}

// Erasure is the audit record of one erasure.
type Erasure struct {
	ID             uuid.UUID
	ContactID      uuid.UUID
	ErasedAt       time.Time
	Suppressed     []string // the kinds put on the suppression list: email, phone
	EventsRedacted int
}

// Service erases contacts.
type Service struct {
	store      *store.Store
	contacts   *contact.Service
	events     *webhook.Emitter
	suppressed *suppress.List
	now        func() time.Time
}

// New returns a Service.
func New(st *store.Store, contacts *contact.Service, events *webhook.Emitter, suppressed *suppress.List, now func() time.Time) *Service {
	return &Service{store: st, contacts: contacts, events: events, suppressed: suppressed, now: now}
}

// Erase forgets the contact rawID of the account, for by: everything at once, or nothing.
// An unknown contact, or one already erased, is contact.ErrNotFound.
func (s *Service) Erase(ctx context.Context, accountID uuid.UUID, rawID string, by Requester) (Erasure, error) {
	e := Erasure{ID: uuid.Must(uuid.NewV7()), ErasedAt: s.now()}
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		gone, err := s.contacts.Remove(ctx, tx, accountID, rawID)
		if err != nil {
			return err
		}
		e.ContactID = gone.ID
		entries, err := s.suppressed.Entries(ctx, accountID, gone.EmailKey, gone.Phone)
		if err != nil {
			return err
		}
		for _, m := range gone.Merged {
			more, err := s.suppressed.Entries(ctx, accountID, m.EmailKey, m.Phone)
			if err != nil {
				return err
			}
			entries = append(entries, more...)
		}
		if e.Suppressed, err = suppress.Add(ctx, tx.Queries, accountID, e.ID, entries, e.ErasedAt); err != nil {
			return err
		}
		slices.Sort(e.Suppressed) // email before phone, each once (a merged duplicate's too)
		e.Suppressed = slices.Compact(e.Suppressed)
		for _, id := range append([]uuid.UUID{gone.ID}, mergedIDs(gone)...) {
			redacted, err := webhook.Redact(ctx, tx.Queries, accountID, id)
			if err != nil {
				return err
			}
			e.EventsRedacted += len(redacted)
			if err := delivery.ForgetResponses(ctx, tx.Queries, accountID, redacted); err != nil {
				return err
			}
			if err := idempotency.ForgetContact(ctx, tx.Queries, accountID, id); err != nil {
				return err
			}
		}
		if err := s.events.Emit(ctx, tx, accountID, webhook.Event{Type: webhook.ContactErased, ContactID: gone.ID,
			Contact: webhook.ContactInfo{ContactID: gone.ID.String()}, At: e.ErasedAt,
			Info: webhook.ContactErasedInfo{ErasureID: e.ID.String(), ErasedAt: apitime.From(e.ErasedAt)}}); err != nil {
			return err
		}
		return tx.ErasureInsert(ctx, db.ErasureInsertParams{AccountID: accountID, ErasureID: e.ID, ContactID: gone.ID,
			ErasedAt: e.ErasedAt, KeyID: by.KeyID, KeyPrefix: by.KeyPrefix, KeyName: by.KeyName,
			Suppressed: e.Suppressed, EventsRedacted: int32(e.EventsRedacted)})
	})
	return e, err
}

// mergedIDs are the ids of the duplicates merged into the removed contact.
func mergedIDs(gone contact.Removed) []uuid.UUID {
	ids := make([]uuid.UUID, len(gone.Merged))
	for i, m := range gone.Merged {
		ids[i] = m.ID
	}
	return ids
}
