package webhook

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apitime"
)

// Redact turns every event about an erased contact into a tombstone, in the caller's
// transaction (the erasure's): the same id, type and date, so the feed's order and the
// receivers' dedupe keys hold, with the contact's id and every other value emptied and
// "redacted": true. A delivery still pending sends the tombstone. It returns the events'
// ids.
func Redact(ctx context.Context, q *db.Queries, accountID, contactID uuid.UUID) ([]uuid.UUID, error) {
	events, err := q.EventsAbout(ctx, db.EventsAboutParams{AccountID: accountID, ContactID: &contactID})
	if err != nil || len(events) == 0 {
		return nil, err
	}
	ids := make([]uuid.UUID, len(events))
	payloads := make([]string, len(events))
	for i, e := range events {
		p, err := tombstone(e.EventID, EventType(e.EventType), contactID, e.OccurredAt, []byte(e.Payload))
		if err != nil {
			return nil, err
		}
		ids[i], payloads[i] = e.EventID, string(p)
	}
	_, err = q.EventsRedact(ctx, db.EventsRedactParams{AccountID: accountID, EventIds: ids, Payloads: payloads})
	return ids, err
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
	case ContactEnriched:
		info = ContactEnrichedInfo{ChangedFields: []string{}}
	case ContactDetailsUpdated:
		info = ContactDetailsUpdatedInfo{ChangedFields: []string{}}
	default:
		info = struct{}{}
	}
	data, err := json.Marshal(map[string]any{"contactInfo": ContactInfo{ContactID: contactID.String()}, infoKeys[typ]: info})
	if err != nil {
		return nil, err
	}
	return json.Marshal(Envelope{EventID: id.String(), EventType: typ, EventDate: apitime.From(at), Data: data, Redacted: true})
}
