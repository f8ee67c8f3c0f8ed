package segment

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/platform/store"
)

// Errors of the membership operations.
var (
	ErrDynamic = apperr.New(apperr.KindInvalid, "SegmentIsDynamic", "a dynamic segment's members are its filter's: only a snapshot segment's change by hand")
	// ErrNoContact is a hand change of a contact the account does not have.
	ErrNoContact = errors.New("segment: no such contact")
)

// Members limits.
const (
	DefaultMembersPage = 100
	MaxMembersPage     = 1000
)

// MemberPage is a page of a segment's members by contact id, and how many it has.
type MemberPage struct {
	Members []MemberRow
	Count   int64
	// Next is the last member's id when more may follow.
	Next *uuid.UUID
}

// MemberRow is a member and when it entered.
type MemberRow struct {
	ContactID uuid.UUID
	AddedAt   time.Time
}

// Members is a page of the segment's members after contact id after, with their count, as of
// one snapshot.
func (s *Service) Members(ctx context.Context, account, id, after uuid.UUID, limit int) (MemberPage, error) {
	var out MemberPage
	err := s.store.ReadSnapshot(ctx, func(q *db.Queries) error {
		if _, err := q.SegmentGet(ctx, db.SegmentGetParams{AccountID: account, SegmentID: id}); err != nil {
			return err
		}
		rows, err := q.SegmentMembersPage(ctx, db.SegmentMembersPageParams{AccountID: account, SegmentID: id, After: after,
			MaxRows: int32(limit)})
		if err != nil {
			return err
		}
		if out.Count, err = q.SegmentMembersCount(ctx, db.SegmentMembersCountParams{AccountID: account, SegmentID: id}); err != nil {
			return err
		}
		out.Members = make([]MemberRow, len(rows))
		for i, r := range rows {
			out.Members[i] = MemberRow{ContactID: r.ContactID, AddedAt: r.AddedAt}
		}
		if len(rows) == limit {
			out.Next = &rows[len(rows)-1].ContactID
		}
		return nil
	})
	if errors.Is(err, apperr.ErrNoRows) {
		return MemberPage{}, ErrNotFound
	}
	return out, err
}

// SetMember adds the contact to the snapshot segment, or removes it, with its event when that
// changes its membership and the segment is ready.
func (s *Service) SetMember(ctx context.Context, account, id, contact uuid.UUID, member bool) error {
	return s.store.InTx(ctx, func(tx store.Tx) error {
		row, err := tx.SegmentGetForMember(ctx, db.SegmentGetForMemberParams{AccountID: account, SegmentID: id})
		sg, err := found(db.Segment(row), store.Translate(err))
		if err != nil {
			return err
		}
		if sg.Kind == Dynamic {
			return ErrDynamic
		}
		who, err := tx.SegmentMemberContact(ctx, db.SegmentMemberContactParams{AccountID: account, ContactID: contact})
		if errors.Is(store.Translate(err), apperr.ErrNoRows) {
			return ErrNoContact
		} else if err != nil {
			return err
		}
		now := s.now()
		p := db.SegmentMemberAddParams{AccountID: account, SegmentID: id, ContactID: contact, Now: now}
		var n int64
		if member {
			n, err = tx.SegmentMemberAdd(ctx, p)
		} else {
			n, err = tx.SegmentMemberRemove(ctx, db.SegmentMemberRemoveParams{AccountID: account, SegmentID: id, ContactID: contact})
		}
		if err != nil || n == 0 || sg.Status != Ready {
			return err
		}
		info := event.ContactInfo{ContactID: contact.String(), EmailID: who.Email}
		if who.AssignedUserEmailID != nil {
			info.AssignedUserEmailID = *who.AssignedUserEmailID
		}
		var c change
		if err := c.add(ctx, id, sg.Name, true, contact, info, member, now); err != nil {
			return err
		}
		if len(c.events) == 0 {
			return nil
		}
		_, err = s.events.Record(ctx, tx, account, event.Recording{Events: c.events})
		return err
	})
}
