package auth

import (
	"encoding/binary"
	"testing"
	"time"
)

func unknownHash(i int) (h [32]byte) {
	binary.BigEndian.PutUint64(h[:], uint64(i)+1)
	return h
}

// The memory of unknown keys is bounded: full, it first drops the entries past their minute
// and keeps the others; full of entries still fresh (a flood of distinct keys), it starts
// again. Below the bound it never walks its entries.
func TestUnknownKeysAtTheirBound(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	u := &unknownKeys{}
	u.listening(true)
	old := maxUnknownKeys / 2
	for i := range maxUnknownKeys {
		at := start
		if i >= old {
			at = start.Add(UnknownKeyTTL)
		}
		u.add(unknownHash(i), at)
	}
	if len(u.seen) != maxUnknownKeys {
		t.Fatalf("%d remembered, want %d", len(u.seen), maxUnknownKeys)
	}
	now := start.Add(UnknownKeyTTL + time.Second) // the first half past their minute
	u.add(unknownHash(maxUnknownKeys), now)
	if got, want := len(u.seen), maxUnknownKeys-old+1; got != want {
		t.Errorf("%d remembered after the full memory's sweep, want %d (the fresh ones and the new one)", got, want)
	}
	for _, i := range []int{old, maxUnknownKeys - 1, maxUnknownKeys} {
		if !u.has(unknownHash(i), now) {
			t.Errorf("the fresh unknown key %d was forgotten by the sweep", i)
		}
	}
	if u.has(unknownHash(0), now) {
		t.Error("a key past its minute is still answered without a lookup")
	}

	// below the bound, an entry past its minute stays (unused) until the memory fills
	u.add(unknownHash(maxUnknownKeys+1), now.Add(UnknownKeyTTL))
	if _, kept := u.seen[unknownHash(old)]; !kept {
		t.Error("an add below the bound swept the memory: every add would walk it")
	}

	// full of fresh entries: a flood, forgotten at once but for the newest
	flood := &unknownKeys{}
	flood.listening(true)
	for i := range maxUnknownKeys {
		flood.add(unknownHash(i), start)
	}
	flood.add(unknownHash(maxUnknownKeys), start)
	if len(flood.seen) != 1 || !flood.has(unknownHash(maxUnknownKeys), start) {
		t.Errorf("%d remembered after a flood of fresh keys, want only the newest", len(flood.seen))
	}
}
