package event

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/uuid"
)

// An event's id is a version 7 UUID of the event's own millisecond, not of the clock's, and
// the ids made for one millisecond increase in the order they are made.
func TestEventIDsAreTheirEventsTime(t *testing.T) {
	at := time.Date(2029, 12, 31, 23, 59, 59, 999_500_000, time.UTC) // a day's last millisecond
	var prev uuid.UUID
	for i := range 10_000 {
		id := NewEventID(at)
		if id.Version() != 7 || id.Variant() != uuid.RFC4122 {
			t.Fatalf("%s: version %d, variant %v", id, id.Version(), id.Variant())
		}
		if sec, nsec := id.Time().UnixTime(); time.Unix(sec, nsec).UnixMilli() != at.UnixMilli() {
			t.Fatalf("%s is of %v, the event of %v", id, time.Unix(sec, nsec).UTC(), at)
		}
		if i > 0 && bytes.Compare(id[:], prev[:]) <= 0 {
			t.Fatalf("id %d %s not after %s", i, id, prev)
		}
		prev = id
	}
	if later := NewEventID(at.Add(time.Millisecond)); bytes.Compare(later[:], prev[:]) <= 0 {
		t.Errorf("the next millisecond's id %s not after %s", later, prev)
	}
	if earlier := NewEventID(at.Add(-time.Millisecond)); bytes.Compare(earlier[:], prev[:]) >= 0 {
		t.Errorf("the previous millisecond's id %s not before %s", earlier, prev)
	}
}
