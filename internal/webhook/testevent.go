package webhook

import (
	"context"
	"encoding/json"
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
func sampleInfo(t EventType, now time.Time) any {
	at := apitime.From(now)
	switch t {
	case TagsAdded:
		return TagsAddedInfo{TagsAdded: []string{"test"}}
	case TagsRemoved:
		return TagsRemovedInfo{TagsRemoved: []string{"test"}}
	case ContactDetailsUpdated:
		return ContactDetailsUpdatedInfo{ChangedFields: []string{"name"},
			Previous: ContactDetails{Name: "Test Contact", Email: "test@example.com"},
			Current:  ContactDetails{Name: "Test Contact Jr.", Email: "test@example.com"}}
	case ContactUnsubscribed:
		return ContactUnsubscribedInfo{UnsubscribedAt: at, Source: UnsubscribedByUpdate}
	case ContactEnriched:
		return ContactEnrichedInfo{ChangedFields: []string{"emailStatus"}, EmailStatus: "Valid", PreviousEmailStatus: "Pending"}
	case ContactsMerged:
		return ContactsMergedInfo{MergedContactIDs: []string{TestContactID.String()}, ChangedFields: []string{"phone"},
			Previous: ContactDetails{Name: "Test Contact", Email: "test@example.com"},
			Current:  ContactDetails{Name: "Test Contact", Email: "test@example.com", Phone: "555-010-0000"}, TagsAdded: []string{"test"}}
	case ContactErased:
		return ContactErasedInfo{ErasureID: TestContactID.String(), ErasedAt: at}
	case ContactEnteredSegment, ContactLeftSegment:
		return SegmentInfo{SegmentID: TestContactID.String(), SegmentName: "Test segment"}
	case SubscriptionFailing:
		return SubscriptionFailingInfo{SubscriptionID: TestContactID.String(), EventType: TagsAdded, FailingSince: at, RemovalAt: apitime.From(now.Add(RemoveFailingAfter)),
			ConsecutiveFailures: 3, LastFailure: "HTTP 503"}
	default: // the activity types
		return ActivityInfo{ActivityID: "test", OccurredAt: at, Details: json.RawMessage(`{"test":true}`)}
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
	p, err := Prepare(ctx, Event{Type: sub.EventType, ContactID: TestContactID, At: now, Info: sampleInfo(sub.EventType, now),
		Contact: ContactInfo{ContactID: TestContactID.String(), EmailID: "test@example.com"}})
	if err != nil {
		return TestDelivery{}, err
	}
	var queued []uuid.UUID
	err = s.store.InTx(ctx, func(tx store.Tx) (err error) {
		queued, err = s.events.Record(ctx, tx, accountID, Recording{Events: []Prepared{p}, Test: true, To: id})
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
	EventType           EventType
	At                  time.Time
}
