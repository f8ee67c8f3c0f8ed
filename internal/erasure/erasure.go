// Package erasure forgets a person (GDPR art. 17, CCPA): it removes a contact's personal
// data from every copy contactd keeps, in one transaction, and keeps them out. Each copy's
// owner does its part — the contact package the contact (with its properties, activity and
// consent record), the event package the events (tombstones), the delivery package the
// attempts' response excerpts, the idempotency package the stored responses, the suppression
// package the suppression list — and this package orders them and records the erasure for
// audit, without personal data.
//
// What holds no personal data and is left alone: console sessions (a session is a key's, and
// console pages are never cached: Cache-Control no-store), the in-process caches (API keys
// and subscribed event types only), the access log (paths, never query strings or bodies).
// The backups keep the person until they age out, and a restore from them does not bring
// them back: with backups, each erasure goes into a journal beside them (Journal), applied
// again to a restored database (Reapply). What this package cannot reach: the copies
// receivers made (they get ContactErased).
package erasure

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apitime"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/delivery"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/idempotency"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/suppression"
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
	events     *event.Emitter
	suppressed *suppression.List
	journal    *Journal
	now        func() time.Time
}

// New returns a Service; journal may be nil (no backups to restore from).
func New(st *store.Store, contacts *contact.Service, events *event.Emitter, suppressed *suppression.List, journal *Journal,
	now func() time.Time) *Service {
	return &Service{store: st, contacts: contacts, events: events, suppressed: suppressed, journal: journal, now: now}
}

// Erase forgets the person contact rawID of the account is or was, for by: everything at
// once, or nothing. rawID may be any id the account ever had: a live contact; a merged
// duplicate, which erases the contact it was merged into; a contact deleted since, whose
// person is found from its events (DELETE keeps nothing else). Every email and phone the
// person had, in its row, its merged duplicates' and its events (an email changed by PATCH
// included), goes on the suppression list. An id with nothing left of it (unknown, or erased
// already) is contact.ErrNotFound. With a journal, the erasure is in it before it commits.
func (s *Service) Erase(ctx context.Context, accountID uuid.UUID, rawID string, by Requester) (Erasure, error) {
	e := Erasure{ID: uuid.Must(uuid.NewV7()), ErasedAt: s.now()}
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		f, err := s.forget(ctx, tx, accountID, rawID)
		if err != nil {
			return err
		}
		if !f.found {
			return contact.ErrNotFound // nothing of it is left here: unknown, or erased already
		}
		e.ContactID, e.EventsRedacted = f.contact, f.redacted
		tx.AfterCommit(s.fence)
		if e.Suppressed, err = s.record(ctx, tx, accountID, e, by, f.entries, true); err != nil {
			return err
		}
		if s.journal == nil {
			return nil
		}
		sealed, err := tx.SuppressionKeyGet(ctx)
		if err != nil {
			return err
		}
		j := JournalEntry{ErasureID: e.ID, AccountID: accountID, ContactID: e.ContactID, Contacts: f.ids,
			ErasedAt: e.ErasedAt, KeyID: by.KeyID, KeyPrefix: by.KeyPrefix, KeyName: by.KeyName, ListKeySealed: sealed}
		for _, en := range f.entries {
			j.Suppressed = append(j.Suppressed, JournalDigest{Kind: en.Kind, Digest: en.Digest})
		}
		return s.journal.Append(j)
	})
	return e, err
}

// fence keeps reads off a standby that has not replayed the erasure, once it committed and
// before it answers (when the fence cannot be set, this process's standby is off until it
// can be).
func (s *Service) fence() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.store.FenceReplica(ctx)
}

// forgotten is what forget removed of a person.
type forgotten struct {
	found    bool        // anything: a row, or an event not yet redacted
	contact  uuid.UUID   // the contact the erasure names
	ids      []uuid.UUID // every id the person had: it, and its merged duplicates
	redacted int         // events
	entries  []suppression.Entry
}

// forget removes, in tx, the person rawID names: its row, its events (tombstones), its
// deliveries' response excerpts and its stored answers, and returns the suppression entries
// for every email and phone it had.
func (s *Service) forget(ctx context.Context, tx store.Tx, accountID uuid.UUID, rawID string) (forgotten, error) {
	gone, live, err := s.remove(ctx, tx, accountID, rawID)
	if err != nil {
		return forgotten{}, err
	}
	f := forgotten{found: live, contact: gone.ID, ids: append([]uuid.UUID{gone.ID}, mergedIDs(gone)...)}
	var person event.Person
	for i := 0; i < len(f.ids); i++ { // the duplicates its events name are erased too
		id := f.ids[i]
		redacted, said, err := event.Redact(ctx, tx.Queries, accountID, id)
		if err != nil {
			return f, err
		}
		person.Join(said)
		for _, m := range said.Merged {
			if !slices.Contains(f.ids, m) {
				f.ids = append(f.ids, m)
			}
		}
		f.redacted += len(redacted)
		if err := delivery.ForgetResponses(ctx, tx.Queries, accountID, redacted); err != nil {
			return f, err
		}
		if err := idempotency.ForgetContact(ctx, tx.Queries, accountID, id); err != nil {
			return f, err
		}
	}
	f.found = f.found || f.redacted > 0
	if !f.found {
		return f, nil
	}
	f.entries, err = s.entries(ctx, accountID, gone, person)
	return f, err
}

// record puts entries on the suppression list, says ContactErased (announce) and keeps the
// audit record of e, in tx; it returns the kinds suppressed.
func (s *Service) record(ctx context.Context, tx store.Tx, accountID uuid.UUID, e Erasure, by Requester,
	entries []suppression.Entry, announce bool) ([]string, error) {
	kinds, err := suppression.Add(ctx, tx.Queries, accountID, e.ID, entries, e.ErasedAt)
	if err != nil {
		return nil, err
	}
	slices.Sort(kinds) // email before phone, each once (a merged duplicate's too)
	kinds = slices.Compact(kinds)
	if announce {
		if err := s.events.Emit(ctx, tx, accountID, event.Event{Type: event.ContactErased, ContactID: e.ContactID,
			Contact: event.ContactInfo{ContactID: e.ContactID.String()}, At: e.ErasedAt,
			Info: event.ContactErasedInfo{ErasureID: e.ID.String(), ErasedAt: apitime.From(e.ErasedAt)}}); err != nil {
			return nil, err
		}
	}
	return kinds, tx.ErasureInsert(ctx, db.ErasureInsertParams{AccountID: accountID, ErasureID: e.ID, ContactID: e.ContactID,
		ErasedAt: e.ErasedAt, KeyID: by.KeyID, KeyPrefix: by.KeyPrefix, KeyName: by.KeyName,
		Suppressed: kinds, EventsRedacted: int32(e.EventsRedacted)})
}

// Reapply makes the journal's erasures hold again in a database restored to a time before
// some of them, and returns how many it applied: each erasure the database has no record of
// is done again under its own id and time, on every id the person had that the restore
// brought back (a ContactErased goes to subscribers who had heard of them), and its
// suppression entries go back on the list, those of a person made after the restore's time
// included. Erasures the database holds are left alone, so it can run any number of times.
func (s *Service) Reapply(ctx context.Context, entries []JournalEntry) (int, error) {
	for _, j := range entries {
		if j.ListKeySealed == "" {
			continue
		}
		// before any digest is computed: a restore to before the list had its key
		if err := s.store.Do(ctx, func(q *db.Queries) error {
			return q.SuppressionKeyCreate(ctx, db.SuppressionKeyCreateParams{KeySealed: j.ListKeySealed, CreatedAt: j.ErasedAt})
		}); err != nil {
			return 0, err
		}
		break
	}
	applied := 0
	for _, j := range entries {
		err := s.store.InTx(ctx, func(tx store.Tx) error {
			state, err := tx.ErasureState(ctx, db.ErasureStateParams{AccountID: j.AccountID, ErasureID: j.ErasureID})
			if err != nil || !state.Account || state.Erased {
				return err // an account made after the restore's time went with everything it had
			}
			e := Erasure{ID: j.ErasureID, ContactID: j.ContactID, ErasedAt: j.ErasedAt}
			entries := make([]suppression.Entry, len(j.Suppressed))
			for i, d := range j.Suppressed {
				entries[i] = suppression.Entry{Kind: d.Kind, Digest: d.Digest}
			}
			found := false
			for _, id := range j.Contacts {
				f, err := s.forget(ctx, tx, j.AccountID, id.String())
				if errors.Is(err, contact.ErrNotFound) {
					continue // a merged duplicate whose contact an earlier id of this erasure removed
				} else if err != nil {
					return err
				}
				found = found || f.found
				e.EventsRedacted += f.redacted
				entries = append(entries, f.entries...)
			}
			_, err = s.record(ctx, tx, j.AccountID, e, Requester{KeyID: j.KeyID, KeyPrefix: j.KeyPrefix, KeyName: j.KeyName},
				entries, found)
			applied++
			return err
		})
		if err != nil {
			return applied, fmt.Errorf("erasure %s: %w", j.ErasureID, err)
		}
	}
	return applied, nil
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
func (s *Service) entries(ctx context.Context, accountID uuid.UUID, gone contact.Removed, person event.Person) ([]suppression.Entry, error) {
	var out []suppression.Entry
	var emails, phones []string // lone values: its unique email and phone fields', its events'
	for _, r := range append([]contact.Removed{gone}, gone.Merged...) {
		if r.EmailKey != "" || r.Phone != nil {
			more, err := s.suppressed.Entries(ctx, accountID, r.EmailKey, r.Phone)
			if err != nil {
				return nil, err
			}
			if r.EmailKey == "" {
				more = more[1:] // the empty email's
			}
			out = append(out, more...)
		}
		for _, email := range r.Emails {
			emails = append(emails, contact.EmailKey(email))
		}
		phones = append(phones, r.Phones...)
	}
	for _, email := range person.Emails {
		emails = append(emails, contact.EmailKey(email))
	}
	phones = append(phones, person.Phones...)
	more, err := s.suppressed.EntriesOf(ctx, accountID, emails, phones)
	return append(out, more...), err
}

// mergedIDs are the ids of the duplicates merged into the removed contact.
func mergedIDs(gone contact.Removed) []uuid.UUID {
	ids := make([]uuid.UUID, len(gone.Merged))
	for i, m := range gone.Merged {
		ids[i] = m.ID
	}
	return ids
}
