package auth

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
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

// ListenForRevocations keeps the key cache honest until ctx ends: it holds one connection
// listening for revoked keys and turns the cache on only while that connection is up. Run it
// in its own goroutine; without it the cache stays off and every request asks the database.
func (s *Service) ListenForRevocations(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listen(ctx, pool)
		s.cache.listening.Store(false)
		s.cache.forget(uuid.Nil)
		if ctx.Err() != nil {
			return
		}
		log.Warn("API key cache off: revocation listener lost", slog.Any("error", err), slog.Duration("retry_in", backoff))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

func (s *Service) listen(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// the connection is the listener's for good: never handed back to the pool.
	raw := conn.Hijack()
	defer raw.Close(context.Background())
	if _, err := raw.Exec(ctx, "LISTEN "+revokedChannel); err != nil {
		return err
	}
	s.cache.forget(uuid.Nil) // anything revoked while nobody listened is forgotten too
	s.cache.listening.Store(true)
	for {
		n, err := raw.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		id, err := uuid.Parse(n.Payload)
		if err != nil {
			id = uuid.Nil
		}
		s.cache.forget(id)
	}
}

// Caching reports whether resolved keys are being cached (the revocation listener is up).
func (s *Service) Caching() bool { return s.cache.listening.Load() }
