package auth

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/internal/store"
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
type keyCache struct {
	mu      sync.RWMutex
	entries map[[32]byte]cachedKey
	// gen changes on every invalidation; a lookup that started before one does not store
	// its (possibly revoked) result.
	gen       atomic.Uint64
	listening atomic.Bool
}

type cachedKey struct {
	p       Principal
	expires time.Time
}

func newKeyCache() *keyCache { return &keyCache{entries: map[[32]byte]cachedKey{}} }

func (c *keyCache) get(h [32]byte, now time.Time) (Principal, bool) {
	if !c.listening.Load() {
		return Principal{}, false
	}
	c.mu.RLock()
	e, ok := c.entries[h]
	c.mu.RUnlock()
	if !ok || now.After(e.expires) {
		return Principal{}, false
	}
	return e.p, true
}

func (c *keyCache) put(h [32]byte, p Principal, gen uint64, now time.Time) {
	if !c.listening.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen.Load() != gen {
		return
	}
	if len(c.entries) > 100_000 { // bounded: a flood of distinct valid keys cannot grow it forever
		clear(c.entries)
	}
	c.entries[h] = cachedKey{p: p, expires: now.Add(CacheTTL)}
}

// forget drops a revoked key; uuid.Nil drops everything.
func (c *keyCache) forget(keyID uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen.Add(1)
	for h, e := range c.entries {
		if keyID == uuid.Nil || e.p.KeyID == keyID {
			delete(c.entries, h)
		}
	}
}

// Channel implements store.Follower: the ids of revoked keys (KeyRevokedNotify).
func (c *keyCache) Channel() string { return revokedChannel }

// Notified implements store.Follower: the revoked key is dropped.
func (c *keyCache) Notified(payload string) {
	id, err := uuid.Parse(payload)
	if err != nil {
		id = uuid.Nil
	}
	c.forget(id)
}

// Listening implements store.Follower: the cache answers only while revocations are heard,
// and anything revoked while nobody listened is forgotten.
func (c *keyCache) Listening(up bool) {
	if !up {
		c.listening.Store(false)
	}
	c.forget(uuid.Nil)
	c.listening.Store(up)
}

// Follower is what keeps the key cache honest; store.Listen must run it, or the cache stays
// off and every request asks the database.
func (s *Service) Follower() store.Follower { return s.cache }

// Caching reports whether resolved keys are being cached (the revocation listener is up).
func (s *Service) Caching() bool { return s.cache.listening.Load() }
