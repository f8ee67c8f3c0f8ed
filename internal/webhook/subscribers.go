package webhook

import (
	"context"
	"slices"
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
	store *store.Store
	now   func() time.Time
	cache *store.Cache[uuid.UUID, []string]
}

// NewSubscribers returns the cache, off until store.Listen runs it.
func NewSubscribers(st *store.Store, now func() time.Time) *Subscribers {
	return &Subscribers{store: st, now: now, cache: store.NewCache(subscribersChannel, SubscribersTTL, changedAccount)}
}

// changedAccount selects the entry of the account a notification names (all, if unreadable).
func changedAccount(payload string) func(uuid.UUID, []string) bool {
	id, err := uuid.Parse(payload)
	if err != nil || id == uuid.Nil {
		return nil
	}
	return accountIs(id)
}

func accountIs(id uuid.UUID) func(uuid.UUID, []string) bool {
	return func(account uuid.UUID, _ []string) bool { return account == id }
}

// MayHave reports whether the account may have a live subscription to typ: false only when
// it certainly has none. A nil Subscribers always answers true.
func (s *Subscribers) MayHave(ctx context.Context, accountID uuid.UUID, typ EventType) bool {
	if s == nil || !s.cache.Caching() {
		return true
	}
	now := s.now()
	types, ok := s.cache.Get(accountID, now)
	if !ok {
		gen := s.cache.Generation()
		err := s.store.Do(ctx, func(q *db.Queries) (err error) {
			types, err = q.SubscriptionEventTypesLive(ctx, accountID)
			return err
		})
		if err != nil {
			return true // the change's own transaction will meet the same database
		}
		s.cache.Put(accountID, types, gen, now)
	}
	return slices.Contains(types, string(typ))
}

// forget drops an account's entry at once, in this process.
func (s *Subscribers) forget(accountID uuid.UUID) { s.cache.Forget(accountIs(accountID)) }

// Follower is what keeps the cache honest; store.Listen must run it.
func (s *Subscribers) Follower() store.Follower { return s.cache }

// Caching reports whether the cache answers (its listener is up).
func (s *Subscribers) Caching() bool { return s.cache.Caching() }

// Invalidations counts what made the cache forget (a notification heard, a change in this
// process): a test tells by it that a change arrived by notification, not by expiry.
func (s *Subscribers) Invalidations() uint64 { return s.cache.Generation() }

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
