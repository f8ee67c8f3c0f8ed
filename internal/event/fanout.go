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
// and EventsRecord (Emit, test events, replays), through record_events, the only writer of new
// deliveries (layers.TestDerivedTablesHaveTheirWritersOnly).

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
	// filtered are the (event, subscription) pairs a filter left out; unevaluated those whose
	// filter could not be evaluated on the event, left out too (a filter fails closed).
	filtered, unevaluated [][2]uuid.UUID
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
	out.filtered, out.unevaluated = keptPairs(p.filtered, kept), keptPairs(p.unevaluated, kept)
	return out
}

func keptPairs(pairs [][2]uuid.UUID, kept func(event uuid.UUID) bool) [][2]uuid.UUID {
	var out [][2]uuid.UUID
	for _, f := range pairs {
		if kept(f[0]) {
			out = append(out, f)
		}
	}
	return out
}

// subscriptionsOf is, for each (event, subscription) pair, its subscription.
func subscriptionsOf(pairs [][2]uuid.UUID) []uuid.UUID {
	subs := make([]uuid.UUID, len(pairs))
	for i, f := range pairs {
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
			if s.filter.m != nil {
				switch wants(s.filter, ev, &payload) {
				case filteredOut:
					p.filtered = append(p.filtered, [2]uuid.UUID{ev.ID, s.id})
					continue
				case unevaluable:
					p.unevaluated = append(p.unevaluated, [2]uuid.UUID{ev.ID, s.id})
					continue
				}
			}
			p.EventIDs, p.SubscriptionIDs, p.Due = append(p.EventIDs, ev.ID), append(p.SubscriptionIDs, s.id), append(p.Due, ev.At)
		}
	}
	return p
}

// verdict is what a filter made of an event.
type verdict int

const (
	wanted verdict = iota
	filteredOut
	unevaluable
)

// wants evaluates a filter on ev, parsing ev into *parsed the first time. An event that cannot
// be evaluated (more JSON values than a filter reads, or past the steps' budget) is not
// delivered: a filter says what its subscriber must not get, so a doubt is settled against
// delivery, and counted on the subscription (unevaluatedEvents) so that its owner sees why.
func wants(f Filter, ev Prepared, parsed **Payload) verdict {
	if *parsed == nil {
		p, err := ParsePayload("event", ev.Payload)
		if err != nil {
			return unevaluable
		}
		*parsed = &p
	}
	switch ok, _, err := f.Match(**parsed); {
	case err != nil:
		return unevaluable
	case !ok:
		return filteredOut
	}
	return wanted
}
