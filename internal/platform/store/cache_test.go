package store_test

import (
	"testing"
	"time"

	"github.com/contactd/contactd/internal/platform/store"
)

// A lookup that was in flight when an invalidation came (a key revoked while another request
// was resolving it) does not store what it read: the entry it would store may be the revoked
// key's. A lookup that began after the invalidation stores its result.
func TestACacheDoesNotKeepALookupOlderThanAnInvalidation(t *testing.T) {
	c := store.NewCache[string, string]("contactd_test", time.Minute, func(string) func(string, string) bool { return nil })
	c.Listening(true)
	now := time.Now()

	gen := c.Generation() // the lookup starts, then reads the key as valid
	c.Notified("revoked") // meanwhile the revocation is heard
	c.Put("key", "valid", gen, now)
	if v, ok := c.Get("key", now); ok {
		t.Fatalf("the lookup from before the revocation was kept: %q", v)
	}

	gen = c.Generation()
	c.Put("key", "valid", gen, now)
	if v, ok := c.Get("key", now); !ok || v != "valid" {
		t.Fatalf("a lookup after the revocation: %q %v, want it kept", v, ok)
	}
	c.Listening(false) // unheard revocations: nothing is answered, nothing stored
	c.Put("key", "valid", c.Generation(), now)
	if _, ok := c.Get("key", now); ok {
		t.Fatal("the cache answered while its listener was down")
	}
}
