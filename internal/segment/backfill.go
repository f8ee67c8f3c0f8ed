package segment

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/platform/store"
)

// The backfill. A new segment, or one whose filter changed, is Backfilling: its backfill walks
// the account's contacts in pages by id, one page a claim (a lease on the segment's row, one
// process at a time), the claims taking turns between accounts (SegmentBackfillClaim), so one
// account's segments never hold another's for more than a page; in each
// page's transaction locks the page's contacts (never waiting for a write: the page ends
// before a contact one holds, and the next page starts with it once the write is done), sets
// their membership, and records how far it went. It sends no events. A write meanwhile keeps
// the segment's membership of its own contacts too (Keep), so a contact written behind the
// walk is current, and one written ahead of it is read again.
// A change of the filter during the walk starts a new generation from the start; the
// old generation's pass stops at its next page. After the last page, the segment's rows of
// contacts that are gone are deleted (a process of the release before, during a rollout,
// deletes contacts without their rows), and the segment is made Ready, in the transaction
// that bumps the account's segments version: from then on writes send its events.

// Contacts reads pages of an account's contacts for a backfill (the contact package).
type Contacts interface {
	// BackfillPage is up to limit of the account's contacts after id after, in id order,
	// locked for share in q's transaction, and whether they are the last. It never waits for
	// a contact a write holds: the page ends before it (none when it is the first).
	BackfillPage(ctx context.Context, q *db.Queries, account, after uuid.UUID, limit int) (ms []Member, last bool, err error)
}

// Backfill tuning.
const (
	BackfillPage  = 500
	backfillLease = time.Minute
)

// Wake tells this process's backfill that a segment needs one.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Start runs RunBackfills in the background, until Stop.
func (s *Service) Start(contacts Contacts, poll time.Duration, log *slog.Logger) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.stop = func() { cancel(); <-done }
	go func() {
		defer close(done)
		s.RunBackfills(ctx, contacts, poll, log)
	}()
}

// Stop ends the backfill Start runs: a page in progress rolls back, the segment is given back,
// and the next process to claim it does the page again.
func (s *Service) Stop() {
	if s.stop != nil {
		s.stop()
	}
}

// RunBackfills fills backfilling segments until ctx ends: at once when woken (Wake), and every
// poll for those saved by other processes, or whose backfill's process went away (its lease
// ran out).
func (s *Service) RunBackfills(ctx context.Context, contacts Contacts, poll time.Duration, log *slog.Logger) {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		for {
			did, err := s.BackfillOne(ctx, contacts)
			if err != nil {
				if ctx.Err() == nil {
					log.Error("segment backfill", "err", err)
				}
				break
			}
			if !did {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-t.C:
		}
	}
}

// errGenerationChanged stops a pass whose segment's filter changed (or that was deleted).
var errGenerationChanged = errors.New("segment changed during its backfill")

// errPageHeld is a page whose first contact a write holds: the page is tried again after
// maxPageWait at most, once the write is likely done.
var errPageHeld = errors.New("segment backfill: the page's first contact is being written")

const maxPageWait = 50 * time.Millisecond

// BackfillOne claims a backfilling segment and fills it, and reports whether there was one.
// A backfill that fails gives the segment back (release).
func (s *Service) BackfillOne(ctx context.Context, contacts Contacts) (bool, error) {
	var claim db.SegmentBackfillClaimRow
	lease := s.now().Add(backfillLease)
	err := s.store.Do(ctx, func(q *db.Queries) (err error) {
		claim, err = q.SegmentBackfillClaim(ctx, db.SegmentBackfillClaimParams{Now: s.now(), Until: lease})
		return err
	})
	if errors.Is(store.Translate(err), apperr.ErrNoRows) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if err := s.backfill(ctx, contacts, claim, &lease); err != nil {
		s.release(claim, lease)
		return true, err
	}
	return true, nil
}

// release gives back a segment whose backfill stopped on an error, the lease still the one it
// set (lease), so that the next claim takes it up at once. It has a context of its own: a
// backfill stopped by its context (the process stopping) hands its segment over as well. A
// release that fails leaves the lease to run out.
func (s *Service) release(claim db.SegmentBackfillClaimRow, lease time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.store.Do(ctx, func(q *db.Queries) error {
		return q.SegmentBackfillRelease(ctx, db.SegmentBackfillReleaseParams{AccountID: claim.AccountID, SegmentID: claim.SegmentID,
			Generation: claim.Generation, Lease: lease})
	})
}

// backfill fills one page of claim's segment, from where its last page stopped, and makes it
// ready after its last page; lease is the lease on the segment it holds. A page ends the turn:
// it gives the segment back (SegmentBackfillProgress), and the next claim serves the account
// whose turn came longest ago, so backfills are shared between accounts page by page.
func (s *Service) backfill(ctx context.Context, contacts Contacts, claim db.SegmentBackfillClaimRow, lease *time.Time) error {
	sg := storedSegment{ID: claim.SegmentID}
	if err := json.Unmarshal(claim.Filter, &sg.Filter); err != nil {
		return err
	}
	sg.Filter = sg.Filter.Compile()
	after := uuid.Nil
	if claim.BackfillAfter != nil {
		after = *claim.BackfillAfter
	}
	for wait := time.Millisecond; ; wait = min(2*wait, maxPageWait) {
		var last bool
		var until *time.Time
		err := s.store.InTx(ctx, func(tx store.Tx) (err error) {
			last, until, err = s.backfillPage(ctx, tx, contacts, claim, sg, after)
			return err
		})
		switch {
		case errors.Is(err, errPageHeld):
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
			continue
		case errors.Is(err, errGenerationChanged):
			return nil
		case err != nil:
			return err
		case !last:
			return nil
		}
		if until != nil {
			*lease = *until
		}
		return s.finish(ctx, claim)
	}
}

// finish makes claim's segment ready after its last page: its rows of contacts that are gone
// deleted, in the transaction that bumps the account's segments version.
func (s *Service) finish(ctx context.Context, claim db.SegmentBackfillClaimRow) error {
	return s.store.InTx(ctx, func(tx store.Tx) error {
		if err := tx.SegmentMembersOfNoContact(ctx, db.SegmentMembersOfNoContactParams{AccountID: claim.AccountID,
			SegmentID: claim.SegmentID}); err != nil {
			return err
		}
		n, err := tx.SegmentBackfillDone(ctx, db.SegmentBackfillDoneParams{AccountID: claim.AccountID, SegmentID: claim.SegmentID,
			Generation: claim.Generation})
		if err != nil || n == 0 {
			return err
		}
		return tx.SegmentsVersionBump(ctx, claim.AccountID)
	})
}

// backfillPage sets the membership of the page of contacts after after, and returns whether
// it was the last page, and then the lease it keeps on the segment to make it ready (else the
// segment is given back).
func (s *Service) backfillPage(ctx context.Context, tx store.Tx, contacts Contacts, claim db.SegmentBackfillClaimRow,
	sg storedSegment, after uuid.UUID) (bool, *time.Time, error) {
	cur, err := tx.SegmentBackfillLock(ctx, db.SegmentBackfillLockParams{AccountID: claim.AccountID, SegmentID: claim.SegmentID})
	if errors.Is(store.Translate(err), apperr.ErrNoRows) || (err == nil && (cur.Generation != claim.Generation || cur.Status != Backfilling)) {
		return false, nil, errGenerationChanged
	} else if err != nil {
		return false, nil, err
	}
	ms, last, err := contacts.BackfillPage(ctx, tx.Queries, claim.AccountID, after, BackfillPage)
	if err != nil {
		return false, nil, err
	}
	if len(ms) == 0 {
		if !last {
			return false, nil, errPageHeld
		}
		return true, nil, nil // the segment's lease is still the claim's
	}
	ids := make([]uuid.UUID, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	members, err := tx.SegmentBackfillMembers(ctx, db.SegmentBackfillMembersParams{AccountID: claim.AccountID,
		SegmentID: claim.SegmentID, ContactIds: ids})
	if err != nil {
		return false, nil, err
	}
	was := make(map[uuid.UUID]bool, len(members))
	for _, id := range members {
		was[id] = true
	}
	now := s.now()
	var c change
	for _, m := range ms {
		if is := sg.Filter.Matches(m.Subject); is != was[m.ID] {
			if err := c.add(ctx, sg.ID, "", false, m.ID, m.Info, is, now); err != nil {
				return false, nil, err
			}
		}
	}
	if err := s.apply(ctx, tx, claim.AccountID, c, now); err != nil {
		return false, nil, err
	}
	var keep *time.Time
	if last {
		until := now.Add(backfillLease)
		keep = &until
	}
	err = tx.SegmentBackfillProgress(ctx, db.SegmentBackfillProgressParams{AccountID: claim.AccountID, SegmentID: claim.SegmentID,
		After: &ms[len(ms)-1].ID, Evaluated: int64(len(ms)), Until: keep})
	return last, keep, err
}
