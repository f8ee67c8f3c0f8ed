package contact_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestTagSwapsOfAGroupStandApart: a group's tag changes go as one statement, and each one's
// outcome is its own: a change whose tags moved since they were read, one whose account's
// subscriptions moved since its plan, and a second change of a contact already in the group
// write nothing and say why, while the others commit with their events and deliveries.
func TestTagSwapsOfAGroupStandApart(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	ctx := context.Background()
	one, keyOne := a.Account("one")
	two, keyTwo := a.Account("two")
	newContact := func(key, email string) uuid.UUID {
		r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": email, "tags": []string{"a"}})
		if r.Status != http.StatusOK {
			t.Fatalf("create %s: %d %s", email, r.Status, r.Body)
		}
		var out struct {
			Contact struct{ ContactId uuid.UUID } `json:"contact"`
		}
		r.JSON(t, &out)
		return out.Contact.ContactId
	}
	x, y, z := newContact(keyOne, "x@example.com"), newContact(keyOne, "y@example.com"), newContact(keyTwo, "z@example.com")
	w := newContact(keyOne, "w@example.com")
	var version int64
	if err := a.Store.Pool.QueryRow(ctx, `SELECT subscriptions_version FROM accounts WHERE account_id = $1`, one).Scan(&version); err != nil {
		t.Fatal(err)
	}
	sub := uuid.New() // deliveries name their subscription without a key
	change := func(account, id uuid.UUID, previous, tags []string, version int64) contact.TagSwap {
		ev, err := event.Prepare(ctx, event.Event{Type: event.TagsAdded, ContactID: id, At: time.Now(),
			Info: event.TagsAddedInfo{TagsAdded: tags}})
		if err != nil {
			t.Fatal(err)
		}
		return contact.TagSwap{Account: account, Contact: id, Previous: previous, Tags: tags, Events: []event.Prepared{ev},
			Plan: event.Plan{Version: version, EventIDs: []uuid.UUID{ev.ID}, SubscriptionIDs: []uuid.UUID{sub}}}
	}
	swaps := []contact.TagSwap{
		change(one, x, []string{"a"}, []string{"a", "b"}, version),
		change(one, y, []string{"stale"}, []string{"stale", "c"}, version), // y's tags are [a]
		change(two, z, []string{"a"}, []string{"a", "d"}, version+1),       // two's plan is stale
		change(one, x, []string{"a"}, []string{"a", "e"}, version),         // x twice in the group
		change(one, w, []string{"a"}, []string{}, version),                 // all of w's tags removed
	}
	got, err := contact.SwapTagsOf(ctx, db.New(a.Store.Pool), swaps)
	if err != nil {
		t.Fatal(err)
	}
	// account one's statement recorded x's and w's events; two's recorded none, and the second
	// change of x was not sent
	want := []db.TagsSwapManyRow{
		{ContactID: x, Current: true, SegmentsCurrent: true, EventsRecorded: 2},
		{Current: true, SegmentsCurrent: true, EventsRecorded: 2},
		{Current: false, SegmentsCurrent: true},
		{Current: true, SegmentsCurrent: true},
		{ContactID: w, Current: true, SegmentsCurrent: true, EventsRecorded: 2},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("results\n got %+v\nwant %+v", got, want)
	}
	for id, tags := range map[uuid.UUID][]string{x: {"a", "b"}, y: {"a"}, z: {"a"}, w: {}} {
		var have []string
		if err := a.Store.Pool.QueryRow(ctx, `SELECT tags FROM contacts WHERE contact_id = $1`, id).Scan(&have); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(have, tags) {
			t.Errorf("contact %s has tags %q, want %q", id, have, tags)
		}
	}
	// the events and deliveries of the changes that swapped, and of no other
	for i, sw := range swaps {
		var events, deliveries int
		if err := a.Store.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM webhook_events WHERE event_id = $1),
			(SELECT count(*) FROM webhook_deliveries WHERE event_id = $1 AND subscription_id = $2)`,
			sw.Events[0].ID, sub).Scan(&events, &deliveries); err != nil {
			t.Fatal(err)
		}
		if swapped := want[i].ContactID != uuid.Nil; events != deliveries || (events == 1) != swapped {
			t.Errorf("change %d (swapped %v): %d events, %d deliveries", i, swapped, events, deliveries)
		}
	}
}
