package subscription

import (
	"context"
	"encoding/json"
	"github.com/contactd/contactd/internal/event"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/internal/apitime"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/platform/ids"
	"github.com/contactd/contactd/internal/platform/store"
)

// TestContactID is the contact id of every test event: no contact has it.
var TestContactID = uuid.MustParse("00000000-0000-7000-8000-000000000000")

// sampleInfo is a plausible detail member for a test event of type t.
func sampleInfo(t event.EventType, now time.Time) any {
	at := apitime.From(now)
	switch t {
	case event.TagsAdded:
		return event.TagsAddedInfo{TagsAdded: []string{"test"}}
	case event.TagsRemoved:
		return event.TagsRemovedInfo{TagsRemoved: []string{"test"}}
	case event.ContactDetailsUpdated:
		return event.ContactDetailsUpdatedInfo{ChangedFields: []string{"name"},
			Previous: event.ContactDetails{Name: "Test Contact", Email: "test@example.com"},
			Current:  event.ContactDetails{Name: "Test Contact Jr.", Email: "test@example.com"}}
	case event.ContactUnsubscribed:
		return event.ContactUnsubscribedInfo{UnsubscribedAt: at, Source: event.UnsubscribedByUpdate}
	case event.ContactEnriched:
		return event.ContactEnrichedInfo{ChangedFields: []string{"emailStatus"}, EmailStatus: "Valid", PreviousEmailStatus: "Pending"}
	case event.ContactsMerged:
		return event.ContactsMergedInfo{MergedContactIDs: []string{TestContactID.String()}, ChangedFields: []string{"phone"},
			Previous: event.ContactDetails{Name: "Test Contact", Email: "test@example.com"},
			Current:  event.ContactDetails{Name: "Test Contact", Email: "test@example.com", Phone: "555-010-0000"}, TagsAdded: []string{"test"}}
	case event.ContactErased:
		return event.ContactErasedInfo{ErasureID: TestContactID.String(), ErasedAt: at}
	case event.ContactEnteredSegment, event.ContactLeftSegment:
		return event.SegmentInfo{SegmentID: TestContactID.String(), SegmentName: "Test segment"}
	case event.SubscriptionFailing:
		return event.SubscriptionFailingInfo{SubscriptionID: TestContactID.String(), EventType: event.TagsAdded, FailingSince: at, RemovalAt: apitime.From(now.Add(RemoveFailingAfter)),
			ConsecutiveFailures: 3, LastFailure: "HTTP 503"}
	default: // the activity types
		return event.ActivityInfo{ActivityID: "test", OccurredAt: at, Details: json.RawMessage(`{"test":true}`)}
	}
}

// SendTest queues a test event of the subscription's type to that subscription alone: it is
// signed, delivered, retried and logged like any delivery, but it is about no contact
// (TestContactID) and never appears in the events feed or a replay.
func (s *Service) SendTest(ctx context.Context, accountID uuid.UUID, rawID string) (TestDelivery, error) {
	id, ok := ids.Parse(rawID)
	if !ok {
		return TestDelivery{}, ErrNotFound
	}
	sub, err := s.Get(ctx, accountID, rawID)
	if err != nil {
		return TestDelivery{}, err
	}
	if sub.Status == "Removed" {
		return TestDelivery{}, apperr.Invalid(apperr.Field("path.subscriptionId", "status", "the subscription is Removed: it receives nothing"))
	}
	now := s.now()
	p, err := event.Prepare(ctx, event.Event{Type: sub.EventType, ContactID: TestContactID, At: now, Info: sampleInfo(sub.EventType, now),
		Contact: event.ContactInfo{ContactID: TestContactID.String(), EmailID: "test@example.com"}})
	if err != nil {
		return TestDelivery{}, err
	}
	var queued []uuid.UUID
	err = s.store.InTx(ctx, func(tx store.Tx) (err error) {
		queued, err = s.events.Record(ctx, tx, accountID, event.Recording{Events: []event.Prepared{p}, Test: true, To: id})
		return err
	})
	if err != nil {
		return TestDelivery{}, err
	}
	return TestDelivery{DeliveryID: queued[0], EventID: p.ID, EventType: sub.EventType, At: now}, nil
}

// TestDelivery is a queued test delivery.
type TestDelivery struct {
	DeliveryID, EventID uuid.UUID
	EventType           event.EventType
	At                  time.Time
}
