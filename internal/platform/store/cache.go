package store

import (
	"sync"
	"sync/atomic"
	"time"
)

// Cache is an in-process cache that changes made by any process invalidate through NOTIFY on
// its channel; it is a Follower, and answers only while Listen hears that channel. Entries
// also expire after a TTL, and the number kept is bounded.
type Cache[K comparable, V any] struct {
	channel string
	ttl     time.Duration
	// stale turns a notification's payload into which entries it invalidates (nil: all).
	stale   func(payload string) func(K, V) bool
	mu      sync.RWMutex
	entries map[K]cached[V]
	// gen changes on every invalidation; a lookup that started before one does not store its
	// (possibly outdated) result.
	gen       atomic.Uint64
	listening atomic.Bool
}

type cached[V any] struct {
	v       V
	expires time.Time
}

// maxCached bounds a cache however many distinct keys pass through it.
const maxCached = 100_000

// NewCache returns a cache, off until Listen runs it.
func NewCache[K comparable, V any](channel string, ttl time.Duration, stale func(payload string) func(K, V) bool) *Cache[K, V] {
	return &Cache[K, V]{channel: channel, ttl: ttl, stale: stale, entries: map[K]cached[V]{}}
}

// Get returns the live entry for k, if the cache is answering.
func (c *Cache[K, V]) Get(k K, now time.Time) (V, bool) {
	var zero V
	if !c.listening.Load() {
		return zero, false
	}
	c.mu.RLock()
	e, ok := c.entries[k]
	c.mu.RUnlock()
	if !ok || now.After(e.expires) {
		return zero, false
	}
	return e.v, true
}

// Generation is to be read before looking up what Put will store.
func (c *Cache[K, V]) Generation() uint64 { return c.gen.Load() }

// Put stores v unless an invalidation came after gen was read.
func (c *Cache[K, V]) Put(k K, v V, gen uint64, now time.Time) {
	if !c.listening.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen.Load() != gen {
		return
	}
	if len(c.entries) >= maxCached {
		clear(c.entries)
	}
	c.entries[k] = cached[V]{v: v, expires: now.Add(c.ttl)}
}

// Forget drops the entries match selects; nil drops every entry.
func (c *Cache[K, V]) Forget(match func(K, V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen.Add(1)
	if match == nil {
		clear(c.entries)
		return
	}
	for k, e := range c.entries {
		if match(k, e.v) {
			delete(c.entries, k)
		}
	}
}

// Channel implements Follower.
func (c *Cache[K, V]) Channel() string { return c.channel }

// Notified implements Follower.
func (c *Cache[K, V]) Notified(payload string) { c.Forget(c.stale(payload)) }

// Listening implements Follower: the cache answers only while changes are heard, and what
// changed while nobody listened is forgotten.
func (c *Cache[K, V]) Listening(up bool) {
	if !up {
		c.listening.Store(false)
	}
	c.Forget(nil)
	c.listening.Store(up)
}

// Caching reports whether the cache answers (its listener is up).
func (c *Cache[K, V]) Caching() bool { return c.listening.Load() }
