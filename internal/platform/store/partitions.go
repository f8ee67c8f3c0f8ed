package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Events are partitioned by their ids, version 7 UUIDs of the time they occurred at
// (migration 00032): one partition per UTC day, named by its day. Partitions are made
// EventPartitionsAhead days ahead, when the database is migrated and every hour by the
// events' retention, so an event always has its day's partition; one that has none (its
// id not made by contactd, or its day never prepared) lands in webhook_events_default.
const (
	eventPartitionPrefix = "webhook_events_p"
	eventPartitionDay    = 24 * time.Hour
	EventPartitionsAhead = 7 * eventPartitionDay
	// partitionsLock serialises the changes to the events' partitions of every process.
	partitionsLock = 0x636f6e7464 // "contd"
)

// EventIDFloor is the smallest version 7 UUID of at's millisecond: every event id of at or
// later sorts after it, every id of an earlier millisecond before it.
func EventIDFloor(at time.Time) uuid.UUID {
	var id uuid.UUID
	ms := uint64(at.UnixMilli())
	for i := range 6 {
		id[i] = byte(ms >> (40 - 8*i))
	}
	return id
}

func eventPartition(day time.Time) string { return eventPartitionPrefix + day.Format("20060102") }

// EventPartitionDays lists the days that have a partition of events, in order.
func (s *Store) EventPartitionDays(ctx context.Context) ([]time.Time, error) {
	rows, err := s.Pool.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'webhook_events'::regclass AND c.relname LIKE 'webhook\_events\_p%' ORDER BY c.relname`)
	if err != nil {
		return nil, Translate(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, Translate(err)
	}
	days := make([]time.Time, 0, len(names))
	for _, name := range names {
		day, err := time.Parse("20060102", strings.TrimPrefix(name, eventPartitionPrefix))
		if err != nil {
			return nil, fmt.Errorf("events partition %q: %w", name, err)
		}
		days = append(days, day)
	}
	return days, nil
}

// EnsureEventPartitions makes the partitions of the days from from's to to's (UTC, both
// included) that have none, and returns how many it made. The events of such a day already
// in the default partition move into the new one, in the same transaction: attaching a
// partition requires that the default holds none of its rows.
func (s *Store) EnsureEventPartitions(ctx context.Context, from, to time.Time) (int, error) {
	have, err := s.EventPartitionDays(ctx)
	if err != nil {
		return 0, err
	}
	made := 0
	for day := from.UTC().Truncate(eventPartitionDay); !day.After(to); day = day.Add(eventPartitionDay) {
		if containsDay(have, day) {
			continue
		}
		created, err := s.makeEventPartition(ctx, day)
		if err != nil {
			return made, fmt.Errorf("events partition of %s: %w", day.Format(time.DateOnly), err)
		}
		if created {
			made++
		}
	}
	return made, nil
}

func containsDay(days []time.Time, day time.Time) bool {
	for _, d := range days {
		if d.Equal(day) {
			return true
		}
	}
	return false
}

func (s *Store) makeEventPartition(ctx context.Context, day time.Time) (created bool, err error) {
	name := eventPartition(day)
	lo, hi := EventIDFloor(day), EventIDFloor(day.Add(eventPartitionDay))
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT pg_advisory_xact_lock($1), to_regclass($2) IS NOT NULL`, partitionsLock, name).
			Scan(nil, &exists); err != nil || exists {
			return err
		}
		rng := fmt.Sprintf(`event_id >= '%s' AND event_id < '%s'`, lo, hi)
		for _, stmt := range []string{
			// a write waits rather than stalls every write of events behind this one
			`SET LOCAL lock_timeout = '2s'`,
			// no event of the day can land in the default while its rows move out of it
			`LOCK TABLE webhook_events_default IN SHARE ROW EXCLUSIVE MODE`,
			// made alone, then attached: attaching locks the parent less than CREATE ...
			// PARTITION OF would (SHARE UPDATE EXCLUSIVE: writes go on), and the CHECK
			// spares it a scan of the new table
			fmt.Sprintf(`CREATE TABLE %s (LIKE webhook_events INCLUDING DEFAULTS, CONSTRAINT %[1]s_range CHECK (%s))`, name, rng),
			fmt.Sprintf(`WITH moved AS (DELETE FROM webhook_events_default WHERE %s RETURNING *) INSERT INTO %s SELECT * FROM moved`, rng, name),
			fmt.Sprintf(`ALTER TABLE webhook_events ATTACH PARTITION %s FOR VALUES FROM ('%s') TO ('%s')`, name, lo, hi),
			fmt.Sprintf(`ALTER TABLE %s DROP CONSTRAINT %[1]s_range`, name),
		} {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		created = true
		return nil
	})
	return created, Translate(err)
}

// DropEventPartitions drops the partitions whose whole day is before before: retention
// without deleting a row. It returns the days dropped. Dropping a partition locks all
// events for an instant: a drop that cannot have its lock within a second gives up (the
// error says so) rather than hold every write of events behind it; the next call retries.
func (s *Store) DropEventPartitions(ctx context.Context, before time.Time) ([]time.Time, error) {
	days, err := s.EventPartitionDays(ctx)
	if err != nil {
		return nil, err
	}
	var dropped []time.Time
	for _, day := range days {
		if day.Add(eventPartitionDay).After(before) {
			break
		}
		err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, partitionsLock); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '1s'`); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `DROP TABLE IF EXISTS `+eventPartition(day))
			return err
		})
		if err != nil {
			return dropped, fmt.Errorf("drop events partition of %s: %w", day.Format(time.DateOnly), Translate(err))
		}
		dropped = append(dropped, day)
	}
	return dropped, nil
}
