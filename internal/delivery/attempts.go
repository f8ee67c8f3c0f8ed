package delivery

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/platform/ids"
	"github.com/contactd/contactd/internal/platform/store"
)

// Errors of the attempts log, redelivery and replay.
var (
	ErrSubscriptionNotFound = apperr.New(apperr.KindNotFound, "SubscriptionDoesNotExist", "subscription does not exist")
	ErrDeliveryNotFound     = apperr.New(apperr.KindNotFound, "DeliveryDoesNotExist", "delivery does not exist")
	errBadCursor            = apperr.Invalid(apperr.Field("query.cursor", "format", "not a cursor this API returned"))
)

// Attempt is one recorded delivery attempt.
type Attempt struct {
	DeliveryID, EventID uuid.UUID
	EventType           string
	Attempt             int
	AttemptedAt         time.Time
	ResponseStatus      *int
	Latency             time.Duration
	Error               *string
	NextAttemptAt       *time.Time
	// ResponseExcerpt is the start of the receiver's answer.
	ResponseExcerpt *string
}

// Delivery is one event's delivery to one subscription.
type Delivery struct {
	ID, EventID   uuid.UUID
	EventType     string
	Status        string
	Attempts      int
	NextAttemptAt *time.Time
}

// Attempts lists a subscription's attempts, newest first, after cursor (empty for the first
// page). excerpts includes what receivers answered: a receiver may echo what it received, so
// only a reader of the events may see it.
func (s *Service) Attempts(ctx context.Context, account uuid.UUID, rawSub string, limit int, cursor string, excerpts bool) ([]Attempt, string, error) {
	sub, err := s.subscription(ctx, account, rawSub)
	if err != nil {
		return nil, "", err
	}
	p := db.AttemptsListParams{AccountID: account, SubscriptionID: &sub, RowLimit: int32(limit) + 1}
	if cursor != "" {
		if p.CursorAt, p.CursorDelivery, p.CursorAttempt, err = decodeCursor(cursor); err != nil {
			return nil, "", errBadCursor
		}
		p.HasCursor = true
	}
	release, err := s.opt.Turns.Take(ctx, account)
	if err != nil {
		return nil, "", store.Translate(err)
	}
	defer release()
	var rows []db.AttemptsListRow
	if err := s.store.Do(ctx, func(q *db.Queries) (err error) { rows, err = q.AttemptsList(ctx, p); return err }); err != nil {
		return nil, "", err
	}
	next := ""
	if len(rows) > limit {
		rows = rows[:limit]
		last := rows[limit-1]
		next = encodeCursor(last.AttemptedAt, last.DeliveryID, last.Attempt)
	}
	out := make([]Attempt, len(rows))
	for i, r := range rows {
		out[i] = Attempt{DeliveryID: r.DeliveryID, EventID: r.EventID, EventType: r.EventType, Attempt: int(r.Attempt),
			AttemptedAt: r.AttemptedAt, Latency: time.Duration(r.LatencyMs) * time.Millisecond, Error: r.Error,
			NextAttemptAt: r.NextAttemptAt}
		if excerpts {
			out[i].ResponseExcerpt = r.ResponseExcerpt
		}
		if r.ResponseStatus != nil {
			v := int(*r.ResponseStatus)
			out[i].ResponseStatus = &v
		}
	}
	return out, next, nil
}

func (s *Service) subscription(ctx context.Context, account uuid.UUID, raw string) (uuid.UUID, error) {
	id, ok := ids.Parse(raw)
	if !ok {
		return uuid.Nil, ErrSubscriptionNotFound
	}
	err := s.store.Do(ctx, func(q *db.Queries) error {
		_, err := q.SubscriptionGet(ctx, db.SubscriptionGetParams{AccountID: account, SubscriptionID: id})
		return err
	})
	if errors.Is(err, apperr.ErrNoRows) {
		return uuid.Nil, ErrSubscriptionNotFound
	}
	return id, err
}

func encodeCursor(at time.Time, delivery uuid.UUID, attempt int32) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%d|%s|%d", at.UnixMicro(), delivery, attempt))
}

func decodeCursor(c string) (time.Time, uuid.UUID, int32, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	parts := strings.Split(string(b), "|")
	if err != nil || len(parts) != 3 {
		return time.Time{}, uuid.Nil, 0, errBadCursor
	}
	us, err1 := strconv.ParseInt(parts[0], 10, 64)
	id, err2 := uuid.Parse(parts[1])
	n, err3 := strconv.ParseInt(parts[2], 10, 32)
	if err := errors.Join(err1, err2, err3); err != nil {
		return time.Time{}, uuid.Nil, 0, errBadCursor
	}
	return time.UnixMicro(us).UTC(), id, int32(n), nil
}

// MaxReplayWindow bounds a replay's window: no event is kept longer by default.
const MaxReplayWindow = 31 * 24 * time.Hour

// Health is a subscription's delivery attempts over a window: how many, how many succeeded,
// and their median and 95th-percentile latency.
type Health struct {
	Attempts, Succeeded int
	P50, P95            time.Duration
}

// HealthSince is the health of each of the account's subscriptions since a time, by id.
func (s *Service) HealthSince(ctx context.Context, account uuid.UUID, since time.Time) (map[uuid.UUID]Health, error) {
	var rows []db.SubscriptionHealthRow
	err := s.store.DoStale(ctx, func(q *db.Queries) (err error) { // the console's aggregate: a standby may answer
		rows, err = q.SubscriptionHealth(ctx, db.SubscriptionHealthParams{AccountID: account, AttemptedAt: since})
		return err
	})
	out := make(map[uuid.UUID]Health, len(rows))
	for _, r := range rows {
		out[r.SubscriptionID] = Health{Attempts: int(r.Attempts), Succeeded: int(r.Succeeded),
			P50: time.Duration(r.P50Ms * float64(time.Millisecond)), P95: time.Duration(r.P95Ms * float64(time.Millisecond))}
	}
	return out, err
}

// ForgetResponses clears the response excerpts recorded for the deliveries of events, in the
// caller's transaction (an erasure's: a receiver may have echoed what it was sent).
func ForgetResponses(ctx context.Context, q *db.Queries, accountID uuid.UUID, events []uuid.UUID) error {
	if len(events) == 0 {
		return nil
	}
	_, err := q.AttemptsForgetResponses(ctx, db.AttemptsForgetResponsesParams{AccountID: accountID, EventIds: events})
	return err
}
