// Package subscription owns webhook subscriptions, the /webhooks operations: it validates and
// stores them (destination rules, payload filters, throttles, pause), seals their signing
// secrets at rest and rotates them, sends test events, and says when a failing one will be
// removed (the delivery workers' sweep removes it). Who receives an event is decided by
// package event's fan-out, which reads the subscriptions this package writes.
package subscription

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/contactd/contactd/internal/event"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/platform/ids"
	"github.com/contactd/contactd/internal/platform/store"
)

// MaxLivePerType is how many subscriptions that are not Removed an account may have for
// one event type.
const MaxLivePerType = 3

// RemoveFailingAfter is how long a Failing subscription may go without a success before the
// sweep removes it.
const RemoveFailingAfter = 5 * 24 * time.Hour

// Why a subscription was removed.
const (
	RemovedDeleted        = "Deleted"
	RemovedGone           = "Gone"
	RemovedFailingTooLong = "FailingTooLong"
)

// Health is how a subscription's receiver is doing.
type Health struct {
	ConsecutiveFailures int
	LastSuccessAt       *time.Time
	LastFailureAt       *time.Time
	LastFailure         string
	FailingSince        *time.Time
	// RemovalAt is, while the subscription is Failing, when the sweep may remove it.
	RemovalAt *time.Time
	// RemovedReason is why a Removed subscription was removed ("" when not recorded).
	RemovedReason string
}

// RemovalAt is when a Failing subscription whose last success (or creation) was at may be
// removed.
func RemovalAt(lastSuccess *time.Time, created time.Time) time.Time {
	if lastSuccess != nil {
		return lastSuccess.Add(RemoveFailingAfter)
	}
	return created.Add(RemoveFailingAfter)
}

// Subscription is a webhook subscription. Secret is set only right after creation.
type Subscription struct {
	ID        uuid.UUID
	URL       string
	EventType event.EventType
	Status    string
	Secret    string
	// MaxPerSecond throttles the subscription's deliveries; nil when it has no throttle.
	MaxPerSecond *int
	// PausedAt is when the subscription was paused; nil while it sends.
	PausedAt *time.Time
	// Filter is the subscription's payload filter as given (nil: none); FilteredEvents counts
	// the events it left out, and UnevaluatedEvents those it could not be evaluated on (not
	// delivered either), as flushed so far (FilterTally).
	Filter            json.RawMessage
	FilteredEvents    int64
	UnevaluatedEvents int64
	Health            Health
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// Service manages subscriptions.
type Service struct {
	store   *store.Store
	events  *event.Emitter
	secrets *Secrets
	now     func() time.Time
	urls    URLRules
}

// URLRules say which destinations a subscription may have besides https:// URLs.
type URLRules struct {
	// AllowHTTP admits plain http:// URLs (local development).
	AllowHTTP bool
	// AllowNATS admits nats:<subject> destinations (a NATS server is configured).
	AllowNATS bool
}

// NewService returns a Service. events writes its test events, and its audiences are what
// subscription changes invalidate; secrets seals the signing secrets.
func NewService(st *store.Store, events *event.Emitter, secrets *Secrets, now func() time.Time, urls URLRules) *Service {
	return &Service{store: st, events: events, secrets: secrets, now: now, urls: urls}
}

// NATSSubject is the subject of a nats:<subject> destination; ok is false for a URL.
func NATSSubject(destination string) (subject string, ok bool) {
	return strings.CutPrefix(destination, "nats:")
}

// natsSubject checks a subject: tokens of letters, digits, - and _ joined by dots, no
// wildcards, at most 128 characters (contactd puts its prefix and the account's id before it).
func natsSubject(subject string) bool {
	if subject == "" || len(subject) > 128 {
		return false
	}
	for _, token := range strings.Split(subject, ".") {
		if token == "" {
			return false
		}
		for _, r := range token {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// RotateSecret gives a subscription a new signing secret (see Secrets.Rotate).
func (s *Service) RotateSecret(ctx context.Context, accountID uuid.UUID, rawID string) (Rotated, error) {
	return s.secrets.Rotate(ctx, accountID, rawID)
}

// NewSubscription is what a subscription is created with.
type NewSubscription struct {
	URL       string
	EventType event.EventType
	// MaxPerSecond throttles its deliveries (nil: no throttle).
	MaxPerSecond *int
	// Filter is its payload filter (nil or empty: none), checked by ParseFilter.
	Filter map[string]any
}

// Create validates and stores a subscription, returning it with its signing secret.
func (s *Service) Create(ctx context.Context, accountID uuid.UUID, in NewSubscription) (Subscription, error) {
	rawURL, typ, maxPerSecond := in.URL, in.EventType, in.MaxPerSecond
	if err := s.checkURL(rawURL); err != nil {
		return Subscription{}, err
	}
	filter, hasFilter, err := event.ParseFilter("body.filter", in.Filter)
	if err != nil {
		return Subscription{}, err
	}
	var row db.WebhookSubscription
	id := uuid.Must(uuid.NewV7())
	plain, sealed := s.secrets.newSubscriptionSecret(accountID, id)
	err = s.store.InTx(ctx, func(tx store.Tx) error {
		// The account row lock makes count-then-insert safe against racing creates.
		if err := tx.AccountLock(ctx, accountID); err != nil {
			return err
		}
		n, err := tx.SubscriptionCountLive(ctx, db.SubscriptionCountLiveParams{AccountID: accountID, EventType: string(typ)})
		if err != nil {
			return err
		}
		if n >= MaxLivePerType {
			return apperr.Invalid(apperr.Field("body.eventType", "limit",
				"an account can have at most 3 subscriptions per event type that are not Removed"))
		}
		p := db.SubscriptionInsertParams{
			AccountID: accountID, SubscriptionID: id, Url: rawURL,
			EventType: string(typ), SecretSealed: &sealed, MaxPerSecond: int32Ptr(maxPerSecond), CreatedAt: s.now(),
		}
		if hasFilter {
			p.Filter, p.FilterPath = filter.JSON, &filter.Path
		}
		row, err = tx.SubscriptionInsert(ctx, p)
		if err != nil {
			return err
		}
		return event.Announce(ctx, tx, accountID)
	})
	s.forget(accountID)
	if err != nil {
		return Subscription{}, err
	}
	sub := fromRow(row)
	sub.Secret = plain
	return sub, nil
}

// List returns the account's subscriptions, newest first, without secrets.
func (s *Service) List(ctx context.Context, accountID uuid.UUID) ([]Subscription, error) {
	var rows []db.WebhookSubscription
	err := s.store.Do(ctx, func(q *db.Queries) (err error) {
		rows, err = q.SubscriptionList(ctx, accountID)
		return err
	})
	subs := make([]Subscription, len(rows))
	for i, r := range rows {
		subs[i] = fromRow(r)
	}
	return subs, err
}

func (s *Service) checkURL(raw string) error {
	invalid := func(msg string) error { return apperr.Invalid(apperr.Field("body.url", "format", msg)) }
	if subject, isNATS := NATSSubject(raw); isNATS {
		switch {
		case !s.urls.AllowNATS:
			return invalid("nats: destinations need a NATS server this contactd is configured with (CONTACTD_NATS_URL)")
		case !natsSubject(subject):
			return invalid("a nats: destination is a subject: tokens of letters, digits, - and _ joined by dots, no wildcards, at most 128 characters")
		}
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" {
		return invalid("must be an absolute URL")
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !s.urls.AllowHTTP {
			return invalid("must use https://")
		}
	default:
		return invalid("must use https://")
	}
	if u.User != nil {
		return invalid("must not contain credentials")
	}
	return nil
}

func fromRow(r db.WebhookSubscription) Subscription {
	sub := Subscription{ID: r.SubscriptionID, URL: r.Url, EventType: event.EventType(r.EventType),
		Status: r.Status, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, PausedAt: r.PausedAt,
		Filter: r.Filter, FilteredEvents: r.FilteredEvents, UnevaluatedEvents: r.UnevaluatedEvents,
		Health: Health{ConsecutiveFailures: int(r.ConsecutiveFailures), LastSuccessAt: r.LastSuccessAt,
			LastFailureAt: r.LastFailureAt, FailingSince: r.FailingSince}}
	if r.LastFailure != nil {
		sub.Health.LastFailure = *r.LastFailure
	}
	if r.RemovedReason != nil {
		sub.Health.RemovedReason = *r.RemovedReason
	}
	if r.Status == "Failing" {
		at := RemovalAt(r.LastSuccessAt, r.CreatedAt)
		sub.Health.RemovalAt = &at
	}
	if r.MaxPerSecond != nil {
		n := int(*r.MaxPerSecond)
		sub.MaxPerSecond = &n
	}
	return sub
}

func int32Ptr(n *int) *int32 {
	if n == nil {
		return nil
	}
	v := int32(*n)
	return &v
}

// SetThrottle sets the subscription's throttle, or lifts it when maxPerSecond is nil.
func (s *Service) SetThrottle(ctx context.Context, accountID uuid.UUID, rawID string, maxPerSecond *int) (Subscription, error) {
	return s.update(ctx, rawID, func(q *db.Queries, id uuid.UUID) (db.WebhookSubscription, error) {
		return q.SubscriptionSetThrottle(ctx, db.SubscriptionSetThrottleParams{AccountID: accountID,
			SubscriptionID: id, MaxPerSecond: int32Ptr(maxPerSecond), Now: s.now()})
	})
}

// SetPaused pauses the subscription (its deliveries wait, none is lost) or resumes it.
func (s *Service) SetPaused(ctx context.Context, accountID uuid.UUID, rawID string, paused bool) (Subscription, error) {
	return s.update(ctx, rawID, func(q *db.Queries, id uuid.UUID) (db.WebhookSubscription, error) {
		return q.SubscriptionSetPaused(ctx, db.SubscriptionSetPausedParams{AccountID: accountID,
			SubscriptionID: id, Paused: paused, Now: s.now()})
	})
}

// SetFilter sets the subscription's payload filter, or removes it when filter is empty, for
// the events written from then on (deliveries already queued stay).
func (s *Service) SetFilter(ctx context.Context, accountID uuid.UUID, rawID string, filter map[string]any) (Subscription, error) {
	f, ok, err := event.ParseFilter("body.filter", filter)
	if err != nil {
		return Subscription{}, err
	}
	id, found := ids.Parse(rawID)
	if !found {
		return Subscription{}, ErrNotFound
	}
	p := db.SubscriptionSetFilterParams{AccountID: accountID, SubscriptionID: id, Now: s.now()}
	if ok {
		p.Filter, p.FilterPath = f.JSON, &f.Path
	}
	var row db.WebhookSubscription
	err = s.store.InTx(ctx, func(tx store.Tx) (err error) {
		if row, err = tx.SubscriptionSetFilter(ctx, p); err != nil {
			return err
		}
		return event.Announce(ctx, tx, accountID) // plans made with the old filter are refused
	})
	s.forget(accountID)
	if errors.Is(err, apperr.ErrNoRows) {
		return Subscription{}, ErrNotFound
	}
	return fromRow(row), err
}

// FilterTest is a filter-test's answer: whether the filter wants the event, with both as
// evaluated (Filter nil: the subscription has none).
type FilterTest struct {
	Matches bool
	Filter  json.RawMessage
	Event   json.RawMessage
}

// TestFilter evaluates filter (nil: the subscription's own) against ev (nil: example, the
// catalog's example of the subscription's type), as the fan-out does: it costs one evaluation.
func (s *Service) TestFilter(ctx context.Context, accountID uuid.UUID, rawID string, filter map[string]any,
	ev json.RawMessage, example func(event.EventType) json.RawMessage) (FilterTest, error) {
	sub, err := s.Get(ctx, accountID, rawID)
	if err != nil {
		return FilterTest{}, err
	}
	out := FilterTest{Filter: sub.Filter, Event: ev}
	if out.Event == nil {
		out.Event = example(sub.EventType)
	}
	var f event.Filter
	if filter != nil {
		given, ok, err := event.ParseFilter("body.filter", filter)
		if err != nil {
			return FilterTest{}, err
		}
		f, out.Filter = given, nil
		if ok {
			out.Filter = f.JSON
		}
	} else if f, err = event.StoredFilter(sub.Filter); err != nil {
		return FilterTest{}, err
	}
	p, err := event.ParsePayload("body.event", out.Event)
	if err != nil {
		return FilterTest{}, err
	}
	out.Matches, _, err = f.Match(p) // within MaxFilterSteps: the filter's and the event's limits
	return out, err
}

// update changes one setting of the subscription rawID names with a one-statement write that
// returns its row; an id that is not one, or no row, is ErrNotFound.
func (s *Service) update(ctx context.Context, rawID string, write func(q *db.Queries, id uuid.UUID) (db.WebhookSubscription, error)) (Subscription, error) {
	id, ok := ids.Parse(rawID)
	if !ok {
		return Subscription{}, ErrNotFound
	}
	var row db.WebhookSubscription
	err := s.store.Do(ctx, func(q *db.Queries) (err error) {
		row, err = write(q, id)
		return err
	})
	if errors.Is(err, apperr.ErrNoRows) {
		return Subscription{}, ErrNotFound
	}
	return fromRow(row), err
}

// ErrNotFound is the answer for an unknown subscription, or another account's.
var ErrNotFound = apperr.New(apperr.KindNotFound, "SubscriptionDoesNotExist", "subscription does not exist")

// Remove marks a subscription Removed; removing it again succeeds.
func (s *Service) Remove(ctx context.Context, accountID uuid.UUID, rawID string) error {
	id, ok := ids.Parse(rawID)
	if !ok {
		return ErrNotFound
	}
	var n int64
	err := s.store.InTx(ctx, func(tx store.Tx) (err error) {
		n, err = tx.SubscriptionRemove(ctx, db.SubscriptionRemoveParams{AccountID: accountID, SubscriptionID: id, Now: s.now(),
			Reason: RemovedDeleted})
		if err != nil || n == 0 {
			return err
		}
		return event.Announce(ctx, tx, accountID)
	})
	s.forget(accountID)
	if err == nil && n == 0 {
		return ErrNotFound
	}
	return err
}

// forget drops the account from this process's cache at once, not waiting for its own
// notification: a client that created a subscription sees its events from the next request.
func (s *Service) forget(accountID uuid.UUID) { s.events.Forget(accountID) }

// Get returns one of the account's subscriptions, without its secret.
func (s *Service) Get(ctx context.Context, accountID uuid.UUID, rawID string) (Subscription, error) {
	id, ok := ids.Parse(rawID)
	if !ok {
		return Subscription{}, ErrNotFound
	}
	var row db.WebhookSubscription
	err := s.store.Do(ctx, func(q *db.Queries) (err error) {
		row, err = q.SubscriptionGet(ctx, db.SubscriptionGetParams{AccountID: accountID, SubscriptionID: id})
		return err
	})
	if errors.Is(err, apperr.ErrNoRows) {
		return Subscription{}, ErrNotFound
	}
	return fromRow(row), err
}
