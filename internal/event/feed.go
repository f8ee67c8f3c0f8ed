// The events feed: every event of an account, subscribed to or not, in the order a consumer
// must process them, for as long as they are kept, and the pruning that keeps them for that
// long. Events are written in the transactions of the changes that cause them (events.go).
//
// The order is the order of the writing transactions' ids (xid8), and a read returns only
// events of transactions below its snapshot's xmin: every transaction that started before
// them has finished, so no event can still appear behind them. Transactions commit out of
// the order they started in; the horizon is what keeps a poller's cursor from passing an
// event that commits late. The price: one long transaction, in any database of the PostgreSQL
// cluster, holds the feed back while it runs.

package event

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/platform/ids"
	"github.com/contactd/contactd/internal/platform/queue"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/platform/turns"
)

// ErrNotFound is the answer for an unknown event, another account's, or one pruned.
var ErrNotFound = apperr.New(apperr.KindNotFound, "EventDoesNotExist", "event does not exist")

var errBadCursor = apperr.Invalid(apperr.Field("query.after", "format", "not a cursor this feed returned"))

// Feed reads the feed and prunes it.
type Feed struct {
	store     *store.Store
	retention time.Duration
	now       func() time.Time
	log       *slog.Logger
	turns     *turns.Turns
}

// New returns the feed over st, keeping events for retention.
// Its pages and a contact's events take turns (nil: none) with the process's other heavy reads.
func NewFeed(st *store.Store, retention time.Duration, now func() time.Time, log *slog.Logger, reads *turns.Turns) *Feed {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if reads == nil {
		reads = turns.New(1 << 20) // as good as none
	}
	return &Feed{store: st, retention: retention, now: now, log: log, turns: reads}
}

// FeedPage is a page of the feed: the events' payloads, exactly as delivered, and where to go on.
type FeedPage struct {
	Events []string
	// Next is the cursor after the last event (the one given, after an empty page).
	Next string
	// More is whether the page was full (limit events, or MaxFeedPageBytes): more may be ready now.
	More bool
}

// MaxFeedPageBytes is about the most a page of the feed holds: a page ends with the event that
// reaches it.
const MaxFeedPageBytes = 1 << 20

// Page returns up to limit of the account's events after the cursor after ("" from the
// oldest kept), of eventType only when it is set.
func (s *Feed) Page(ctx context.Context, accountID uuid.UUID, after string, eventType *string, limit int) (FeedPage, error) {
	pos, err := parseCursor(after)
	if err != nil {
		return FeedPage{}, err
	}
	release, err := s.turns.Take(ctx, accountID)
	if err != nil {
		return FeedPage{}, store.Translate(err)
	}
	defer release()
	var rows []db.EventsFeedRow
	err = s.store.Do(ctx, func(q *db.Queries) error {
		// two statements: the page's snapshot is taken after the horizon was read
		horizon, err := q.EventsFeedHorizon(ctx, accountID)
		if err != nil {
			return err
		}
		rows, err = q.EventsFeed(ctx, db.EventsFeedParams{AccountID: accountID, EventType: eventType,
			AfterXid: strconv.FormatUint(pos.xid, 10), AfterEvent: pos.event, Horizon: horizon, RowLimit: int32(limit), MaxBytes: MaxFeedPageBytes})
		return err
	})
	if err != nil {
		return FeedPage{}, err
	}
	p := FeedPage{Events: make([]string, len(rows)), More: len(rows) == limit}
	for i, r := range rows {
		p.Events[i] = r.Payload
		p.More = p.More || r.Upto >= MaxFeedPageBytes
		if pos.xid, err = strconv.ParseUint(r.PositionXid, 10, 64); err != nil {
			return FeedPage{}, err
		}
		pos.event = r.EventID
	}
	p.Next = pos.String()
	return p, nil
}

// Get returns one event's payload.
func (s *Feed) Get(ctx context.Context, accountID uuid.UUID, rawID string) ([]byte, error) {
	id, ok := ids.Parse(rawID)
	if !ok {
		return nil, ErrNotFound
	}
	var payload string
	err := s.store.Do(ctx, func(q *db.Queries) (err error) {
		payload, err = q.EventGet(ctx, db.EventGetParams{AccountID: accountID, EventID: id})
		return err
	})
	if errors.Is(err, apperr.ErrNoRows) {
		return nil, ErrNotFound
	}
	return []byte(payload), err
}

// pruneBatch is how many rows one statement of the pruning deletes, so no transaction of
// it grows with the backlog.
const pruneBatch = 5000

// PruneTask keeps, every hour, the events' partitions of the days ahead made, and prunes the
// events older than the retention with their deliveries and attempts.
func (s *Feed) PruneTask() queue.Task {
	return queue.Task{Name: "events_retention", Every: time.Hour, Run: func(ctx context.Context) error {
		p, err := s.Prune(ctx)
		if p.Partitions > 0 || p.Rows > 0 || p.Deliveries > 0 || p.Orphans > 0 {
			s.log.Info("pruned events past their retention", slog.Int("partitions", p.Partitions),
				slog.Int64("default_rows", p.Rows), slog.Int64("deliveries", p.Deliveries),
				slog.Int64("orphans_failed", p.Orphans), slog.Duration("retention", s.retention))
		}
		return err
	}}
}

// Pruned is what one pruning removed.
type Pruned struct {
	Partitions int   // days of events dropped whole
	Rows       int64 // events deleted from the default partition
	Deliveries int64 // deliveries deleted, their attempts with them
	Orphans    int64 // pending deliveries failed: their event is gone
}

// Prune makes the events' partitions of the days ahead, then removes what is past the
// retention: the partitions of the days entirely before it, the default partition's older
// events one by one, the deliveries queued before it, and fails the pending deliveries whose
// events are gone. An event is kept for the retention at least, and less than a day longer.
func (s *Feed) Prune(ctx context.Context) (Pruned, error) {
	var p Pruned
	now := s.now()
	before := now.Add(-s.retention)
	if _, err := s.store.EnsureEventPartitions(ctx, now, now.Add(store.EventPartitionsAhead)); err != nil {
		return p, err
	}
	dropped, err := s.store.DropEventPartitions(ctx, before)
	p.Partitions = len(dropped)
	if err != nil {
		return p, err
	}
	if p.Rows, err = s.pruneBatches(ctx, func(q *db.Queries) (int64, error) {
		return q.EventsPrune(ctx, db.EventsPruneParams{Before: before, Batch: pruneBatch})
	}); err != nil {
		return p, err
	}
	if p.Deliveries, err = s.pruneBatches(ctx, func(q *db.Queries) (int64, error) {
		return q.DeliveriesPrune(ctx, db.DeliveriesPruneParams{Before: before, Batch: pruneBatch})
	}); err != nil {
		return p, err
	}
	err = s.store.Do(ctx, func(q *db.Queries) (err error) {
		p.Orphans, err = q.DeliveriesOrphanedFail(ctx, now)
		return err
	})
	return p, err
}

// pruneBatches runs one batch of a pruning until it deletes fewer than a batch.
func (s *Feed) pruneBatches(ctx context.Context, batch func(q *db.Queries) (int64, error)) (int64, error) {
	var total int64
	for {
		var n int64
		err := s.store.Do(ctx, func(q *db.Queries) (err error) {
			n, err = batch(q)
			return err
		})
		total += n
		if err != nil || n < pruneBatch {
			return total, err
		}
	}
}

// position is a place in an account's feed: after the event, of the transaction xid.
type position struct {
	xid   uint64
	event uuid.UUID
}

func (p position) String() string {
	b := make([]byte, 24)
	binary.BigEndian.PutUint64(b, p.xid)
	copy(b[8:], p.event[:])
	return base64.RawURLEncoding.EncodeToString(b)
}

func parseCursor(s string) (position, error) {
	if s == "" {
		return position{}, nil
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != 24 {
		return position{}, errBadCursor
	}
	var p position
	p.xid = binary.BigEndian.Uint64(b)
	copy(p.event[:], b[8:])
	return p, nil
}

// ContactEvent is one event of a contact, as its page in the console shows it.
type ContactEvent struct {
	ID, Type string
	At       time.Time
	Payload  string
}

// OfContact lists up to limit of a contact's events, oldest first (test events have no contact).
func (s *Feed) OfContact(ctx context.Context, accountID, contactID uuid.UUID, limit int) ([]ContactEvent, error) {
	release, err := s.turns.Take(ctx, accountID)
	if err != nil {
		return nil, store.Translate(err)
	}
	defer release()
	var rows []db.ContactEventsRow
	err = s.store.DoStale(ctx, func(q *db.Queries) (err error) { // the console's page: a standby may answer
		rows, err = q.ContactEvents(ctx, db.ContactEventsParams{AccountID: accountID, ContactID: &contactID, Limit: int32(limit)})
		return err
	})
	out := make([]ContactEvent, len(rows))
	for i, r := range rows {
		out[i] = ContactEvent{ID: r.EventID.String(), Type: r.EventType, At: r.OccurredAt, Payload: r.Payload}
	}
	return out, err
}
