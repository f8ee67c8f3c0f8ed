package event

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/platform/store"
)

// subscribersChannel carries the id of an account whose live subscriptions changed ("" for
// any account): SubscriptionsChangedNotify.
const subscribersChannel = "contactd_subscriptions_changed"

// SubscribersTTL bounds how long an account's audience is remembered without asking the
// database. Subscription changes do not wait for it: every process forgets the account as
// soon as the changing transaction commits (LISTEN/NOTIFY), and a statement planned from an
// audience that is no longer current writes nothing (Plan.Version), so a late notification
// costs a write another round trip, never a wrong delivery.
const SubscribersTTL = time.Minute

// Subscribers remembers each account's Audience: its live subscriptions and their filters, at
// a version. It lets a change plan its events' deliveries without a round trip, and a change
// nobody subscribes to skip them entirely (often no transaction: one statement instead of
// five round trips). It answers only while the listener hears every subscription change
// (store.Listen); otherwise every plan starts from the database.
type Subscribers struct {
	store *store.Store
	now   func() time.Time
	cache *store.Cache[uuid.UUID, *Audience]
}

// NewSubscribers returns the cache, off until store.Listen runs it.
func NewSubscribers(st *store.Store, now func() time.Time) *Subscribers {
	return &Subscribers{store: st, now: now, cache: store.NewCache(subscribersChannel, SubscribersTTL, changedAccount)}
}

// changedAccount selects the entry of the account a notification names (all, if unreadable).
func changedAccount(payload string) func(uuid.UUID, *Audience) bool {
	id, err := uuid.Parse(payload)
	if err != nil || id == uuid.Nil {
		return nil
	}
	return accountIs(id)
}

func accountIs(id uuid.UUID) func(uuid.UUID, *Audience) bool {
	return func(account uuid.UUID, _ *Audience) bool { return account == id }
}

// Audience is the account's audience: remembered, or read (on q when it is not nil: a
// transaction's).
func (s *Subscribers) Audience(ctx context.Context, q *db.Queries, accountID uuid.UUID) (*Audience, error) {
	if a, ok := s.cache.Get(accountID, s.now()); ok {
		return a, nil
	}
	return s.Reload(ctx, q, accountID)
}

// Reload reads the account's audience (on q when it is not nil) and remembers it: after a
// statement found the one it was planned with stale.
func (s *Subscribers) Reload(ctx context.Context, q *db.Queries, accountID uuid.UUID) (*Audience, error) {
	gen, now := s.cache.Generation(), s.now()
	var rows []db.SubscribersLoadRow
	load := func(q *db.Queries) (err error) {
		rows, err = q.SubscribersLoad(ctx, accountID)
		return err
	}
	var err error
	if q != nil {
		err = load(q)
	} else {
		err = s.store.Do(ctx, load)
	}
	if err != nil {
		return nil, err
	}
	a := &Audience{}
	for _, r := range rows {
		a.Version = r.SubscriptionsVersion
		if r.SubscriptionID == nil {
			continue
		}
		f, err := StoredFilter(r.Filter)
		if err != nil {
			return nil, err
		}
		a.subs = append(a.subs, audienceSub{id: *r.SubscriptionID, typ: EventType(*r.EventType), filter: f})
	}
	s.cache.Put(accountID, a, gen, now)
	return a, nil
}

// MayHave reports whether the account may have a live subscription to typ: false only when
// it certainly has none (at the audience's version). A nil Subscribers always answers true.
func (s *Subscribers) MayHave(ctx context.Context, accountID uuid.UUID, typ EventType) bool {
	if s == nil {
		return true
	}
	a, err := s.Audience(ctx, nil, accountID)
	return err != nil || a.Wants(typ)
}

// forget drops an account's entry at once, in this process.
func (s *Subscribers) forget(accountID uuid.UUID) { s.cache.Forget(accountIs(accountID)) }

// Forget drops the account's audience in this process: the next change reads it again (what a
// cost measured cold includes).
func (s *Subscribers) Forget(accountID uuid.UUID) { s.forget(accountID) }

// Follower is what keeps the cache honest; store.Listen must run it.
func (s *Subscribers) Follower() store.Follower { return s.cache }

// Caching reports whether the cache answers (its listener is up).
func (s *Subscribers) Caching() bool { return s.cache.Caching() }

// Invalidations counts what made the cache forget (a notification heard, a change in this
// process): a test tells by it that a change arrived by notification, not by expiry.
func (s *Subscribers) Invalidations() uint64 { return s.cache.Generation() }

// Announce moves the account's subscriptions to a new version (plans made from the older
// one are refused), and tells every process, at commit, that they changed; uuid.Nil tells
// of any account (the statement that changed them moved their versions). Every change of a
// subscription's liveness or filter calls it in its transaction.
func Announce(ctx context.Context, tx store.Tx, accountID uuid.UUID) error {
	target := ""
	if accountID != uuid.Nil {
		target = accountID.String()
		if err := tx.SubscriptionsVersionBump(ctx, accountID); err != nil {
			return err
		}
	}
	return tx.SubscriptionsChangedNotify(ctx, target)
}
