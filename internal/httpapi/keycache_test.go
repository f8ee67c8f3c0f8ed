package httpapi_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/contactd/contactd/internal/auth"
	"github.com/contactd/contactd/internal/testkit"
)

// TestKeyCache: a resolved key is served from memory, a revocation by another process
// reaches it at once through NOTIFY, and without the listener nothing is cached.
func TestKeyCache(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	ctx := context.Background()
	pool := testkit.Pool(a.Store)
	testkit.Eventually(t, "the revocation listener", a.Svc.Auth.Caching)
	_, key := a.Account("cached")
	if r := a.Do("GET", "/public/v1/webhooks", key, nil); r.Status != 200 {
		t.Fatalf("first request: %d", r.Status)
	}

	// The key is cached: removing its row behind contactd's back (no NOTIFY) goes unnoticed.
	if _, err := pool.Exec(ctx, `UPDATE api_keys SET key_hash = 'x' || key_hash WHERE prefix = $1`, key[:11]); err != nil {
		t.Fatal(err)
	}
	if r := a.Do("GET", "/public/v1/webhooks", key, nil); r.Status != 200 {
		t.Fatalf("cached key: %d, want 200 from the cache", r.Status)
	}
	if _, err := pool.Exec(ctx, `UPDATE api_keys SET key_hash = substr(key_hash, 2) WHERE prefix = $1`, key[:11]); err != nil {
		t.Fatal(err)
	}

	// Another process (its own auth.Service on the same database) revokes the key: this
	// process's cache hears of it through NOTIFY, long before the cache entry would expire.
	// The proof is the cache's own count of what it forgot, not a time: a refusal after the
	// entry expired (CacheTTL) would leave the count unchanged.
	_, bystander := a.Account("bystander") // cached too: the revocation of another key must leave it
	if r := a.Do("GET", "/public/v1/webhooks", bystander, nil); r.Status != 200 {
		t.Fatalf("the bystander's first request: %d", r.Status)
	}
	other := auth.NewService(a.Store, time.Now)
	forgotten := a.Svc.Auth.Invalidations()
	revokedAt := time.Now()
	if err := other.RevokeKey(ctx, key[:11]); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the revoked key to be refused", func() bool {
		return a.Do("GET", "/public/v1/webhooks", key, nil).Status == 401
	})
	if a.Svc.Auth.Invalidations() == forgotten {
		t.Errorf("the revoked key was refused without the cache hearing of the revocation (its entry expired)")
	}
	lookups := a.Svc.Auth.Lookups()
	if r := a.Do("GET", "/public/v1/webhooks", bystander, nil); r.Status != 200 || a.Svc.Auth.Lookups() != lookups {
		t.Errorf("the bystander's key after another key's revocation: %d, %d lookups: want it still served from the cache",
			r.Status, a.Svc.Auth.Lookups()-lookups)
	}
	t.Logf("revocation reached the cache %v after it committed", time.Since(revokedAt).Round(time.Millisecond))

	// Without the listener (its connection killed), nothing is served from the cache.
	_, key2 := a.Account("uncached")
	if r := a.Do("GET", "/public/v1/webhooks", key2, nil); r.Status != 200 {
		t.Fatalf("second key: %d", r.Status)
	}
	if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN contactd_%' AND datname = current_database()`); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the cache to turn off", func() bool { return !a.Svc.Auth.Caching() })
	if _, err := pool.Exec(ctx, `UPDATE api_keys SET revoked_at = now() WHERE prefix = $1`, key2[:11]); err != nil {
		t.Fatal(err)
	}
	if r := a.Do("GET", "/public/v1/webhooks", key2, nil); r.Status != 401 {
		t.Errorf("revoked without NOTIFY while the cache is off: %d, want 401", r.Status)
	}
	// and the listener comes back by itself.
	testkit.Eventually(t, "the listener to reconnect", a.Svc.Auth.Caching)
}

// Well-formed random keys cost a lookup each only up to MaxFailedLookupsPer10s from one
// client address; past it they are refused with 429 and Retry-After without a lookup, while
// the client's cached key goes on working. An unknown key repeated costs one lookup, and is
// answered 401 again (it does not count toward the limit).
func TestUnknownKeysAreBoundedPerClient(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	testkit.Eventually(t, "the revocation listener", a.Svc.Auth.Caching)
	_, key := a.Account("acme")
	if r := a.Do("GET", "/public/v1/webhooks", key, nil); r.Status != 200 { // cached now
		t.Fatal(r.Status)
	}
	random := func(i int) string { return fmt.Sprintf("ck_%043d", i) }
	before := a.Svc.Auth.Lookups()
	for range 30 {
		if r := a.Do("GET", "/public/v1/webhooks", random(999999), nil); r.Status != 401 {
			t.Fatalf("an unknown key repeated: %d %s", r.Status, r.Body)
		}
	}
	if n := a.Svc.Auth.Lookups() - before; n != 1 {
		t.Fatalf("%d lookups for one unknown key presented 30 times", n)
	}
	before = a.Svc.Auth.Lookups()
	for i := range auth.MaxFailedLookupsPer10s - 1 { // the repeated key counted one
		if r := a.Do("GET", "/public/v1/webhooks", random(i), nil); r.Status != 401 {
			t.Fatalf("unknown key %d: %d %s", i, r.Status, r.Body)
		}
	}
	if n := a.Svc.Auth.Lookups() - before; n != auth.MaxFailedLookupsPer10s-1 {
		t.Fatalf("%d lookups for %d unknown keys", n, auth.MaxFailedLookupsPer10s-1)
	}
	for i := range 50 {
		r := a.Do("GET", "/public/v1/webhooks", random(1000+i), nil)
		if r.Status != 429 || r.Error(t).Code != "TooManyRequests" || r.Header.Get("Retry-After") == "" {
			t.Fatalf("past the limit, unknown key %d: %d %s", i, r.Status, r.Body)
		}
	}
	if n := a.Svc.Auth.Lookups() - before; n != auth.MaxFailedLookupsPer10s-1 {
		t.Errorf("%d lookups after 50 more unknown keys, want still %d", n, auth.MaxFailedLookupsPer10s-1)
	}
	if r := a.Do("GET", "/public/v1/webhooks", key, nil); r.Status != 200 {
		t.Errorf("the client's cached key past the limit: %d", r.Status)
	}
}

// A key found unknown is remembered only while the process hears the database's changes: when
// its listener goes (a failover, a restore) the memory is off and forgotten, so a lookup that
// found nothing on a database that has since moved is asked again, and a key that exists
// there is admitted. A key made here after it was remembered unknown stands in for a node
// that lacked it.
func TestAnUnknownKeyIsForgottenWhenTheListenerComesBack(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	testkit.Eventually(t, "the revocation listener", a.Svc.Auth.Caching)
	account, _ := a.Account("acme")
	key := fmt.Sprintf("ck_%043d", 424242)
	asked := func(want int) {
		t.Helper()
		before := a.Svc.Auth.Lookups()
		if r := a.Do("GET", "/public/v1/webhooks", key, nil); r.Status != want {
			t.Fatalf("the key: %d %s, want %d", r.Status, r.Body, want)
		}
		if n := a.Svc.Auth.Lookups() - before; n != 1 {
			t.Fatalf("%d lookups, want the database asked once", n)
		}
	}
	asked(401)
	before := a.Svc.Auth.Lookups()
	if r := a.Do("GET", "/public/v1/webhooks", key, nil); r.Status != 401 || a.Svc.Auth.Lookups() != before {
		t.Fatalf("not remembered unknown: %d, %d lookups", r.Status, a.Svc.Auth.Lookups()-before)
	}
	// the key appears in the database behind the process's back, as on a node it failed over to
	h := sha256.Sum256([]byte(key))
	if _, err := a.Store.Pool.Exec(context.Background(), `INSERT INTO api_keys (account_id, key_id, name, prefix, key_hash, scopes, created_at)
		VALUES ($1, gen_random_uuid(), 'behind', 'ck_0000', $2, '{all}', now())`, account, h[:]); err != nil {
		t.Fatal(err)
	}
	follower := a.Svc.Auth.Follower()
	follower.Listening(false)
	follower.Listening(true)
	asked(200)
}

// A key's use is recorded when it is first used and again once TouchEvery has passed, not on
// every request: by its own clock, a process writes last_used_at at most once a TouchEvery.
func TestKeyUseIsRecordedOncePerTouchEvery(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	ctx := context.Background()
	_, key := a.Account("acme")
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	svc := auth.NewService(a.Store, func() time.Time { return now })
	lastUsed := func() time.Time {
		t.Helper()
		var at time.Time
		if err := testkit.Pool(a.Store).QueryRow(ctx, `SELECT last_used_at FROM api_keys WHERE prefix = $1`, key[:11]).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at.UTC()
	}
	use := func() {
		t.Helper()
		if _, err := svc.Authenticate(ctx, key, netip.Addr{}); err != nil {
			t.Fatal(err)
		}
	}
	first := now
	use()
	if got := lastUsed(); !got.Equal(first) {
		t.Fatalf("first use: last used %v, want %v", got, first)
	}
	now = now.Add(auth.TouchEvery / 2)
	use()
	if got := lastUsed(); !got.Equal(first) {
		t.Errorf("within TouchEvery: last used %v, want still %v", got, first)
	}
	now = first.Add(2 * auth.TouchEvery)
	use()
	if got := lastUsed(); !got.Equal(now) {
		t.Errorf("two TouchEvery later: last used %v, want %v", got, now)
	}
}
