// Package auth owns API keys: it generates them, stores only their SHA-256 hashes, and
// resolves the x-api-key of a request to the account it belongs to.
package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/platform/token"
)

const (
	keyPrefix   = "ck_"
	testPrefix  = "ck_test_" // a sandbox key
	keyBodyLen  = 43         // 32 random bytes in base62
	visibleLen  = 8          // characters of the body kept in clear as the key's prefix
	base62Chars = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// ErrUnauthorized is the answer to a missing, malformed, unknown or revoked key.
var ErrUnauthorized = apperr.New(apperr.KindUnauthorized, "Unauthorized", "missing or invalid x-api-key")

var errTooManyFailures = apperr.New(apperr.KindRateLimited, "TooManyRequests",
	"too many requests with unknown API keys from this address; retry after the Retry-After seconds")

// ScopeAll grants every scope: a key's default, the behaviour of keys before scopes.
const ScopeAll = "all"

// ScopeEventsRead reads events: the feed, and anything that shows what events hold (a filter's
// effect on deliveries, what receivers echoed).
const ScopeEventsRead = "events:read"

// Principal is who is calling: the account and the key used, with what the key may do.
type Principal struct {
	// AccountID is the account the request acts in: the live account, or its sandbox for a
	// test key.
	AccountID uuid.UUID
	KeyID     uuid.UUID
	KeyName   string
	KeyPrefix string
	Scopes    []string
	ExpiresAt *time.Time
	// Networks the key may be used from; none: anywhere.
	Networks []netip.Prefix
	// Live is false for a sandbox (ck_test_) key.
	Live bool
}

// Has reports whether the key has scope.
func (p Principal) Has(scope string) bool {
	return slices.Contains(p.Scopes, ScopeAll) || slices.Contains(p.Scopes, scope)
}

// From reports whether the key may be used from addr.
func (p Principal) From(addr netip.Addr) bool {
	if len(p.Networks) == 0 {
		return true
	}
	addr = addr.Unmap()
	return slices.ContainsFunc(p.Networks, func(n netip.Prefix) bool { return n.Contains(addr) })
}

// Key is a stored key as `keys list` shows it; the key itself is never stored.
type Key struct {
	Name       string
	Prefix     string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
	Scopes     []string
	ExpiresAt  *time.Time
	Networks   []netip.Prefix
	Live       bool
}

// KeyOptions are what a new key may do.
type KeyOptions struct {
	Name string
	// Scopes; empty: all.
	Scopes    []string
	ExpiresAt *time.Time
	Networks  []netip.Prefix
	// Test makes a sandbox key (ck_test_): it acts in the account's sandbox.
	Test bool
}

// Service manages accounts and keys.
type Service struct {
	store *store.Store
	now   func() time.Time
	// touched remembers when this process last recorded each key's use, so the hot path
	// writes last_used_at at most once per TouchEvery per key.
	touched sync.Map // uuid.UUID -> time.Time
	cache   *keyCache
	// failures bounds the lookups of well-formed keys that named no key; unknown remembers
	// those keys for a while, so repeating one costs no lookup.
	failures *failedLookups
	unknown  unknownKeys
	lookups  atomic.Uint64
}

// TouchEvery is the resolution of a key's last-used time.
const TouchEvery = time.Minute

// NewService returns a Service on st.
func NewService(st *store.Store, now func() time.Time) *Service {
	return &Service{store: st, now: now, cache: newKeyCache(),
		failures: newFailedLookups(now)}
}

// CreateAccount creates an account with a unique name.
func (s *Service) CreateAccount(ctx context.Context, name string) (uuid.UUID, error) {
	id := uuid.Must(uuid.NewV7())
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		_, err := tx.AccountInsert(ctx, db.AccountInsertParams{AccountID: id, Name: name, CreatedAt: s.now()})
		return err
	})
	return id, err
}

// AccountByName finds an account's id by its name.
func (s *Service) AccountByName(ctx context.Context, name string) (uuid.UUID, error) {
	var id uuid.UUID
	err := s.store.Do(ctx, func(q *db.Queries) error {
		a, err := q.AccountGetByName(ctx, name)
		id = a.AccountID
		return err
	})
	if errors.Is(err, apperr.ErrNoRows) {
		return id, fmt.Errorf("no account named %q", name)
	}
	return id, err
}

// CreateKey makes a new key for the account, with every scope, and returns it; it cannot be
// shown again.
func (s *Service) CreateKey(ctx context.Context, accountID uuid.UUID, name string) (string, error) {
	return s.CreateKeyWith(ctx, accountID, KeyOptions{Name: name})
}

// CreateKeyWith makes a new key of the live account accountID as opt says, and returns it.
func (s *Service) CreateKeyWith(ctx context.Context, accountID uuid.UUID, opt KeyOptions) (string, error) {
	scopes := opt.Scopes
	if len(scopes) == 0 {
		scopes = []string{ScopeAll}
	}
	networks := opt.Networks
	if networks == nil {
		networks = []netip.Prefix{}
	}
	prefix := keyPrefix
	if opt.Test {
		prefix = testPrefix
	}
	key := prefix + token.Base62(32)
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		owner := accountID
		if opt.Test {
			var err error
			if owner, err = s.sandbox(ctx, tx, accountID); err != nil {
				return err
			}
		}
		_, err := tx.KeyInsert(ctx, db.KeyInsertParams{
			AccountID: owner, KeyID: uuid.Must(uuid.NewV7()), Name: opt.Name,
			Prefix: visiblePrefix(key), KeyHash: hashBytes(key), CreatedAt: s.now(),
			Scopes: scopes, ExpiresAt: opt.ExpiresAt, AllowedNetworks: networks,
		})
		return err
	})
	return key, err
}

// sandbox is the live account's sandbox, made on first use.
func (s *Service) sandbox(ctx context.Context, tx store.Tx, live uuid.UUID) (uuid.UUID, error) {
	id, err := tx.SandboxInsert(ctx, db.SandboxInsertParams{SandboxID: uuid.Must(uuid.NewV7()), CreatedAt: s.now(), LiveAccountID: live})
	if errors.Is(store.Translate(err), apperr.ErrNoRows) { // another maker's, committed after this statement's snapshot
		return tx.SandboxGet(ctx, &live)
	}
	return id, err
}

// Sandbox is the id of the live account's sandbox, if it has one.
func (s *Service) Sandbox(ctx context.Context, live uuid.UUID) (uuid.UUID, bool, error) {
	var id uuid.UUID
	err := s.store.Do(ctx, func(q *db.Queries) (err error) {
		id, err = q.SandboxGet(ctx, &live)
		return err
	})
	if errors.Is(err, apperr.ErrNoRows) {
		return uuid.Nil, false, nil
	}
	return id, err == nil, err
}

// IsLive reports whether the account is a live account (not a sandbox).
func (s *Service) IsLive(ctx context.Context, account uuid.UUID) (bool, error) {
	var live bool
	err := s.store.Do(ctx, func(q *db.Queries) (err error) {
		live, err = q.AccountIsLive(ctx, account)
		return err
	})
	return live, err
}

// ListKeys lists an account's keys, oldest first.
func (s *Service) ListKeys(ctx context.Context, account string) ([]Key, error) {
	var rows []db.KeyListByAccountRow
	err := s.store.Do(ctx, func(q *db.Queries) (err error) {
		rows, err = q.KeyListByAccount(ctx, account)
		return err
	})
	keys := make([]Key, len(rows))
	for i, r := range rows {
		keys[i] = Key{Name: r.Name, Prefix: r.Prefix, CreatedAt: r.CreatedAt, LastUsedAt: r.LastUsedAt, RevokedAt: r.RevokedAt,
			Scopes: r.Scopes, ExpiresAt: r.ExpiresAt, Networks: r.AllowedNetworks, Live: r.Live}
	}
	return keys, err
}

// RevokeKey revokes the key with the given visible prefix; it stops working at once, in
// every process: the revocation is announced to their key caches in the same transaction.
func (s *Service) RevokeKey(ctx context.Context, prefix string) error {
	return s.changeKeys(ctx, prefix, func(tx store.Tx) ([]db.ApiKey, error) {
		return tx.KeyRevokeByPrefix(ctx, db.KeyRevokeByPrefixParams{Prefix: prefix, RevokedAt: ptr(s.now())})
	})
}

// ExpireKey sets when the key with the given prefix stops working (a grace period before
// its revocation); every process's cache forgets the key at once, as on revocation.
func (s *Service) ExpireKey(ctx context.Context, prefix string, at time.Time) error {
	return s.changeKeys(ctx, prefix, func(tx store.Tx) ([]db.ApiKey, error) {
		return tx.KeyExpireByPrefix(ctx, db.KeyExpireByPrefixParams{Prefix: prefix, ExpiresAt: &at})
	})
}

// changeKeys changes the active keys with a prefix (change returns them) and tells every
// process's key cache in the same transaction, so none keeps an old copy.
func (s *Service) changeKeys(ctx context.Context, prefix string, change func(tx store.Tx) ([]db.ApiKey, error)) error {
	var changed []uuid.UUID
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		rows, err := change(tx)
		for _, r := range rows {
			if err == nil {
				changed = append(changed, r.KeyID)
				err = tx.KeyRevokedNotify(ctx, r.KeyID)
			}
		}
		return err
	})
	for _, id := range changed {
		s.cache.Forget(keyIs(id))
	}
	if err == nil && len(changed) == 0 {
		return fmt.Errorf("no active key with prefix %q", prefix)
	}
	return err
}

// Authenticate resolves a presented key to its principal; client is the caller's address
// (invalid when unknown), whose lookups of unknown keys are bounded (failedLookups).
func (s *Service) Authenticate(ctx context.Context, key string, client netip.Addr) (Principal, error) {
	if !wellFormed(key) {
		return Principal{}, ErrUnauthorized
	}
	h := hash(key)
	now := s.now()
	if p, ok := s.cache.Get(h, now); ok {
		return s.admit(ctx, p, now)
	}
	if s.unknown.has(h, now) {
		return Principal{}, ErrUnauthorized
	}
	from := clientOf(client)
	if full, retry := s.failures.refused(h, from, now); full {
		e := *errTooManyFailures
		e.RetryAfter = max(retry, time.Second)
		return Principal{}, &e
	}
	gen := s.cache.Generation()
	s.lookups.Add(1)
	var p Principal
	err := s.store.Do(ctx, func(q *db.Queries) error {
		row, err := q.KeyAuthenticate(ctx, h[:])
		p = Principal{AccountID: row.AccountID, KeyID: row.KeyID, KeyName: row.Name, KeyPrefix: row.Prefix,
			Scopes: row.Scopes, ExpiresAt: row.ExpiresAt, Networks: row.AllowedNetworks, Live: row.Live}
		return err
	})
	if errors.Is(err, apperr.ErrNoRows) {
		s.failures.failed(from)
		s.unknown.add(h, now)
		return Principal{}, ErrUnauthorized
	}
	if err != nil {
		return p, err
	}
	s.cache.Put(h, p, gen, now)
	s.failures.succeeded(h, from, now)
	return s.admit(ctx, p, now)
}

// Lookups counts the keys this process looked up in the database: a test tells by it that a
// refusal cost no lookup.
func (s *Service) Lookups() uint64 { return s.lookups.Load() }

// admit refuses an expired key, and records the use of the others.
func (s *Service) admit(ctx context.Context, p Principal, now time.Time) (Principal, error) {
	if p.ExpiresAt != nil && !now.Before(*p.ExpiresAt) {
		return Principal{}, apperr.New(apperr.KindUnauthorized, "Unauthorized",
			"this API key expired at "+p.ExpiresAt.UTC().Format(time.RFC3339)+"; use another key")
	}
	s.touch(ctx, p)
	return p, nil
}

// touch records that the key was used, cheaply: one UPDATE per key per TouchEvery per
// process, and a failure to record it does not fail the request.
func (s *Service) touch(ctx context.Context, p Principal) {
	now := s.now()
	if last, ok := s.touched.Load(p.KeyID); ok && now.Sub(last.(time.Time)) < TouchEvery {
		return
	}
	s.touched.Store(p.KeyID, now)
	_ = s.store.Do(ctx, func(q *db.Queries) error {
		return q.KeyTouch(ctx, db.KeyTouchParams{AccountID: p.AccountID, KeyID: p.KeyID, UsedAt: now})
	})
}

func wellFormed(key string) bool {
	body, ok := strings.CutPrefix(key, testPrefix)
	if !ok {
		body, ok = strings.CutPrefix(key, keyPrefix)
	}
	if !ok || len(body) != keyBodyLen {
		return false
	}
	for _, c := range body {
		if !strings.ContainsRune(base62Chars, c) {
			return false
		}
	}
	return true
}

// visiblePrefix is what is kept of a key in clear: ck_ (or ck_test_) and 8 characters.
func visiblePrefix(key string) string { return key[:len(key)-keyBodyLen+visibleLen] }

func hash(key string) [32]byte { return sha256.Sum256([]byte(key)) }

func ptr[T any](v T) *T { return &v }

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the request's principal. Handlers behind the auth middleware always
// have one; ok is false elsewhere.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

func hashBytes(key string) []byte {
	h := hash(key)
	return h[:]
}

// ResetSandbox deletes a sandbox's test data: contacts (with their properties and activity),
// subscriptions, events, deliveries and idempotency keys. Its keys stay.
func (s *Service) ResetSandbox(ctx context.Context, sandbox uuid.UUID) error {
	live, err := s.IsLive(ctx, sandbox)
	if err != nil {
		return err
	}
	if live {
		return errors.New("not a sandbox: a live account's data is never reset")
	}
	return s.store.InTx(ctx, func(tx store.Tx) error {
		if err := tx.SandboxContactsLock(ctx, sandbox); err != nil {
			return err
		}
		if err := tx.SandboxReset(ctx, sandbox); err != nil {
			return err
		}
		return tx.SubscriptionsChangedNotify(ctx, sandbox.String()) // its subscriptions went
	})
}

// unknownKeys remembers the hashes of presented keys that no key has, for UnknownKeyTTL and at
// most maxUnknownKeys of them, while the key listener is up. A key is made with 32 random
// bytes and shown once its row has committed, so no key becomes known after it was presented
// unknown, as long as the database's view moves forward (follower).
type unknownKeys struct {
	mu   sync.Mutex
	seen map[[32]byte]time.Time
	on   bool // while the key listener is up (follower)
}

// listening turns the memory on or off, forgetting what it held either way.
func (u *unknownKeys) listening(up bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	clear(u.seen)
	u.on = up
}

// UnknownKeyTTL is how long an unknown key is answered without a lookup.
const UnknownKeyTTL = time.Minute

const maxUnknownKeys = 4096

func (u *unknownKeys) has(h [32]byte, now time.Time) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	at, ok := u.seen[h]
	return u.on && ok && now.Sub(at) < UnknownKeyTTL
}

func (u *unknownKeys) add(h [32]byte, now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.on {
		return
	}
	if u.seen == nil {
		u.seen = map[[32]byte]time.Time{}
	}
	if len(u.seen) >= maxUnknownKeys {
		for k, at := range u.seen {
			if now.Sub(at) >= UnknownKeyTTL {
				delete(u.seen, k)
			}
		}
		if len(u.seen) >= maxUnknownKeys {
			clear(u.seen) // a flood of distinct keys: the per-client limit bounds it instead
		}
	}
	u.seen[h] = now
}
