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
	"github.com/contactd/contactd/internal/webhook"
)

// Errors of the visibility operations.
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

// Redeliver queues one more attempt of a delivery, now.
func (s *Service) Redeliver(ctx context.Context, account uuid.UUID, rawSub, rawDelivery string) (Delivery, error) {
	sub, err := s.subscription(ctx, account, rawSub)
	if err != nil {
		return Delivery{}, err
	}
	id, ok := ids.Parse(rawDelivery)
	if !ok {
		return Delivery{}, ErrDeliveryNotFound
	}
	var d Delivery
	err = s.store.InTx(ctx, func(tx store.Tx) error {
		subRow, err := tx.SubscriptionGet(ctx, db.SubscriptionGetParams{AccountID: account, SubscriptionID: sub})
		if err != nil {
			return err
		}
		if subRow.Status == "Removed" {
			return apperr.Invalid(apperr.Field("path.subscriptionId", "status", "the subscription is removed"))
		}
		row, err := tx.DeliveryGet(ctx, db.DeliveryGetParams{AccountID: account, SubscriptionID: sub, DeliveryID: id})
		if errors.Is(store.Translate(err), apperr.ErrNoRows) {
			return ErrDeliveryNotFound
		} else if err != nil {
			return err
		}
		now := s.now()
		if err := tx.DeliveryRequeue(ctx, db.DeliveryRequeueParams{AccountID: account, DeliveryID: id, Now: &now}); err != nil {
			return err
		}
		d = Delivery{ID: id, EventID: row.EventID, EventType: row.EventType, Status: "Pending", Attempts: int(row.Attempts), NextAttemptAt: &now}
		tx.AfterCommit(s.queue.Wake)
		return nil
	})
	return d, err
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

// MaxReplayEvents bounds what one request queues: a window of more events is refused (400),
// and so is a replay that would leave more than this many of the subscription's deliveries
// Pending (429, until the earlier ones are delivered). One request cannot queue a month of a
// busy account's events, and repeated replays cannot pile up without end.
const MaxReplayEvents = 10_000

// replayIDSlack widens a replay's bounds on event ids past its window of time.
const replayIDSlack = time.Minute

// replayRetryAfter is when to try a refused replay again: time for a receiver to take a good
// part of the backlog.
const replayRetryAfter = time.Minute

// Replay queues one more delivery to the subscription of each kept event of its type that
// occurred in [since, until), in the feed's order, and returns how many it queued.
func (s *Service) Replay(ctx context.Context, account uuid.UUID, rawSub string, since, until time.Time) (int, error) {
	sub, ok := ids.Parse(rawSub)
	if !ok {
		return 0, ErrSubscriptionNotFound
	}
	switch {
	case !since.Before(until):
		return 0, apperr.Invalid(apperr.Field("body.until", "minimum", "until must be after since"))
	case until.Sub(since) > MaxReplayWindow:
		return 0, apperr.Invalid(apperr.Field("body.since", "maximum", "a replay covers at most 31 days"))
	}
	// An event's id is of its time (webhook.NewEventID), so the window's ids bound the
	// partitions read; a minute wider, for the events recorded before migration 00032, whose
	// ids are of the clock a few milliseconds after their time.
	sinceID, untilID := store.EventIDFloor(since.Add(-replayIDSlack)), store.EventIDFloor(until.Add(replayIDSlack))
	var n int
	err := s.store.InTx(ctx, func(tx store.Tx) (err error) {
		row, err := tx.SubscriptionGet(ctx, db.SubscriptionGetParams{AccountID: account, SubscriptionID: sub})
		switch {
		case err != nil:
			return err
		case row.Status == "Removed":
			return apperr.Invalid(apperr.Field("path.subscriptionId", "status", "the subscription is removed"))
		}
		room, err := tx.ReplayRoom(ctx, db.ReplayRoomParams{AccountID: account, SubscriptionID: sub, Since: since, Until: until,
			SinceID: sinceID, UntilID: untilID, EventsLimit: MaxReplayEvents + 1, PendingLimit: MaxReplayEvents})
		switch {
		case err != nil:
			return err
		case room.Events > MaxReplayEvents:
			return apperr.Invalid(apperr.Field("body.since", "maxEvents",
				fmt.Sprintf("the window holds more than %d events, the most one replay queues: replay shorter windows", MaxReplayEvents)))
		case room.Pending+room.Events > MaxReplayEvents:
			e := apperr.New(apperr.KindRateLimited, "TooManyRequests", fmt.Sprintf(
				"the subscription has %d deliveries pending: a replay of %d more events would pass %d; retry when they are delivered",
				room.Pending, room.Events, MaxReplayEvents))
			e.RetryAfter = replayRetryAfter
			return e
		}
		n, err = s.replayPages(ctx, tx, account, sub, db.EventsForReplayParams{AccountID: account, EventType: row.EventType,
			Since: since, Until: until, SinceID: sinceID, UntilID: untilID, AfterXid: "0", WithPayloads: row.Filter != nil,
			RowLimit: replayPage})
		return err
	})
	if errors.Is(err, apperr.ErrNoRows) {
		return 0, ErrSubscriptionNotFound
	}
	return n, err
}

// replayPage is how many events a replay reads and plans at once: with payloads (for a
// filter), at most about 800 KiB of them (activity details are at most 8 KiB), so that replays
// side by side hold little memory; a replay of MaxReplayEvents takes 100 pages.
const replayPage = 100

// replayPages queues a delivery to sub of each event of p's window that its filter wants, a
// page at a time, in the feed's order: the due times, a microsecond apart, keep it.
func (s *Service) replayPages(ctx context.Context, tx store.Tx, account, sub uuid.UUID, p db.EventsForReplayParams) (int, error) {
	queued, now := 0, s.now()
	for seq := 1; ; {
		rows, err := tx.EventsForReplay(ctx, p)
		if err != nil || len(rows) == 0 {
			return queued, err
		}
		replayed := make([]webhook.Prepared, len(rows))
		for i, r := range rows {
			replayed[i] = webhook.Prepared{ID: r.EventID, Type: webhook.EventType(p.EventType), Payload: []byte(r.Payload),
				At: now.Add(time.Duration(seq) * time.Microsecond)}
			seq++
		}
		ids, err := s.events.Record(ctx, tx, account, webhook.Recording{To: sub, Replayed: replayed})
		if err != nil {
			return queued, err
		}
		queued += len(ids)
		last := rows[len(rows)-1]
		p.AfterXid, p.AfterEvent = last.PositionXid, last.EventID
	}
}

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
