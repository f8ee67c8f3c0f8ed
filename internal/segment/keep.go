package segment

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/platform/store"
)

// Keeping membership current. A write that changes contacts holds the account's segments for
// its transaction (Hold: a locking read of the account's segments version, so that a change of
// a segment waits for the write, and a write after it sees it), and once its change is made
// hands the contacts as they are now to Keep, which sets their dynamic segments' membership
// and records a ContactEnteredSegment or ContactLeftSegment event for each change of a ready
// segment, in the same transaction. A write that deletes contacts hands them to Leave first.
//
// Two writes need no transaction of their own, and stay one statement in their group commit:
// a create, whose new contact is a member of nothing yet, records what it enters (Entered) in
// the statement that inserts it; a tag change reads the whole contact and the segments it is
// in, and its compare-and-swap of the row records the change (Changed). Each checks, in its
// statement, that the account still has the segments version it was evaluated at, with the
// same locking read.

// Member is a contact as a write left it.
type Member struct {
	ID      uuid.UUID
	Subject Subject
	Info    event.ContactInfo
}

// Hold is an account's segments as a write's transaction holds them.
type Hold struct {
	Account uuid.UUID
	Version int64
	dynamic []storedSegment
}

// Dynamic reports whether the account has dynamic segments: whether Keep has anything to do.
func (h *Hold) Dynamic() bool { return len(h.dynamic) > 0 }

// Hold takes the account's segments for the rest of tx.
func (s *Service) Hold(ctx context.Context, tx store.Tx, account uuid.UUID) (*Hold, error) {
	version, err := tx.SegmentsHold(ctx, account)
	if err != nil {
		return nil, err
	}
	d, err := s.dynamicAt(ctx, tx.Queries, account, version)
	if err != nil {
		return nil, err
	}
	return &Hold{Account: account, Version: version, dynamic: d.segments}, nil
}

// Quiet is the account's segments version as this process last read it, and whether the
// account had no dynamic segment at it: a write may then skip Hold and Keep, and check the
// version in its statement (with a locking read); a statement that finds it stale is followed
// by Forget, and the write planned again.
func (s *Service) Quiet(ctx context.Context, account uuid.UUID) (version int64, quiet bool, err error) {
	d, err := s.cached(ctx, account)
	return d.version, len(d.segments) == 0, err
}

// Entered is what a new contact enters, for a create that records it in its own statement:
// the account's dynamic segments whose filter m meets, and the ContactEnteredSegment events of
// the ready ones, at the segments version this process last read (which the statement checks,
// as it checks Quiet's).
func (s *Service) Entered(ctx context.Context, account uuid.UUID, m Member, at time.Time) (version int64, ids []uuid.UUID, events []event.Prepared, err error) {
	c, err := s.Changed(ctx, account, m, nil, at)
	return c.Version, c.Entered, c.Events, err
}

// Membership is a contact's change of membership, as a write that records it in its own
// statement makes it.
type Membership struct {
	// Version is the segments version it was evaluated at: the statement checks it.
	Version       int64
	Entered, Left []uuid.UUID
	Events        []event.Prepared
}

// Changed is the change of membership of the contact m, as a write would leave it, from the
// dynamic segments it is in now (stored), at the segments version this process last read.
func (s *Service) Changed(ctx context.Context, account uuid.UUID, m Member, stored []uuid.UUID, at time.Time) (Membership, error) {
	d, err := s.cached(ctx, account)
	if err != nil {
		return Membership{}, err
	}
	out := Membership{Version: d.version, Entered: []uuid.UUID{}, Left: []uuid.UUID{}}
	var c change
	for _, sg := range d.segments {
		was, is := slices.Contains(stored, sg.ID), sg.Filter.Matches(m.Subject)
		if !sg.Ready {
			// a backfill page may set this contact's row between the read of stored and the
			// write, which holds no lock in between: the write sets the state it found, whatever
			// stored said (a backfilling segment sends no events)
			if is {
				out.Entered = append(out.Entered, sg.ID)
			} else {
				out.Left = append(out.Left, sg.ID)
			}
			continue
		}
		if was == is {
			continue
		}
		if is {
			out.Entered = append(out.Entered, sg.ID)
		} else {
			out.Left = append(out.Left, sg.ID)
		}
		if err := c.add(ctx, sg.ID, sg.Name, sg.Ready, m.ID, m.Info, is, at); err != nil {
			return Membership{}, err
		}
	}
	out.Events = c.events
	return out, nil
}

// Forget drops what this process knows of the account's segments: a statement found them
// changed.
func (s *Service) Forget(account uuid.UUID) {
	s.mu.Lock()
	delete(s.dynamic, account)
	s.mu.Unlock()
}

// MaxChangesPerWrite bounds the membership changes of one write: each is a row and an event,
// and each event a delivery to each of up to three subscriptions of its type, all written in
// the write's transaction. One contact makes at most MaxPerAccount; a batch of 1,000 new
// contacts in an account of 100 segments they all enter would make 100,000 events and 300,000
// deliveries in one transaction, which every other account's feed waits behind.
const MaxChangesPerWrite = 10_000

// TooManyChanges is Keep refusing a write that would make more than MaxChangesPerWrite
// membership changes; it wrote nothing of them.
type TooManyChanges struct{ Changes int }

func (e TooManyChanges) Error() string {
	return fmt.Sprintf("segment: the write would make %d membership changes, at most %d", e.Changes, MaxChangesPerWrite)
}

// Keep sets the membership of the contacts ms in the held account's dynamic segments to what
// their filters say of them now, with an event for each change of a ready segment; past
// MaxChangesPerWrite it writes nothing and returns TooManyChanges.
func (s *Service) Keep(ctx context.Context, tx store.Tx, h *Hold, ms []Member) error {
	if !h.Dynamic() || len(ms) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	rows, err := tx.SegmentMembershipsOf(ctx, db.SegmentMembershipsOfParams{AccountID: h.Account, ContactIds: ids})
	if err != nil {
		return err
	}
	in := make(map[[2]uuid.UUID]bool, len(rows))
	for _, r := range rows {
		in[[2]uuid.UUID{r.SegmentID, r.ContactID}] = true
	}
	now := s.now()
	var c change
	changes := 0
	for _, m := range ms {
		if err := ctx.Err(); err != nil {
			return err // the request's time is up: its evaluation stops between contacts
		}
		for _, sg := range h.dynamic {
			was, is := in[[2]uuid.UUID{sg.ID, m.ID}], sg.Filter.Matches(m.Subject)
			if was == is {
				continue
			}
			if changes++; changes > MaxChangesPerWrite {
				continue // counted, for the refusal to say how far over the write is
			}
			if err := c.add(ctx, sg.ID, sg.Name, sg.Ready, m.ID, m.Info, is, now); err != nil {
				return err
			}
		}
	}
	if changes > MaxChangesPerWrite {
		return TooManyChanges{Changes: changes}
	}
	return s.apply(ctx, tx, h.Account, c, now)
}

// Leave takes the contacts out of every segment they are in, dynamic or snapshot, with an
// event for each ready one, before a write deletes them (nothing else would: a membership row
// references no contact, migration 00051).
func (s *Service) Leave(ctx context.Context, tx store.Tx, account uuid.UUID, infos map[uuid.UUID]event.ContactInfo) error {
	ids := make([]uuid.UUID, 0, len(infos))
	for id := range infos {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	rows, err := tx.SegmentMembershipsOf(ctx, db.SegmentMembershipsOfParams{AccountID: account, ContactIds: ids})
	if err != nil || len(rows) == 0 {
		return err
	}
	now := s.now()
	var c change
	for _, r := range rows {
		if err := c.add(ctx, r.SegmentID, r.Name, r.Ready, r.ContactID, infos[r.ContactID], false, now); err != nil {
			return err
		}
	}
	return s.apply(ctx, tx, account, c, now)
}

// change is a write's membership changes and their events.
type change struct {
	p      db.SegmentMembersSetParams
	events []event.Prepared
}

func (c *change) add(ctx context.Context, segment uuid.UUID, name string, ready bool, contact uuid.UUID,
	info event.ContactInfo, enters bool, now time.Time) error {
	typ := event.ContactLeftSegment
	if enters {
		typ = event.ContactEnteredSegment
		c.p.NewSegmentIds, c.p.NewContactIds = append(c.p.NewSegmentIds, segment), append(c.p.NewContactIds, contact)
	} else {
		c.p.GoneSegmentIds, c.p.GoneContactIds = append(c.p.GoneSegmentIds, segment), append(c.p.GoneContactIds, contact)
	}
	if !ready {
		return nil // a backfilling segment's changes send no events
	}
	ev, err := event.Prepare(ctx, event.Event{Type: typ, ContactID: contact, Contact: info,
		Info: event.SegmentInfo{SegmentID: segment.String(), SegmentName: name}, At: now})
	c.events = append(c.events, ev)
	return err
}

func (s *Service) apply(ctx context.Context, tx store.Tx, account uuid.UUID, c change, now time.Time) error {
	if len(c.p.NewSegmentIds)+len(c.p.GoneSegmentIds) == 0 {
		return nil
	}
	c.p.AccountID, c.p.Now = account, now
	for _, ids := range []*[]uuid.UUID{&c.p.NewSegmentIds, &c.p.NewContactIds, &c.p.GoneSegmentIds, &c.p.GoneContactIds} {
		if *ids == nil {
			*ids = []uuid.UUID{}
		}
	}
	if err := tx.SegmentMembersSet(ctx, c.p); err != nil {
		return err
	}
	if len(c.events) == 0 {
		return nil
	}
	_, err := s.events.Record(ctx, tx, account, event.Recording{Events: c.events})
	return err
}

// cached is the account's dynamic segments as this process last read them, read now if it
// has not.
func (s *Service) cached(ctx context.Context, account uuid.UUID) (dynamicSegments, error) {
	s.mu.Lock()
	d, ok := s.dynamic[account]
	s.mu.Unlock()
	if ok {
		return d, nil
	}
	return s.dynamicAt(ctx, nil, account, -1)
}

// dynamicAt is the account's dynamic segments at version (from this process's cache when it
// has them at that version; -1: whatever version the account is at), read on q (nil: the
// pool).
func (s *Service) dynamicAt(ctx context.Context, q *db.Queries, account uuid.UUID, version int64) (dynamicSegments, error) {
	s.mu.Lock()
	d, ok := s.dynamic[account]
	s.mu.Unlock()
	if ok && d.version == version {
		return d, nil
	}
	// the writes that want the account's segments at one version (-1: the latest) share one
	// read of them; one whose reader failed (its request ended) reads them itself
	key := fmt.Sprintf("%s/%d", account, version)
	v, err, _ := s.loads.Do(key, func() (any, error) { return s.load(ctx, q, account) })
	if err == nil {
		return v.(dynamicSegments), nil
	}
	return s.load(ctx, q, account)
}

// load reads the account's dynamic segments on q (nil: the pool) and compiles them, for this
// process's cache.
func (s *Service) load(ctx context.Context, q *db.Queries, account uuid.UUID) (dynamicSegments, error) {
	var row db.SegmentsDynamicRow
	read := func(q *db.Queries) (err error) {
		row, err = q.SegmentsDynamic(ctx, account)
		return err
	}
	var err error
	if q != nil {
		err = read(q)
	} else {
		err = s.store.Do(ctx, read)
	}
	if err != nil {
		return dynamicSegments{}, err
	}
	var stored []struct {
		ID     uuid.UUID       `json:"id"`
		Name   string          `json:"name"`
		Ready  bool            `json:"ready"`
		Filter json.RawMessage `json:"filter"`
	}
	if err := json.Unmarshal(row.Segments, &stored); err != nil {
		return dynamicSegments{}, err
	}
	// a segment whose filter is the one this process compiled last keeps that compilation: an
	// edit of one segment compiles one, and the versions in use at once share the others
	s.mu.Lock()
	compiled := make(map[uuid.UUID]storedSegment, len(s.compiled[account]))
	for _, sg := range s.compiled[account] {
		compiled[sg.ID] = sg
	}
	s.mu.Unlock()
	d := dynamicSegments{version: row.Version, segments: make([]storedSegment, len(stored))}
	for i, r := range stored {
		sg := storedSegment{ID: r.ID, Name: r.Name, Ready: r.Ready, raw: r.Filter}
		if prev, ok := compiled[r.ID]; ok && bytes.Equal(prev.raw, r.Filter) {
			sg.Filter = prev.Filter
		} else {
			var f Filter
			if err := json.Unmarshal(r.Filter, &f); err != nil {
				return dynamicSegments{}, err
			}
			sg.Filter = f.Compile()
		}
		d.segments[i] = sg
	}
	s.mu.Lock()
	if len(s.dynamic) >= maxCachedAccounts || len(s.compiled) >= maxCachedAccounts {
		s.dynamic, s.compiled = map[uuid.UUID]dynamicSegments{}, map[uuid.UUID][]storedSegment{}
	}
	s.dynamic[account], s.compiled[account] = d, d.segments
	s.mu.Unlock()
	return d, nil
}
