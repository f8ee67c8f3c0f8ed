// Package event owns events: it writes each event with its deliveries inside the transaction
// of the change that caused it (a transactional outbox), so a committed change always
// produces its events and a rolled-back one never does; it decides who receives each one
// (the fan-out, with the subscriptions' payload filters); it serves the events feed and
// prunes it after the retention (feed.go); and it turns an erased person's events into
// tombstones (redact.go).
//
// Every event's columns (its id, type, payload exactly as delivered and time) are built here,
// by Prepare, and who receives it is decided in one place, the fan-out (fanout.go). One SQL
// function writes events and their deliveries, record_events (migration 00055), called from
// inside the statement that makes the change, so that an event is recorded exactly when its
// change is. These statements call it, and no others (layers.TestDerivedTablesHaveTheirWritersOnly):
//   - EventsRecord, by Emitter.Record (Emit, test events, replays): events and their planned
//     deliveries.
//   - ContactCreate: a new contact's TagsAdded and ContactEnriched events, with their planned
//     deliveries, if the statement inserted it.
//   - ContactCreateMany: the same for a batch's contacts.
//   - TagsSwapMany: tag changes' TagsAdded and TagsRemoved events, of the changes the
//     statement made (a group of them at once), with their planned deliveries.
//   - EnrichFinishMany: the ContactEnriched events of an enrichment pass that nobody is
//     subscribed to.
//
// One statement rewrites events: EventsRedact, by Redact, turns an erased contact's events
// into tombstones.
//
// The last four are the fast paths: the event rides the change's own statement, which goes
// to PostgreSQL in a group with others, and queues the plan the writer made before sending it
// (Emitter.Audience, Audience.Plan); Emitter.Planned then counts what filters left out and
// wakes the workers.
package event

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apitime"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/platform/tracing"
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
	// ContactEnteredSegment and ContactLeftSegment say the contact became, or stopped being, a
	// member of a segment (contactd's own types).
	ContactEnteredSegment EventType = "ContactEnteredSegment"
	ContactLeftSegment    EventType = "ContactLeftSegment"
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
	ContactEnteredSegment: "contactEnteredSegmentInfo",
	ContactLeftSegment:    "contactLeftSegmentInfo",
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
	// CustomFields are the custom fields that changed, each with its value (null: none).
	CustomFields map[string]any `json:"customFields,omitempty"`
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

// SegmentInfo is the detail of ContactEnteredSegment and ContactLeftSegment: which segment.
type SegmentInfo struct {
	SegmentID   string `json:"segmentId"`
	SegmentName string `json:"segmentName"`
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

// Enqueuer is told of deliveries queued: the delivery package wakes its workers.
type Enqueuer interface {
	// Queued tells this process's workers that deliveries to subscriptions (an id a delivery)
	// were queued and committed.
	Queued(subscriptions []uuid.UUID)
}

// Emitter writes events and their deliveries, planned by the fan-out.
type Emitter struct {
	enqueuer Enqueuer
	subs     *Subscribers
	filtered *FilterTally
}

// NewEmitter returns an Emitter that tells enq (may be nil) of the deliveries it queues;
// subs knows each account's audience; filtered (may be nil) counts the events that
// subscriptions' filters leave out.
func NewEmitter(enq Enqueuer, subs *Subscribers, filtered *FilterTally) *Emitter {
	return &Emitter{enqueuer: enq, subs: subs, filtered: filtered}
}

// Audience is the account's audience, to plan a change's events with (q: a transaction's
// queries, or nil).
func (e *Emitter) Audience(ctx context.Context, q *db.Queries, accountID uuid.UUID) (*Audience, error) {
	return e.subs.Audience(ctx, q, accountID)
}

// Reload reads the account's audience again: a statement found the plan's version stale.
func (e *Emitter) Reload(ctx context.Context, q *db.Queries, accountID uuid.UUID) (*Audience, error) {
	return e.subs.Reload(ctx, q, accountID)
}

// Forget drops what this process holds of the account's audience: its subscriptions changed.
func (e *Emitter) Forget(accountID uuid.UUID) { e.subs.forget(accountID) }

// MayHaveSubscribers reports whether an event of typ for the account may have a
// subscriber: false only when it certainly has none.
func (e *Emitter) MayHaveSubscribers(ctx context.Context, accountID uuid.UUID, typ EventType) bool {
	return e.subs.MayHave(ctx, accountID, typ)
}

// Planned is told, once the statement that queued a plan has committed, what it queued: it
// counts the events filters left out and wakes the workers.
func (e *Emitter) Planned(accountID uuid.UUID, p Plan) {
	e.filtered.Add(accountID, subscriptionsOf(p.filtered), subscriptionsOf(p.unevaluated))
	if p.Deliveries() > 0 && e.enqueuer != nil {
		e.enqueuer.Queued(p.SubscriptionIDs)
	}
}

// Prepared is an event ready to be written: its id, and its payload exactly as receivers
// and the events feed get it.
type Prepared struct {
	ID        uuid.UUID
	Type      EventType
	ContactID uuid.UUID
	Payload   []byte
	At        time.Time
	// Trace is the traceparent of the event's span, which its delivery attempts continue
	// ("" untraced).
	Trace string
}

// Prepare gives ev its id and payload, for a statement that records it with the change; in a
// traced request, it gives the event a span of its own (tracing).
func Prepare(ctx context.Context, ev Event) (Prepared, error) {
	id := NewEventID(ev.At)
	payload, err := envelope(id, ev)
	p := Prepared{ID: id, Type: ev.Type, ContactID: ev.ContactID, Payload: payload, At: ev.At}
	if err == nil && tracing.Traced(ctx) {
		ctx, span := tracing.Tracer().Start(ctx, "event "+string(ev.Type), trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithAttributes(attribute.String("contactd.event_id", id.String()), attribute.String("contactd.event_type", string(ev.Type))))
		p.Trace = tracing.Traceparent(ctx)
		span.End()
	}
	return p, err
}

// Emit records ev, subscribed to or not (the events feed has every event), and queues its
// deliveries as the fan-out plans them, all in the caller's transaction.
func (e *Emitter) Emit(ctx context.Context, tx store.Tx, accountID uuid.UUID, ev Event) error {
	return e.EmitAbout(ctx, tx, accountID, ev, uuid.Nil)
}

// EmitAbout is Emit for an event about the subscription about, which does not get it.
func (e *Emitter) EmitAbout(ctx context.Context, tx store.Tx, accountID uuid.UUID, ev Event, about uuid.UUID) error {
	p, err := Prepare(ctx, ev)
	if err != nil {
		return err
	}
	_, err = e.Record(ctx, tx, accountID, Recording{Events: []Prepared{p}, Skip: about})
	return err
}

// Recording is what Record writes: events and the deliveries the fan-out plans for them, or,
// with To set, deliveries to that one subscription only (a test event; a replay, with no
// events and the recorded ones in Replayed).
type Recording struct {
	Events []Prepared
	// Skip is a subscription that gets none of the events (the one they are about).
	Skip uuid.UUID
	// Test events are about no contact, and left out of the feed.
	Test bool
	// To, when set, is the only subscription the events go to, filter or not (a test event),
	// or, with Replayed, whose filter picks which of those recorded events it gets again.
	To       uuid.UUID
	Replayed []Prepared
}

// Record writes r in the caller's transaction: its events, and their deliveries as the
// fan-out plans them from the account's audience, planned again if the statement finds the
// audience moved on. It returns the deliveries' ids, in the plan's order.
func (e *Emitter) Record(ctx context.Context, tx store.Tx, accountID uuid.UUID, r Recording) ([]uuid.UUID, error) {
	var ids []uuid.UUID
	plan, err := e.WithPlan(ctx, tx.Queries, accountID, r.plan, func(plan Plan) (bool, error) {
		ids = make([]uuid.UUID, plan.Deliveries())
		for i := range ids {
			ids[i] = uuid.Must(uuid.NewV7())
		}
		row, err := tx.EventsRecord(ctx, recordParams(accountID, r, plan, ids))
		return row.Current, err
	})
	if err != nil {
		return nil, err
	}
	tx.AfterCommit(func() { e.Planned(accountID, plan) })
	return ids, nil
}

// WithPlan plans from the account's audience (on q when it is not nil) and runs write with the
// plan; while write reports the plan stale (the statement found the account's subscriptions
// at another version, and wrote nothing), it reads the audience again and plans again. It
// returns the plan written, to be told to Planned once its statement has committed.
func (e *Emitter) WithPlan(ctx context.Context, q *db.Queries, accountID uuid.UUID, plan func(*Audience) Plan,
	write func(Plan) (current bool, err error)) (Plan, error) {
	aud, err := e.subs.Audience(ctx, q, accountID)
	for err == nil {
		p := plan(aud)
		var current bool
		if current, err = write(p); err == nil && current {
			return p, nil
		}
		if err == nil {
			aud, err = e.subs.Reload(ctx, q, accountID)
		}
	}
	return Plan{}, err
}

// Of is the plan of events to the audience, for WithPlan.
func Of(events []Prepared) func(*Audience) Plan {
	return func(a *Audience) Plan { return a.Plan(events, uuid.Nil) }
}

// plan is what r queues from aud.
func (r Recording) plan(aud *Audience) Plan {
	switch {
	case r.To == uuid.Nil:
		return aud.Plan(r.Events, r.Skip)
	case r.Replayed != nil:
		return aud.only(r.To).Plan(r.Replayed, uuid.Nil)
	default: // a test event: whatever the filter
		p := Plan{Version: aud.Version}
		for _, ev := range r.Events {
			p.EventIDs, p.SubscriptionIDs, p.Due = append(p.EventIDs, ev.ID), append(p.SubscriptionIDs, r.To), append(p.Due, ev.At)
		}
		return p
	}
}

func recordParams(accountID uuid.UUID, r Recording, plan Plan, ids []uuid.UUID) db.EventsRecordParams {
	p := db.EventsRecordParams{AccountID: accountID, SubscriptionsVersion: plan.Version, Test: r.Test,
		EventIds: []uuid.UUID{}, EventTypes: []string{}, EventContactIds: []uuid.UUID{}, EventPayloads: []string{},
		EventTimes: []time.Time{}, EventTraces: []string{}, Now: time.Now(),
		DeliveryIds: ids, DeliveryEventIds: plan.EventIDs, DeliverySubscriptionIds: plan.SubscriptionIDs, DeliveryDue: plan.Due}
	for _, ev := range r.Events {
		p.EventIds, p.EventTypes = append(p.EventIds, ev.ID), append(p.EventTypes, string(ev.Type))
		p.EventContactIds, p.EventPayloads = append(p.EventContactIds, ev.ContactID), append(p.EventPayloads, string(ev.Payload))
		p.EventTimes, p.EventTraces = append(p.EventTimes, ev.At), append(p.EventTraces, ev.Trace)
		p.Now = ev.At
	}
	return p
}

// envelope is ev's payload: the bytes encoding/json makes of an Envelope whose data is
// {"contactInfo": ..., <the type's info member>: ...} with its members in key order, written
// directly (a write that enters ten segments prepares ten events; TestEnvelopeIsEncodingJSONs
// holds the two to the same bytes).
func envelope(id uuid.UUID, ev Event) ([]byte, error) {
	contact, err := json.Marshal(ev.Contact)
	if err != nil {
		return nil, err
	}
	info, err := json.Marshal(ev.Info)
	if err != nil {
		return nil, err
	}
	typ, err := json.Marshal(ev.Type)
	if err != nil {
		return nil, err
	}
	key, err := json.Marshal(infoKeys[ev.Type])
	if err != nil {
		return nil, err
	}
	date, _ := apitime.From(ev.At).MarshalJSON()
	b := make([]byte, 0, 100+len(typ)+len(date)+len(contact)+len(key)+len(info))
	b = append(b, `{"eventId":"`...)
	b = append(b, id.String()...)
	b = append(b, `","eventType":`...)
	b = append(b, typ...)
	b = append(b, `,"eventDate":`...)
	b = append(b, date...)
	b = append(b, `,"data":{`...)
	member := func(b, key, value []byte) []byte { return append(append(append(b, key...), ':'), value...) }
	if infoKeys[ev.Type] < "contactInfo" {
		b = append(member(b, key, info), ',')
		b = member(b, []byte(`"contactInfo"`), contact)
	} else {
		b = append(member(b, []byte(`"contactInfo"`), contact), ',')
		b = member(b, key, info)
	}
	return append(b, "}}"...), nil
}

// InfoMember names the member of an event's data that carries typ's details ("" for a type
// contactd does not know).
func InfoMember(typ EventType) string { return infoKeys[typ] }
