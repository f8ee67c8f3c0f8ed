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
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apitime"
	"github.com/contactd/contactd/internal/apperr"
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

// Erase forgets the person contact rawID of the account is or was, for by: everything at
// once, or nothing. rawID may be any id the account ever had: a live contact; a merged
// duplicate, which erases the contact it was merged into; a contact deleted since, whose
// person is found from its events (DELETE keeps nothing else). Every email and phone the
// person had, in its row, its merged duplicates' and its events (an email changed by PATCH
// included), goes on the suppression list. An id with nothing left of it (unknown, or erased
// already) is contact.ErrNotFound.
func (s *Service) Erase(ctx context.Context, accountID uuid.UUID, rawID string, by Requester) (Erasure, error) {
	e := Erasure{ID: uuid.Must(uuid.NewV7()), ErasedAt: s.now()}
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		gone, live, err := s.remove(ctx, tx, accountID, rawID)
		if err != nil {
			return err
		}
		e.ContactID = gone.ID
		var person webhook.Person
		ids := append([]uuid.UUID{gone.ID}, mergedIDs(gone)...)
		for i := 0; i < len(ids); i++ { // the duplicates its events name are erased too
			id := ids[i]
			redacted, said, err := webhook.Redact(ctx, tx.Queries, accountID, id)
			if err != nil {
				return err
			}
			person.Join(said)
			for _, m := range said.Merged {
				if !slices.Contains(ids, m) {
					ids = append(ids, m)
				}
			}
			e.EventsRedacted += len(redacted)
			if err := delivery.ForgetResponses(ctx, tx.Queries, accountID, redacted); err != nil {
				return err
			}
			if err := idempotency.ForgetContact(ctx, tx.Queries, accountID, id); err != nil {
				return err
			}
		}
		if !live && e.EventsRedacted == 0 {
			return contact.ErrNotFound // nothing of it is left here: unknown, or erased already
		}
		entries, err := s.entries(ctx, accountID, gone, person)
		if err != nil {
			return err
		}
		if e.Suppressed, err = suppress.Add(ctx, tx.Queries, accountID, e.ID, entries, e.ErasedAt); err != nil {
			return err
		}
		slices.Sort(e.Suppressed) // email before phone, each once (a merged duplicate's too)
		e.Suppressed = slices.Compact(e.Suppressed)
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

// remove deletes the contact rawID names, in the erasure's transaction: itself when it is
// live, the contact it was merged into when it is a merged duplicate; when it is neither
// (deleted), there is no row to remove, and live is false: its events are what is left.
func (s *Service) remove(ctx context.Context, tx store.Tx, accountID uuid.UUID, rawID string) (gone contact.Removed, live bool, err error) {
	gone, err = s.contacts.Remove(ctx, tx, accountID, rawID)
	if !errors.Is(err, contact.ErrNotFound) {
		return gone, err == nil, err
	}
	id, perr := contact.ParseID(rawID)
	if perr != nil {
		return gone, false, err
	}
	into, err := tx.ContactMergedInto(ctx, db.ContactMergedIntoParams{AccountID: accountID, ContactID: id})
	if err == nil {
		gone, err = s.contacts.Remove(ctx, tx, accountID, into.String())
		return gone, err == nil, err
	}
	if !errors.Is(store.Translate(err), apperr.ErrNoRows) {
		return gone, false, err
	}
	return contact.Removed{ID: id}, false, nil
}

// entries are the suppression list's entries for everything the person had: the removed
// row's email and phone and its merged duplicates', and what its events said.
func (s *Service) entries(ctx context.Context, accountID uuid.UUID, gone contact.Removed, person webhook.Person) ([]suppress.Entry, error) {
	type value struct {
		emailKey string
		phone    *string
	}
	var values []value
	for _, r := range append([]contact.Removed{gone}, gone.Merged...) {
		if r.EmailKey != "" || r.Phone != nil {
			values = append(values, value{r.EmailKey, r.Phone})
		}
	}
	for _, email := range person.Emails {
		values = append(values, value{emailKey: contact.EmailKey(email)})
	}
	for _, phone := range person.Phones {
		values = append(values, value{phone: &phone})
	}
	var out []suppress.Entry
	for _, v := range values {
		more, err := s.suppressed.Entries(ctx, accountID, v.emailKey, v.phone)
		if err != nil {
			return nil, err
		}
		if v.emailKey == "" {
			more = more[1:] // the empty email's
		}
		out = append(out, more...)
	}
	return out, nil
}

// mergedIDs are the ids of the duplicates merged into the removed contact.
func mergedIDs(gone contact.Removed) []uuid.UUID {
	ids := make([]uuid.UUID, len(gone.Merged))
	for i, m := range gone.Merged {
		ids[i] = m.ID
	}
	return ids
}
