package event

import (
	"time"

	"github.com/google/uuid"
)

// The fan-out: the one place that decides who receives an event. Every writer of events asks
// the account's Audience for a Plan of its events' deliveries, and hands the plan to the
// statement that records the change, which queues exactly those deliveries, and only while
// the account's subscriptions are still those the plan was made from (Plan.Version; migration
// 00040): a writer whose statement reports the plan stale reloads the audience and plans
// again. Filters are evaluated here, in Go, at a bounded cost (match.go), before the
// statement leaves: never inside a statement, nor a group commit that carries other
// accounts' writes.
//
// The statements that queue planned deliveries are ContactCreate, ContactCreateMany, TagsSwapMany
// and EventsRecord (Emit, test events, replays), and no other statement inserts into
// webhook_deliveries (TestDeliveriesComeOnlyFromThePlan).

// Audience is an account's live subscriptions, at Version: what the fan-out plans with.
type Audience struct {
	Version int64
	subs    []audienceSub
}

type audienceSub struct {
	id     uuid.UUID
	typ    EventType
	filter Filter
}

// Wants reports whether a subscription of the audience is of typ: false only when an event of
// typ has nobody to go to (at Version).
func (a *Audience) Wants(typ EventType) bool {
	for _, s := range a.subs {
		if s.typ == typ {
			return true
		}
	}
	return false
}

// Subscription is the live subscription id of the audience, and whether it has it.
func (a *Audience) Subscription(id uuid.UUID) (EventType, Filter, bool) {
	for _, s := range a.subs {
		if s.id == id {
			return s.typ, s.filter, true
		}
	}
	return "", Filter{}, false
}

// only is the audience of subscription id alone (none if it is not live).
func (a *Audience) only(id uuid.UUID) *Audience {
	o := &Audience{Version: a.Version}
	for _, s := range a.subs {
		if s.id == id {
			o.subs = append(o.subs, s)
		}
	}
	return o
}

// Plan is the deliveries of some events, as the fan-out decided them from an Audience: one
// (event, subscription) pair each, due at the event's time.
type Plan struct {
	// Version is the audience's: the statement queues the plan only while it is current.
	Version int64
	// EventIDs and SubscriptionIDs pair up, one delivery each; Due is each delivery's event's time.
	EventIDs, SubscriptionIDs []uuid.UUID
	Due                       []time.Time
	// filtered are the (event, subscription) pairs a filter left out.
	filtered [][2]uuid.UUID
}

// Deliveries is how many deliveries the plan queues.
func (p Plan) Deliveries() int { return len(p.EventIDs) }

// Keep is the plan of the events kept only: a batch's events whose contacts were inserted.
func (p Plan) Keep(kept func(event uuid.UUID) bool) Plan {
	out := Plan{Version: p.Version, EventIDs: []uuid.UUID{}, SubscriptionIDs: []uuid.UUID{}, Due: []time.Time{}}
	for i, ev := range p.EventIDs {
		if kept(ev) {
			out.EventIDs, out.SubscriptionIDs, out.Due = append(out.EventIDs, ev), append(out.SubscriptionIDs, p.SubscriptionIDs[i]), append(out.Due, p.Due[i])
		}
	}
	for _, f := range p.filtered {
		if kept(f[0]) {
			out.filtered = append(out.filtered, f)
		}
	}
	return out
}

// filteredSubscriptions is, for each event a filter left out, its subscription.
func (p Plan) filteredSubscriptions() []uuid.UUID {
	subs := make([]uuid.UUID, len(p.filtered))
	for i, f := range p.filtered {
		subs[i] = f[1]
	}
	return subs
}

// Plan decides the deliveries of events: to each live subscription of an event's type but
// skip, whose filter wants it. An event is parsed once, and only when a subscription of its
// type has a filter.
func (a *Audience) Plan(events []Prepared, skip uuid.UUID) Plan {
	p := Plan{Version: a.Version, EventIDs: []uuid.UUID{}, SubscriptionIDs: []uuid.UUID{}, Due: []time.Time{}}
	for _, ev := range events {
		var payload *Payload
		for _, s := range a.subs {
			if s.typ != ev.Type || s.id == skip {
				continue
			}
			if s.filter.m != nil && !wants(s.filter, ev, &payload) {
				p.filtered = append(p.filtered, [2]uuid.UUID{ev.ID, s.id})
				continue
			}
			p.EventIDs, p.SubscriptionIDs, p.Due = append(p.EventIDs, ev.ID), append(p.SubscriptionIDs, s.id), append(p.Due, ev.At)
		}
	}
	return p
}

// wants evaluates a filter on ev, parsing ev into *parsed the first time. An event that cannot
// be evaluated, which no event contactd writes is (its size is bounded where it is written),
// is delivered: a filter narrows what a subscriber gets, and a doubt is settled for delivery.
func wants(f Filter, ev Prepared, parsed **Payload) bool {
	if *parsed == nil {
		p, err := ParsePayload("event", ev.Payload)
		if err != nil {
			return true
		}
		*parsed = &p
	}
	ok, _, err := f.Match(**parsed)
	return ok || err != nil
}
