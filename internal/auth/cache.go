package auth

import (
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/internal/platform/store"
)

// revokedChannel carries the id of every revoked key (KeyRevokedNotify).
const revokedChannel = "contactd_key_revoked"

// CacheTTL bounds how long a resolved key is trusted without asking the database again.
// Revocation does not wait for it: a revoked key is dropped from every process's cache as
// soon as the revoking transaction commits (LISTEN/NOTIFY).
const CacheTTL = time.Minute

// keyCache remembers resolved keys by hash. It answers only while the revocation listener
// is connected: without it, a revocation elsewhere could go unnoticed, so every key is looked
// up in the database until the listener is back.
type keyCache = store.Cache[[32]byte, Principal]

func newKeyCache() *keyCache { return store.NewCache(revokedChannel, CacheTTL, revoked) }

// revoked selects the cached entries of the key a revocation names (all, if unreadable).
func revoked(payload string) func([32]byte, Principal) bool {
	id, err := uuid.Parse(payload)
	if err != nil || id == uuid.Nil {
		return nil
	}
	return keyIs(id)
}

func keyIs(id uuid.UUID) func([32]byte, Principal) bool {
	return func(_ [32]byte, p Principal) bool { return p.KeyID == id }
}

// Follower is what keeps the key caches honest; store.Listen must run it, or they stay off
// and every request asks the database.
func (s *Service) Follower() store.Follower { return follower{s} }

// follower keeps both caches: the keys resolved, forgotten as revocations are heard, and the
// keys found unknown, forgotten whenever the listener goes or comes back. A key is unknown
// for good only while the database's view only moves forward; a lost connection may mean a
// failover or a restore, after which a lookup that found nothing then (a node still
// promoting, a standby's view) is no answer for later.
type follower struct{ s *Service }

func (f follower) Channel() string         { return f.s.cache.Channel() }
func (f follower) Notified(payload string) { f.s.cache.Notified(payload) }
func (f follower) Listening(up bool) {
	f.s.cache.Listening(up)
	f.s.unknown.listening(up)
}

// Caching reports whether resolved keys are being cached (the revocation listener is up).
func (s *Service) Caching() bool { return s.cache.Caching() }

// Invalidations counts what made the key cache forget (a notification heard, a revocation in
// this process): a test tells by it that a key was refused because it was forgotten, not
// because its entry expired.
func (s *Service) Invalidations() uint64 { return s.cache.Generation() }
