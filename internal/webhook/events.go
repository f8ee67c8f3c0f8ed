// Package webhook owns subscriptions and events: it validates and stores subscriptions, and
// writes each event with its deliveries inside the transaction of the change that caused it
// (a transactional outbox), so a committed change always produces its events and a
// rolled-back one never does.
//
// Every event's columns (its id, type, payload exactly as delivered and time) are built here,
// by Prepare. The statements that write them to webhook_events are these, and no others
// (TestOutboxWritersAreListed keeps the list):
//   - EventInsert, by Emit: an event and then its deliveries, one statement each.
//   - EventInsertTest, by SendTest: a test event, left out of the feed.
//   - ContactCreate: a new contact's TagsAdded and ContactEnriched events, in the statement
//     that inserts it, with their deliveries.
//   - ContactCreateMany: the same events for a batch's contacts.
//   - TagsSwap: a tag change's TagsAdded and TagsRemoved events, in the statement that makes
//     it, with their deliveries.
//   - EnrichFinishMany: the ContactEnriched events of an enrichment pass.
//
// One statement rewrites events: EventsRedact, by Redact, turns an erased contact's events
// into tombstones.
//
// The last four are the fast paths: the event rides the change's own statement. When a
// subscription may want it (Emitter.MayHaveSubscribers), ContactCreate and TagsSwap join the
// account's live subscriptions and queue the deliveries in that statement too, so the change
// still goes to PostgreSQL in a group with others (Emitter.Queued then wakes the workers);
// a batch's Deliver queues them in its transaction; enrichment goes through Emit instead.
//
// Every statement that queues deliveries from the account's subscriptions queues them only to
// those whose payload filter wants the event (webhook_filter_matches, see filter.go;
// TestEveryFanOutFilters keeps them so), and reports the others, which Emitter.FilteredOut
// counts.
package webhook

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apitime"
	"github.com/contactd/contactd/internal/store"
	"github.com/contactd/contactd/internal/tracing"
)

// EventType is the kind of an event; a subscription receives one kind.
type EventType string

// The event types of the API.
const (
	FormSubmission        EventType = "FormSubmission"
	ContactEnriched       EventType = "ContactEnriched"
	DashboardClick        EventType = "DashboardClick"
	EmailClick            EventType = "EmailClick"
	PostcardScan          EventType = "PostcardScan"
	ContactUnsubscribed   EventType = "ContactUnsubscribed"
	ContactDetailsUpdated EventType = "ContactDetailsUpdated"
	TagsAdded             EventType = "TagsAdded"
	TagsRemoved           EventType = "TagsRemoved"
	// FelixAIHandoff is the original service's tenth type: an AI assistant handed the
	// contact's conversation to a person.
	FelixAIHandoff EventType = "FelixAIHandoff"
	// ContactErased says a contact's personal data was erased (contactd's own type).
	ContactErased EventType = "ContactErased"
	// ContactsMerged says duplicates were merged into the contact (contactd's own type).
	ContactsMerged EventType = "ContactsMerged"
	// SubscriptionFailing warns that another subscription of the account turned Failing and
	// will be removed unless a delivery succeeds (contactd's own type, about no contact).
	SubscriptionFailing EventType = "SubscriptionFailing"
)

// infoKeys names the member of an event's data that carries the type's details.
var infoKeys = map[EventType]string{
	FormSubmission:        "formSubmissionInfo",
	ContactEnriched:       "contactEnrichedInfo",
	DashboardClick:        "dashboardClickInfo",
	EmailClick:            "emailClickInfo",
	PostcardScan:          "postcardScanInfo",
	ContactUnsubscribed:   "contactUnsubscribedInfo",
	ContactDetailsUpdated: "contactDetailsUpdatedInfo",
	TagsAdded:             "tagsAddedInfo",
	TagsRemoved:           "tagsRemovedInfo",
	FelixAIHandoff:        "felixAIHandoffInfo",
	ContactErased:         "contactErasedInfo",
	ContactsMerged:        "contactsMergedInfo",
	SubscriptionFailing:   "subscriptionFailingInfo",
}

// ContactInfo identifies the contact an event is about; absent ids are "" on the wire.
type ContactInfo struct {
	ContactID           string `json:"contactId"`
	PropertyID          string `json:"propertyId"`
	EmailID             string `json:"emailId"`
	AssignedUserEmailID string `json:"assignedUserEmailId"`
}

// TagsAddedInfo is the detail of a TagsAdded event.
type TagsAddedInfo struct {
	TagsAdded []string `json:"tagsAdded"`
}

// TagsRemovedInfo is the detail of a TagsRemoved event.
type TagsRemovedInfo struct {
	TagsRemoved []string `json:"tagsRemoved"`
}

// ActivityInfo is the detail of FormSubmission, EmailClick, DashboardClick, PostcardScan and
// FelixAIHandoff.
type ActivityInfo struct {
	ActivityID string          `json:"activityId"`
	OccurredAt apitime.Time    `json:"occurredAt"`
	Details    json.RawMessage `json:"details,omitempty"`
}

// Sources of a ContactUnsubscribed event.
const (
	UnsubscribedByActivity = "Activity"
	UnsubscribedByUpdate   = "Update"
	UnsubscribedByMerge    = "Merge"
)

// ContactUnsubscribedInfo is the detail of a ContactUnsubscribed event.
type ContactUnsubscribedInfo struct {
	UnsubscribedAt apitime.Time `json:"unsubscribedAt"`
	Source         string       `json:"source"`
}

// ContactDetails are the fields a ContactDetailsUpdated event compares: name, email and phone
// always ("" when not set), each other field only when it changed.
type ContactDetails struct {
	Name                string     `json:"name"`
	Email               string     `json:"email"`
	Phone               string     `json:"phone"`
	AssignedUserEmailID *string    `json:"assignedUserEmailId,omitempty"`
	RecordStatus        string     `json:"recordStatus,omitempty"`
	CRMFields           *CRMFields `json:"crmFields,omitempty"`
}

// CRMFields are a contact's CRM fields, each present when set.
type CRMFields struct {
	Name        *string       `json:"name,omitempty"`
	URL         *string       `json:"url,omitempty"`
	Source      *string       `json:"source,omitempty"`
	Stage       *string       `json:"stage,omitempty"`
	CreatedDate *apitime.Time `json:"createdDate,omitempty"`
}

// ContactDetailsUpdatedInfo is the detail of a ContactDetailsUpdated event.
type ContactDetailsUpdatedInfo struct {
	ChangedFields []string       `json:"changedFields"`
	Previous      ContactDetails `json:"previous"`
	Current       ContactDetails `json:"current"`
}

// ContactsMergedInfo is the detail of a ContactsMerged event: which contacts went into the
// one it is about, and what that changed of it.
type ContactsMergedInfo struct {
	MergedContactIDs []string       `json:"mergedContactIds"`
	ChangedFields    []string       `json:"changedFields"`
	Previous         ContactDetails `json:"previous"`
	Current          ContactDetails `json:"current"`
	TagsAdded        []string       `json:"tagsAdded"`
}

// ContactErasedInfo is the detail of a ContactErased event: which erasure, and when.
type ContactErasedInfo struct {
	ErasureID string       `json:"erasureId"`
	ErasedAt  apitime.Time `json:"erasedAt"`
}

// SubscriptionFailingInfo is the detail of a SubscriptionFailing event.
type SubscriptionFailingInfo struct {
	SubscriptionID      string       `json:"subscriptionId"`
	EventType           EventType    `json:"eventType"`
	FailingSince        apitime.Time `json:"failingSince"`
	RemovalAt           apitime.Time `json:"removalAt"`
	ConsecutiveFailures int          `json:"consecutiveFailures"`
	LastFailure         string       `json:"lastFailure"`
}

// Address is a structured address as events carry it.
type Address struct {
	AptOrUnitNumber string `json:"aptOrUnitNumber"`
	StreetAddress   string `json:"streetAddress"`
	City            string `json:"city"`
	County          string `json:"county"`
	State           string `json:"state"`
	Zip             string `json:"zip"`
}

// ContactEnrichedInfo is the detail of a ContactEnriched event: what enrichment changed.
type ContactEnrichedInfo struct {
	ChangedFields       []string `json:"changedFields"`
	EmailStatus         string   `json:"emailStatus,omitempty"`
	PreviousEmailStatus string   `json:"previousEmailStatus,omitempty"`
	Address             *Address `json:"address,omitempty"`
}

// Event is something that happened to a contact. Info is the type's detail member.
type Event struct {
	Type      EventType
	ContactID uuid.UUID
	Contact   ContactInfo
	Info      any
	At        time.Time
}

// Envelope is one event as receivers get it, inside {"events": [...]}.
type Envelope struct {
	EventID   string          `json:"eventId"`
	EventType EventType       `json:"eventType"`
	EventDate apitime.Time    `json:"eventDate"`
	Data      json.RawMessage `json:"data"`
	// Redacted marks a tombstone: the event of a contact since erased (Redact).
	Redacted bool `json:"redacted,omitempty"`
}

// Enqueuer schedules the delivery of a stored event to one subscription, in the same
// transaction. The delivery package provides it; nil means deliveries are only recorded.
type Enqueuer interface {
	EnqueueDelivery(ctx context.Context, tx store.Tx, d Delivery) error
	// Wake tells this process's workers that deliveries were queued and committed by a
	// statement of their own (a create or a tag change that writes its deliveries itself).
	Wake()
}

// Delivery names one (event, subscription) pair to deliver.
type Delivery struct {
	AccountID      uuid.UUID
	DeliveryID     uuid.UUID
	SubscriptionID uuid.UUID
	EventID        uuid.UUID
}

// Emitter writes events and their deliveries in the caller's transaction.
type Emitter struct {
	enqueuer Enqueuer
	subs     *Subscribers
	filtered *FilterTally
}

// NewEmitter returns an Emitter that schedules deliveries with enq; subs (may be nil) tells
// changes which events nobody subscribes to; filtered (may be nil) counts the events that
// subscriptions' filters leave out.
func NewEmitter(enq Enqueuer, subs *Subscribers, filtered *FilterTally) *Emitter {
	return &Emitter{enqueuer: enq, subs: subs, filtered: filtered}
}

// FilteredOut counts, for each of subs (the account's), an event its filter left out: a
// statement that queued deliveries itself reports them so.
func (e *Emitter) FilteredOut(accountID uuid.UUID, subs []uuid.UUID) { e.filtered.Add(accountID, subs) }

// MayHaveSubscribers reports whether an event of typ for the account may have a
// subscriber: false only when it certainly has none, and the change may then record the event
// in its own statement instead of calling Emit in a transaction (there are no deliveries).
func (e *Emitter) MayHaveSubscribers(ctx context.Context, accountID uuid.UUID, typ EventType) bool {
	return e.subs.MayHave(ctx, accountID, typ)
}

// Queued tells the delivery workers of this process that a committed statement queued
// deliveries, so they are sent at once instead of at the workers' next poll.
func (e *Emitter) Queued() {
	if e.enqueuer != nil {
		e.enqueuer.Wake()
	}
}

// Prepared is an event ready to be written: its id, and its payload exactly as receivers
// and the events feed get it.
type Prepared struct {
	ID      uuid.UUID
	Type    EventType
	Payload []byte
	At      time.Time
	// Trace is the traceparent of the event's span, which its delivery attempts continue
	// ("" untraced).
	Trace string
}

// Prepare gives ev its id and payload, for a statement that records it with the change; in a
// traced request, it gives the event a span of its own (tracing).
func Prepare(ctx context.Context, ev Event) (Prepared, error) {
	id := NewEventID(ev.At)
	payload, err := envelope(id, ev)
	p := Prepared{ID: id, Type: ev.Type, Payload: payload, At: ev.At}
	if err == nil && tracing.Traced(ctx) {
		ctx, span := tracing.Tracer().Start(ctx, "event "+string(ev.Type), trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithAttributes(attribute.String("contactd.event_id", id.String()), attribute.String("contactd.event_type", string(ev.Type))))
		p.Trace = tracing.Traceparent(ctx)
		span.End()
	}
	return p, err
}

// trace is how a statement stores a traceparent: NULL when there is none.
func traceOf(p Prepared) *string {
	if p.Trace == "" {
		return nil
	}
	return &p.Trace
}

// Emit records ev, subscribed to or not (the events feed has every event), and queues its
// deliveries to the live subscriptions of its type, all in the caller's transaction.
func (e *Emitter) Emit(ctx context.Context, tx store.Tx, accountID uuid.UUID, ev Event) error {
	return e.emit(ctx, tx, accountID, ev, uuid.Nil)
}

// EmitAbout is Emit for an event about the subscription about, which does not get it.
func (e *Emitter) EmitAbout(ctx context.Context, tx store.Tx, accountID uuid.UUID, ev Event, about uuid.UUID) error {
	return e.emit(ctx, tx, accountID, ev, about)
}

func (e *Emitter) emit(ctx context.Context, tx store.Tx, accountID uuid.UUID, ev Event, skip uuid.UUID) error {
	p, err := Prepare(ctx, ev)
	if err != nil {
		return err
	}
	var contactID *uuid.UUID
	if ev.ContactID != uuid.Nil {
		contactID = &ev.ContactID
	}
	if err := tx.EventInsert(ctx, db.EventInsertParams{AccountID: accountID, EventID: p.ID,
		EventType: string(ev.Type), ContactID: contactID, Payload: p.Payload, OccurredAt: ev.At, Trace: traceOf(p)}); err != nil {
		return err
	}
	return e.deliver(ctx, tx, accountID, p, skip)
}

// Deliver queues the deliveries of a recorded event to the live subscriptions of its type
// whose filters want it, in the caller's transaction (the one that recorded it).
func (e *Emitter) Deliver(ctx context.Context, tx store.Tx, accountID uuid.UUID, p Prepared) error {
	return e.deliver(ctx, tx, accountID, p, uuid.Nil)
}

func (e *Emitter) deliver(ctx context.Context, tx store.Tx, accountID uuid.UUID, p Prepared, skip uuid.UUID) error {
	rows, err := tx.SubscriptionsForEvent(ctx, db.SubscriptionsForEventParams{AccountID: accountID,
		EventType: string(p.Type), Payload: string(p.Payload)})
	if err != nil {
		return err
	}
	var filtered []uuid.UUID
	for _, row := range rows {
		sub := row.SubscriptionID
		if sub == skip {
			continue
		}
		if !row.Wanted {
			filtered = append(filtered, sub)
			continue
		}
		d := Delivery{AccountID: accountID, DeliveryID: uuid.Must(uuid.NewV7()), SubscriptionID: sub, EventID: p.ID}
		if err := tx.DeliveryInsert(ctx, db.DeliveryInsertParams{AccountID: accountID, DeliveryID: d.DeliveryID,
			SubscriptionID: sub, EventID: p.ID, NextAttemptAt: &p.At}); err != nil {
			return err
		}
		if e.enqueuer != nil {
			if err := e.enqueuer.EnqueueDelivery(ctx, tx, d); err != nil {
				return err
			}
		}
	}
	if len(filtered) > 0 {
		tx.AfterCommit(func() { e.FilteredOut(accountID, filtered) })
	}
	return nil
}

func envelope(id uuid.UUID, ev Event) ([]byte, error) {
	data, err := json.Marshal(map[string]any{"contactInfo": ev.Contact, infoKeys[ev.Type]: ev.Info})
	if err != nil {
		return nil, err
	}
	return json.Marshal(Envelope{EventID: id.String(), EventType: ev.Type, EventDate: apitime.From(ev.At), Data: data})
}

// InfoMember names the member of an event's data that carries typ's details ("" for a type
// contactd does not know).
func InfoMember(typ EventType) string { return infoKeys[typ] }
