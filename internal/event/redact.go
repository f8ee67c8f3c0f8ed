package event

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apitime"
)

// Redact turns every event about an erased contact into a tombstone, in the caller's
// transaction (the erasure's): the same id, type and date, so the feed's order and the
// receivers' dedupe keys hold, with the contact's id and every other value emptied and
// "redacted": true. A delivery still pending sends the tombstone. It returns the ids of the
// events it redacted (none already a tombstone, nor an earlier erasure's ContactErased), and
// what they said of the person.
func Redact(ctx context.Context, q *db.Queries, accountID, contactID uuid.UUID) ([]uuid.UUID, Person, error) {
	var person Person
	events, err := q.EventsAbout(ctx, db.EventsAboutParams{AccountID: accountID, ContactID: &contactID})
	if err != nil || len(events) == 0 {
		return nil, person, err
	}
	var ids []uuid.UUID
	var payloads []string
	for _, e := range events {
		if EventType(e.EventType) == ContactErased || !person.read([]byte(e.Payload)) {
			continue // an erasure's own record (nothing of the person), or a tombstone already
		}
		p, err := tombstone(e.EventID, EventType(e.EventType), contactID, e.OccurredAt, []byte(e.Payload))
		if err != nil {
			return nil, person, err
		}
		ids, payloads = append(ids, e.EventID), append(payloads, string(p))
	}
	if len(ids) == 0 {
		return nil, person, nil
	}
	_, err = q.EventsRedact(ctx, db.EventsRedactParams{AccountID: accountID, EventIds: ids, Payloads: payloads})
	return ids, person, err
}

// Person is what a contact's events said of them: every email and phone they carried as the
// contact's (current, and previous in an update or a merge), and the contacts merged into it.
// An erasure keeps them all out, found from the events when the contact's row is gone.
type Person struct {
	Emails, Phones []string
	Merged         []uuid.UUID
}

// read adds what payload says of the person; false for a tombstone.
func (p *Person) read(payload []byte) bool {
	var ev struct {
		Redacted bool `json:"redacted"`
		Data     struct {
			Contact ContactInfo                `json:"contactInfo"`
			Updated *ContactDetailsUpdatedInfo `json:"contactDetailsUpdatedInfo"`
			Merged  *ContactsMergedInfo        `json:"contactsMergedInfo"`
		} `json:"data"`
	}
	if json.Unmarshal(payload, &ev) != nil {
		return true // not ours to read: redacted all the same
	}
	if ev.Redacted {
		return false
	}
	p.add(ev.Data.Contact.EmailID, "")
	if u := ev.Data.Updated; u != nil {
		p.add(u.Previous.Email, u.Previous.Phone)
		p.add(u.Current.Email, u.Current.Phone)
	}
	if m := ev.Data.Merged; m != nil {
		p.add(m.Previous.Email, m.Previous.Phone)
		p.add(m.Current.Email, m.Current.Phone)
		for _, raw := range m.MergedContactIDs {
			if id, err := uuid.Parse(raw); err == nil && !slices.Contains(p.Merged, id) {
				p.Merged = append(p.Merged, id)
			}
		}
	}
	return true
}

func (p *Person) add(email, phone string) {
	if email != "" && !slices.Contains(p.Emails, email) {
		p.Emails = append(p.Emails, email)
	}
	if phone != "" && !slices.Contains(p.Phones, phone) {
		p.Phones = append(p.Phones, phone)
	}
}

// Join adds what other said of the person.
func (p *Person) Join(other Person) {
	for _, e := range other.Emails {
		p.add(e, "")
	}
	for _, ph := range other.Phones {
		p.add("", ph)
	}
	for _, id := range other.Merged {
		if !slices.Contains(p.Merged, id) {
			p.Merged = append(p.Merged, id)
		}
	}
}

// tombstone is an event's payload with nothing of the person left: each type's detail
// member keeps its required members, emptied (a date becomes the event's own); an
// unsubscription keeps its time and source, which say nothing of the person.
func tombstone(id uuid.UUID, typ EventType, contactID uuid.UUID, at time.Time, was []byte) ([]byte, error) {
	var info any
	switch typ {
	case TagsAdded:
		info = TagsAddedInfo{TagsAdded: []string{}}
	case TagsRemoved:
		info = TagsRemovedInfo{TagsRemoved: []string{}}
	case FormSubmission, EmailClick, DashboardClick, PostcardScan, FelixAIHandoff:
		info = ActivityInfo{OccurredAt: apitime.From(at)}
	case ContactUnsubscribed:
		var old struct {
			Data struct {
				Info ContactUnsubscribedInfo `json:"contactUnsubscribedInfo"`
			} `json:"data"`
		}
		if err := json.Unmarshal(was, &old); err != nil {
			return nil, err
		}
		info = old.Data.Info
	case ContactEnteredSegment, ContactLeftSegment: // which segment is not the person's data
		var old struct {
			Data map[string]json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(was, &old); err != nil {
			return nil, err
		}
		info = old.Data[infoKeys[typ]]
	case ContactEnriched:
		info = ContactEnrichedInfo{ChangedFields: []string{}}
	case ContactDetailsUpdated:
		info = ContactDetailsUpdatedInfo{ChangedFields: []string{}}
	case ContactsMerged:
		info = ContactsMergedInfo{MergedContactIDs: []string{}, ChangedFields: []string{}, TagsAdded: []string{}}
	default:
		info = struct{}{}
	}
	data, err := json.Marshal(map[string]any{"contactInfo": ContactInfo{ContactID: contactID.String()}, infoKeys[typ]: info})
	if err != nil {
		return nil, err
	}
	return json.Marshal(Envelope{EventID: id.String(), EventType: typ, EventDate: apitime.From(at), Data: data, Redacted: true})
}
