package contact

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apitime"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/platform/store"
)

// Activity types reported through the activity endpoint.
const (
	ActivityFormSubmission = "FormSubmission"
	ActivityEmailSend      = "EmailSend"
	ActivityEmailOpen      = "EmailOpen"
	ActivityEmailClick     = "EmailClick"
	ActivityDashboardView  = "DashboardView"
	ActivityDashboardClick = "DashboardClick"
	ActivityPostcardScan   = "PostcardScan"
	ActivityUnsubscribe    = "Unsubscribe"
	// ActivityAIHandoff is an AI assistant handing the contact's conversation to a person.
	ActivityAIHandoff = "AIHandoff"
)

var activityTypes = []string{ActivityFormSubmission, ActivityEmailSend, ActivityEmailOpen, ActivityEmailClick,
	ActivityDashboardView, ActivityDashboardClick, ActivityPostcardScan, ActivityUnsubscribe, ActivityAIHandoff}

// activityEvents is the event each activity type emits; the others emit none.
var activityEvents = map[string]event.EventType{
	ActivityFormSubmission: event.FormSubmission,
	ActivityEmailClick:     event.EmailClick,
	ActivityDashboardClick: event.DashboardClick,
	ActivityPostcardScan:   event.PostcardScan,
	ActivityAIHandoff:      event.FelixAIHandoff,
}

// MaxActivityFuture is how far in the future an occurredAt may be (clock skew).
const MaxActivityFuture = 5 * time.Minute

// MaxActivityDetailsBytes bounds an activity's details as JSON. They are stored, and sent
// in the event's payload to every subscriber, in feed pages and in replays: without a bound
// below the body limit, every copy of a busy account's events is as big as its biggest body.
const MaxActivityDetailsBytes = 8 << 10

// MaxActivityDetailsValues bounds the JSON values in an activity's details, so that its event,
// with the members every event has around them, stays within event.MaxEventValues: what a
// payload filter is evaluated on, at a bounded cost.
const MaxActivityDetailsValues = 2000

// ActivityInput is one reported activity.
type ActivityInput struct {
	Type string
	// ID makes the report idempotent; nil assigns one.
	ID         *string
	OccurredAt *time.Time
	Details    json.RawMessage
}

// RecordActivity applies an activity to the contact's engagement and lead score and emits
// its event. replayed is true when the contact already had this activity id: nothing changed.
func (s *Service) RecordActivity(ctx context.Context, accountID uuid.UUID, rawID string, in ActivityInput) (c Contact, replayed bool, err error) {
	id, err := ParseID(rawID)
	if err != nil {
		return Contact{}, false, err
	}
	now := s.now()
	at := now
	if in.OccurredAt != nil {
		at = in.OccurredAt.UTC().Truncate(time.Millisecond)
		if at.After(now.Add(MaxActivityFuture)) {
			return Contact{}, false, apperr.Invalid(apperr.Field("body.occurredAt", "maximum", "must not be more than 5 minutes in the future"))
		}
	}
	if len(in.Details) > MaxActivityDetailsBytes {
		return Contact{}, false, apperr.Invalid(apperr.Field("body.details", "maxBytes",
			fmt.Sprintf("must be at most %d bytes as JSON (it is %d)", MaxActivityDetailsBytes, len(in.Details))))
	}
	if n := event.ValuesIn(in.Details, MaxActivityDetailsValues); n > MaxActivityDetailsValues {
		return Contact{}, false, apperr.Invalid(apperr.Field("body.details", "maxValues",
			fmt.Sprintf("must hold at most %d JSON values (objects, arrays, strings, numbers, booleans and nulls, each one), so that payload filters can be evaluated on its event at a bounded cost", MaxActivityDetailsValues)))
	}
	activityID := uuid.Must(uuid.NewV7()).String()
	if in.ID != nil {
		activityID = *in.ID
	}
	err = s.store.InTx(ctx, func(tx store.Tx) error {
		row, err := s.lock(ctx, tx, accountID, id)
		if err != nil {
			return err
		}
		n, err := tx.ActivityInsert(ctx, db.ActivityInsertParams{AccountID: accountID, ContactID: id,
			ActivityID: activityID, Type: in.Type, OccurredAt: at, Details: in.Details, CreatedAt: now})
		if err != nil {
			return err
		}
		if replayed = n == 0; !replayed {
			if err := s.applyActivity(ctx, tx, row, activityID, at, in, now); err != nil {
				return err
			}
		}
		if c, err = s.load(ctx, tx.Queries, accountID, id); err != nil || replayed {
			return err
		}
		return s.keepContact(ctx, tx, accountID, c)
	})
	return c, replayed, err
}

func (s *Service) applyActivity(ctx context.Context, tx store.Tx, row db.ContactRow, activityID string, at time.Time, in ActivityInput, now time.Time) error {
	eng := applyActivity(engagementOf(row), in.Type, at)
	status := row.RecordStatus
	if in.Type == ActivityUnsubscribe {
		status = RecordNonMarketing
	}
	if err := tx.ContactEngagementSet(ctx, engagementParams(row, eng, status, LeadScore(eng, now), now)); err != nil {
		return err
	}
	info := contactInfo(row.ContactID, row.Email, row.AssignedUserEmailID)
	if typ, ok := activityEvents[in.Type]; ok {
		return s.events.Emit(ctx, tx, row.AccountID, event.Event{Type: typ, ContactID: row.ContactID, Contact: info,
			Info: event.ActivityInfo{ActivityID: activityID, OccurredAt: apitime.From(at), Details: in.Details}, At: now})
	}
	if in.Type == ActivityUnsubscribe && row.RecordStatus != RecordNonMarketing {
		return s.events.Emit(ctx, tx, row.AccountID, event.Event{Type: event.ContactUnsubscribed, ContactID: row.ContactID,
			Contact: info, Info: event.ContactUnsubscribedInfo{UnsubscribedAt: apitime.From(at),
				Source: event.UnsubscribedByActivity}, At: now})
	}
	return nil
}

// applyActivity counts one activity of typ at time at: the counter goes up, and the last date
// moves forward only (a late report of an old activity does not move it back).
func applyActivity(e Engagement, typ string, at time.Time) Engagement {
	bump := func(n *int, last **time.Time) {
		*n++
		if *last == nil || at.After(**last) {
			t := at
			*last = &t
		}
	}
	switch typ {
	case ActivityFormSubmission:
		bump(&e.FormSubmissions, &e.LastFormSubmission)
	case ActivityEmailSend:
		bump(&e.EmailSends, &e.LastEmailSend)
	case ActivityEmailOpen:
		bump(&e.EmailOpens, &e.LastEmailOpen)
	case ActivityEmailClick:
		bump(&e.EmailClicks, &e.LastEmailClick)
	case ActivityDashboardView:
		bump(&e.DashboardViews, &e.LastDashboardView)
	case ActivityDashboardClick:
		bump(&e.DashboardClicks, &e.LastDashboardClick)
	case ActivityPostcardScan:
		bump(&e.PostcardScans, &e.LastPostcardScan)
	case ActivityAIHandoff:
		bump(&e.AIHandoffs, &e.LastAIHandoff)
	}
	return e
}

func engagementParams(row db.ContactRow, e Engagement, status string, score int, now time.Time) db.ContactEngagementSetParams {
	return db.ContactEngagementSetParams{
		AccountID: row.AccountID, ContactID: row.ContactID, RecordStatus: status, LeadScore: int32(score), UpdatedAt: now,
		NumFormSubmissions: int32(e.FormSubmissions), LastFormSubmissionAt: e.LastFormSubmission,
		NumEmailSends: int32(e.EmailSends), LastEmailSendAt: e.LastEmailSend,
		NumEmailOpens: int32(e.EmailOpens), LastEmailOpenAt: e.LastEmailOpen,
		NumEmailClicks: int32(e.EmailClicks), LastEmailClickAt: e.LastEmailClick,
		NumDashboardViews: int32(e.DashboardViews), LastDashboardViewAt: e.LastDashboardView,
		NumDashboardClicks: int32(e.DashboardClicks), LastDashboardClickAt: e.LastDashboardClick,
		NumPostcardScans: int32(e.PostcardScans), LastPostcardScanAt: e.LastPostcardScan,
		NumAiHandoffs: int32(e.AIHandoffs), LastAiHandoffAt: e.LastAIHandoff,
	}
}
