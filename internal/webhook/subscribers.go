package webhook

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/store"
)

// subscribersChannel carries the id of an account whose live subscriptions changed ("" for
// any account): SubscriptionsChangedNotify.
const subscribersChannel = "contactd_subscriptions_changed"

// SubscribersTTL bounds how long the event types an account subscribes to are remembered
// without asking the database. Subscription changes do not wait for it: every process
// forgets the account as soon as the changing transaction commits (LISTEN/NOTIFY).
const SubscribersTTL = time.Minute

// Subscribers remembers, per account, the event types it has live subscriptions to. It lets
// a change that nobody subscribes to skip its event entirely: no subscription lookup, often
// no transaction (one statement instead of five round trips). A "nobody" is answered only
// while the listener hears every subscription change (store.Listen); otherwise the answer is
// "maybe", and the change takes the path where Emit looks the subscriptions up itself, in the
// change's transaction.
type Subscribers struct {
	store   *store.Store
	now     func() time.Time
	mu      sync.RWMutex
	entries map[uuid.UUID]subscribedTypes
	// gen changes on every invalidation; a lookup that started before one does not store its
	// (possibly outdated) result.
	gen       atomic.Uint64
	listening atomic.Bool
}

type subscribedTypes struct {
	types   []string
	expires time.Time
}

// NewSubscribers returns the cache, off until store.Listen runs it.
func NewSubscribers(st *store.Store, now func() time.Time) *Subscribers {
	return &Subscribers{store: st, now: now, entries: map[uuid.UUID]subscribedTypes{}}
}

// MayHave reports whether the account may have a live subscription to typ: false only when
// it certainly has none. A nil Subscribers always answers true.
func (s *Subscribers) MayHave(ctx context.Context, accountID uuid.UUID, typ EventType) bool {
	if s == nil || !s.listening.Load() {
		return true
	}
	now := s.now()
	s.mu.RLock()
	e, ok := s.entries[accountID]
	s.mu.RUnlock()
	if !ok || now.After(e.expires) {
		gen := s.gen.Load()
		var types []string
		err := s.store.Read(ctx, func(q *db.Queries) (err error) {
			types, err = q.SubscriptionEventTypesLive(ctx, accountID)
			return err
		})
		if err != nil {
			return true // the change's own transaction will meet the same database
		}
		e = subscribedTypes{types: types, expires: now.Add(SubscribersTTL)}
		s.put(accountID, e, gen)
	}
	return slices.Contains(e.types, string(typ))
}

func (s *Subscribers) put(accountID uuid.UUID, e subscribedTypes, gen uint64) {
	if !s.listening.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen.Load() != gen {
		return
	}
	if len(s.entries) > 100_000 { // bounded however many accounts pass through
		clear(s.entries)
	}
	s.entries[accountID] = e
}

// forget drops an account's entry; uuid.Nil drops every entry.
func (s *Subscribers) forget(accountID uuid.UUID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen.Add(1)
	if accountID == uuid.Nil {
		clear(s.entries)
	} else {
		delete(s.entries, accountID)
	}
}

// Channel implements store.Follower.
func (s *Subscribers) Channel() string { return subscribersChannel }

// Notified implements store.Follower: the account's live subscriptions changed.
func (s *Subscribers) Notified(payload string) {
	id, err := uuid.Parse(payload)
	if err != nil {
		id = uuid.Nil
	}
	s.forget(id)
}

// Listening implements store.Follower: the cache answers only while changes are heard, and
// whatever changed while nobody listened is forgotten.
func (s *Subscribers) Listening(up bool) {
	if !up {
		s.listening.Store(false)
	}
	s.forget(uuid.Nil)
	s.listening.Store(up)
}

// Caching reports whether the cache answers (its listener is up).
func (s *Subscribers) Caching() bool { return s.listening.Load() }

// Announce tells every process, at commit, that the account's live subscriptions changed;
// uuid.Nil for any account. Every change of a subscription's liveness calls it in its
// transaction.
func Announce(ctx context.Context, tx store.Tx, accountID uuid.UUID) error {
	target := ""
	if accountID != uuid.Nil {
		target = accountID.String()
	}
	return tx.SubscriptionsChangedNotify(ctx, target)
}
