package auth

import (
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/contactd/contactd/internal/ratelimit"
)

// MaxFailedLookupsPer10s is how many lookups of unknown keys a client may cause in any 10
// seconds. Past it, a key this process has not cached is refused without a lookup until the
// window frees one: well-formed random keys cost the database nothing more. A client's known
// keys, cached or authenticated from its address recently, go on working.
const MaxFailedLookupsPer10s = 20

// MaxFailedLookupsAllPer10s caps the lookups of unknown keys from all clients together: a
// flood spread over many addresses costs the database no more than this.
const MaxFailedLookupsAllPer10s = 1000

// RecentlyAuthenticated is how long a key that authenticated from a client is looked up for
// that client whatever its failures: a neighbour behind the same address (a NAT, a balancer
// not listed as a trusted proxy) flooding it with unknown keys cannot lock out a key in use.
const RecentlyAuthenticated = time.Hour

// maxRecent bounds the (key, client) pairs remembered; past it the oldest half is forgotten
// (those keys then go through the limits again, as any other).
const maxRecent = 65536

// failedLookups bounds the lookups of keys that name no key, per client and for all of them.
// A client is an IPv4 address, or an IPv6 address's /64: a host picks any address inside its
// /64, so counting per address would let it escape by changing it.
type failedLookups struct {
	perClient, all *ratelimit.Limiter

	mu     sync.Mutex
	recent map[recentKey]time.Time
}

type recentKey struct {
	key    [32]byte
	client ratelimit.ID
}

func newFailedLookups(now func() time.Time) *failedLookups {
	return &failedLookups{
		perClient: ratelimit.New(ratelimit.Limits{ReadsPer10s: MaxFailedLookupsPer10s}, now),
		all:       ratelimit.New(ratelimit.Limits{ReadsPer10s: MaxFailedLookupsAllPer10s}, now),
		recent:    map[recentKey]time.Time{},
	}
}

// clientOf is the bucket a client address's failures count in.
func clientOf(a netip.Addr) ratelimit.ID {
	a = a.Unmap()
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			a = p.Addr()
		}
	}
	return a.As16()
}

// everyone is the bucket of all clients' failures.
var everyone = ratelimit.ID{0xff}

// refused says whether the lookup of key h for client must be refused, and when to retry: never
// for a key that authenticated from that client recently.
func (f *failedLookups) refused(h [32]byte, client ratelimit.ID, now time.Time) (bool, time.Duration) {
	f.mu.Lock()
	at, ok := f.recent[recentKey{h, client}]
	f.mu.Unlock()
	if ok && now.Sub(at) < RecentlyAuthenticated {
		return false, 0
	}
	if full, retry := f.perClient.Full(client, false); full {
		return true, retry
	}
	return f.all.Full(everyone, false)
}

// failed counts a lookup that named no key.
func (f *failedLookups) failed(client ratelimit.ID) {
	f.perClient.Allow(client, ratelimit.ID{}, false)
	f.all.Allow(everyone, ratelimit.ID{}, false)
}

// succeeded remembers that key h authenticated from client.
func (f *failedLookups) succeeded(h [32]byte, client ratelimit.ID, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := recentKey{h, client}
	if _, ok := f.recent[k]; !ok && len(f.recent) >= maxRecent {
		f.forgetOldest(now)
	}
	f.recent[k] = now
}

// forgetOldest drops the pairs past RecentlyAuthenticated, and, if that frees too little, the
// older half of the rest.
func (f *failedLookups) forgetOldest(now time.Time) {
	var times []time.Time
	for k, at := range f.recent {
		if now.Sub(at) >= RecentlyAuthenticated {
			delete(f.recent, k)
		} else {
			times = append(times, at)
		}
	}
	if len(f.recent) < maxRecent*3/4 {
		return
	}
	slices.SortFunc(times, time.Time.Compare)
	cut := times[len(times)/2]
	for k, at := range f.recent {
		if at.Before(cut) {
			delete(f.recent, k)
		}
	}
}
