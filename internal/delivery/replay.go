package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/platform/ids"
	"github.com/contactd/contactd/internal/platform/store"
)

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
	// An event's id is of its time (event.NewEventID), so the window's ids bound the
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
		replayed := make([]event.Prepared, len(rows))
		for i, r := range rows {
			replayed[i] = event.Prepared{ID: r.EventID, Type: event.EventType(p.EventType), Payload: []byte(r.Payload),
				At: now.Add(time.Duration(seq) * time.Microsecond)}
			seq++
		}
		ids, err := s.events.Record(ctx, tx, account, event.Recording{To: sub, Replayed: replayed})
		if err != nil {
			return queued, err
		}
		queued += len(ids)
		last := rows[len(rows)-1]
		p.AfterXid, p.AfterEvent = last.PositionXid, last.EventID
	}
}
