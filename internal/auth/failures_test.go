package auth

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

type testClock struct{ t time.Time }

func (c *testClock) now() time.Time { return c.t }

// Unknown keys are counted per client: an IPv4 address, or an IPv6 /64, whose every address
// is one client (a host picks any of them); another address or /64 is another client.
func TestFailedLookupsAreCountedPerClient(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)}
	f := newFailedLookups(clock.now)
	var key [32]byte
	for i := range MaxFailedLookupsPer10s {
		f.failed(clientOf(netip.MustParseAddr(fmt.Sprintf("2001:db8:1:2::%x", i+1))))
		f.failed(clientOf(netip.MustParseAddr("192.0.2.1")))
	}
	for addr, want := range map[string]bool{
		"2001:db8:1:2:ffff::9": true, "2001:db8:1:3::1": false, "192.0.2.1": true, "::ffff:192.0.2.1": true, "192.0.2.2": false,
	} {
		if got, _ := f.refused(key, clientOf(netip.MustParseAddr(addr)), clock.now()); got != want {
			t.Errorf("%s refused: %v, want %v", addr, got, want)
		}
	}
}

// A key that authenticated from a client is looked up for it whatever the client's unknown
// keys, for RecentlyAuthenticated: a neighbour behind the same address cannot lock it out.
// Another key of that client is refused; the key too once it has not authenticated for that long.
func TestAKeyInUseIsNeverRefusedForItsNeighbours(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)}
	f := newFailedLookups(clock.now)
	nat := clientOf(netip.MustParseAddr("198.51.100.7"))
	inUse, other := hash("ck_in-use"), hash("ck_other")
	f.succeeded(inUse, nat, clock.now())
	for range 10 * MaxFailedLookupsPer10s {
		f.failed(nat)
	}
	if refused, _ := f.refused(inUse, nat, clock.now()); refused {
		t.Error("the key in use refused for its neighbour's unknown keys")
	}
	if refused, retry := f.refused(other, nat, clock.now()); !refused || retry <= 0 {
		t.Errorf("another key of the flooding client: refused %v, retry %v; want refused with a retry", refused, retry)
	}
	clock.t = clock.t.Add(RecentlyAuthenticated - time.Second)
	for range MaxFailedLookupsPer10s {
		f.failed(nat)
	}
	if refused, _ := f.refused(inUse, nat, clock.now()); refused {
		t.Error("the key refused before RecentlyAuthenticated ran out")
	}
	clock.t = clock.t.Add(time.Second)
	if refused, _ := f.refused(inUse, nat, clock.now()); !refused {
		t.Error("the key not authenticated for RecentlyAuthenticated is still exempt")
	}
}

// All clients' unknown keys together are capped: a flood spread over many /64s is refused
// past MaxFailedLookupsAllPer10s, for a client that has not failed yet too.
func TestFailedLookupsHaveAGlobalCap(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)}
	f := newFailedLookups(clock.now)
	for i := range MaxFailedLookupsAllPer10s {
		f.failed(clientOf(netip.MustParseAddr(fmt.Sprintf("2001:db8:%x::1", i))))
	}
	if refused, _ := f.refused(hash("ck_x"), clientOf(netip.MustParseAddr("2001:db8:ffff::1")), clock.now()); !refused {
		t.Error("a new /64 past the global cap was not refused")
	}
	clock.t = clock.t.Add(11 * time.Second)
	if refused, _ := f.refused(hash("ck_x"), clientOf(netip.MustParseAddr("2001:db8:ffff::1")), clock.now()); refused {
		t.Error("still refused once the window has passed")
	}
}

// The memory of keys in use is bounded: past maxRecent it forgets the pairs past their hour,
// then the older half.
func TestRecentKeysAtTheirBound(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)}
	f := newFailedLookups(clock.now)
	client := clientOf(netip.MustParseAddr("192.0.2.1"))
	for i := range maxRecent + 1 {
		clock.t = clock.t.Add(time.Millisecond)
		f.succeeded(hash(fmt.Sprint(i)), client, clock.now())
	}
	if n := len(f.recent); n > maxRecent || n < maxRecent/2 {
		t.Errorf("%d pairs remembered, want at most %d and at least half", n, maxRecent)
	}
	if _, ok := f.recent[recentKey{hash(fmt.Sprint(maxRecent)), client}]; !ok {
		t.Error("the newest pair was forgotten")
	}
	if _, ok := f.recent[recentKey{hash("0"), client}]; ok {
		t.Error("the oldest pair was kept")
	}
}
