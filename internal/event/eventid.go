package event

import (
	"encoding/binary"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// eventSeq orders the ids this process makes within one millisecond. It starts at a random
// point of its 42 bits, so two processes making ids in the same millisecond start far apart.
var eventSeq atomic.Uint64

func init() { eventSeq.Store(rand.Uint64() >> 23) }

// NewEventID is an event's id: a version 7 UUID (RFC 9562) whose time is the millisecond
// the event occurred at, exactly, so the events table can be partitioned by ranges of ids as
// ranges of time (migration 00032) and a lookup by id reads one partition. uuid.NewV7 takes
// the time from the clock when it is called, which can fall past a day's end after the
// event's own time, and a test's clock is not the wall's.
//
// Within a millisecond, the ids of one process increase in the order they are made (a batch's
// events, one transaction's, keep their order in the feed, which sorts a transaction's events
// by id): after the 48 bits of time come 42 bits of this process's counter (RFC 9562's
// "dedicated counter" method), then 32 random bits.
func NewEventID(at time.Time) uuid.UUID {
	seq := eventSeq.Add(1) & (1<<42 - 1)
	var id uuid.UUID
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(at.UnixMilli()))
	copy(id[:6], ms[2:])
	id[6] = 0x70 | byte(seq>>38)
	id[7] = byte(seq >> 30)
	binary.BigEndian.PutUint64(id[8:], 1<<63|(seq&(1<<30-1))<<32|uint64(rand.Uint32()))
	return id
}
