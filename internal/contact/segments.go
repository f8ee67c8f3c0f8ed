package contact

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apitime"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/segment"
)

// Subject is what a segment's filter reads of c, as the API shows it (times to the
// millisecond).
func (c Contact) Subject() (segment.Subject, error) {
	e := c.Engagement
	at := func(t time.Time) time.Time { return apitime.From(t).Time }
	s := segment.Subject{
		Text: map[string]string{"email": c.Email, "name": deref(c.Name), "phone": deref(c.Phone),
			"assignedUserEmailId": deref(c.AssignedUserEmailID), "emailStatus": c.EmailStatus, "recordStatus": c.RecordStatus},
		LeadScore: float64(c.LeadScore),
		Numbers: map[string]float64{"engagement.numOfAIHandoffs": float64(e.AIHandoffs), "engagement.numOfDashboardClicks": float64(e.DashboardClicks),
			"engagement.numOfDashboardViews": float64(e.DashboardViews), "engagement.numOfEmailClicks": float64(e.EmailClicks),
			"engagement.numOfEmailOpens": float64(e.EmailOpens), "engagement.numOfEmailSends": float64(e.EmailSends),
			"engagement.numOfFormSubmissions": float64(e.FormSubmissions), "engagement.numOfPostcardScans": float64(e.PostcardScans)},
		Times: map[string]time.Time{"createdAt": at(c.CreatedAt), "updatedAt": at(c.UpdatedAt)},
	}
	for name, t := range map[string]*time.Time{"lastAIHandoffDate": e.LastAIHandoff, "lastDashboardClickedDate": e.LastDashboardClick,
		"lastDashboardViewedDate": e.LastDashboardView, "lastEmailClickDate": e.LastEmailClick, "lastEmailOpenDate": e.LastEmailOpen,
		"lastEmailSentDate": e.LastEmailSend, "lastFormSubmissionDate": e.LastFormSubmission, "lastPostcardScanDate": e.LastPostcardScan} {
		if t != nil {
			s.Times["engagement."+name] = at(*t)
		}
	}
	for _, t := range c.Tags {
		s.Tags = append(s.Tags, strings.ToLower(t))
	}
	for _, p := range c.Properties {
		a := p.Address
		s.Addresses = append(s.Addresses, map[string]string{"streetAddress": a.StreetAddress, "city": a.City,
			"county": a.County, "state": a.State, "zip": a.Zip})
	}
	if len(c.CustomFields) > 0 {
		if err := json.Unmarshal(c.CustomFields, &s.Custom); err != nil {
			return segment.Subject{}, err
		}
	}
	return s.Indexed(), nil // the account's segments are evaluated on it: its values folded once
}

// member is c as a segment write takes it.
func (c Contact) member() (segment.Member, error) {
	s, err := c.Subject()
	return segment.Member{ID: c.ID, Subject: s, Info: c.info()}, err
}

// BackfillPage implements segment.Contacts: the locked contacts up to the first one a write
// holds (SegmentBackfillContacts skips it), and whether none follows them.
func (s *Service) BackfillPage(ctx context.Context, q *db.Queries, account, after uuid.UUID, limit int) ([]segment.Member, bool, error) {
	rows, err := q.SegmentBackfillContacts(ctx, db.SegmentBackfillContactsParams{AccountID: account, After: after, MaxRows: int32(limit)})
	if err != nil {
		return nil, false, err
	}
	ids, err := q.SegmentBackfillIDs(ctx, db.SegmentBackfillIDsParams{AccountID: account, After: after, MaxRows: int32(limit)})
	if err != nil {
		return nil, false, err
	}
	n := 0
	for n < len(rows) && n < len(ids) && rows[n].ContactID == ids[n] {
		n++
	}
	out := make([]segment.Member, n)
	for i, r := range rows[:n] {
		c, err := s.FromRow(r)
		if err != nil {
			return nil, false, err
		}
		if out[i], err = c.member(); err != nil {
			return nil, false, err
		}
	}
	return out, n == len(ids) && len(ids) < limit, nil
}

// errSegmentsChanged is a write's statement finding the account's segments changed since the
// write was planned: it is planned again.
var errSegmentsChanged = errors.New("contact: the account's segments changed")

// SegmentsQuiet is segment.Service.Quiet (without segments: -1, quiet), for the writes of
// other packages that change contacts (enrichment).
func (s *Service) SegmentsQuiet(ctx context.Context, account uuid.UUID) (int64, bool, error) {
	return s.segmentsQuiet(ctx, account)
}

// KeepSegments keeps the segments of the contacts ids as a write of another package in tx
// left them (enrichment).
func (s *Service) KeepSegments(ctx context.Context, tx store.Tx, account uuid.UUID, ids ...uuid.UUID) error {
	return s.keepSegments(ctx, tx, account, ids...)
}

// ForgetSegments is segment.Service.Forget: a write of another package found the account's
// segments changed.
func (s *Service) ForgetSegments(account uuid.UUID) {
	if s.segments != nil {
		s.segments.Forget(account)
	}
}

// segmentsQuiet is segment.Service.Quiet (without segments: -1, quiet).
func (s *Service) segmentsQuiet(ctx context.Context, account uuid.UUID) (int64, bool, error) {
	if s.segments == nil {
		return -1, true, nil
	}
	return s.segments.Quiet(ctx, account)
}

// segmentsChanged is told that a statement found the segments version stale.
func (s *Service) segmentsChanged(account uuid.UUID) error {
	if s.segments != nil {
		s.segments.Forget(account)
	}
	return errSegmentsChanged
}

// keepMembers keeps the segments of the contacts members reads, as a write in tx left them;
// members is read only when the account has dynamic segments.
func (s *Service) keepMembers(ctx context.Context, tx store.Tx, account uuid.UUID, members func() ([]segment.Member, error)) error {
	if s.segments == nil {
		return nil
	}
	h, err := s.segments.Hold(ctx, tx, account)
	if err != nil || !h.Dynamic() {
		return err
	}
	ms, err := members()
	if err != nil {
		return err
	}
	return s.segments.Keep(ctx, tx, h, ms)
}

// entered is what the new contact c enters (segment.Service.Entered; without segments: -1,
// nothing).
func (s *Service) entered(ctx context.Context, account uuid.UUID, c Contact) (int64, []uuid.UUID, []event.Prepared, error) {
	if s.segments == nil {
		return -1, []uuid.UUID{}, nil, nil
	}
	m, err := c.member()
	if err != nil {
		return 0, nil, nil, err
	}
	return s.segments.Entered(ctx, account, m, c.CreatedAt)
}

// keepContact keeps the segments of c, as a write in tx left it.
func (s *Service) keepContact(ctx context.Context, tx store.Tx, account uuid.UUID, c Contact) error {
	return s.keepMembers(ctx, tx, account, func() ([]segment.Member, error) {
		m, err := c.member()
		return []segment.Member{m}, err
	})
}

// keepSegments keeps the segments of the contacts ids as a write in tx left them, read again
// (those it deleted have none).
func (s *Service) keepSegments(ctx context.Context, tx store.Tx, account uuid.UUID, ids ...uuid.UUID) error {
	if len(ids) == 0 {
		return nil
	}
	return s.keepMembers(ctx, tx, account, func() ([]segment.Member, error) {
		ps := make([]db.ContactGetByIDParams, len(ids))
		for i, id := range ids {
			ps[i] = db.ContactGetByIDParams{AccountID: account, ContactID: id}
		}
		rows, err := contactsByID(ctx, tx.Queries, ps)
		if err != nil {
			return nil, err
		}
		ms := make([]segment.Member, 0, len(rows))
		for _, r := range rows {
			if !r.ok {
				continue
			}
			c, err := s.FromRow(r.row)
			if err != nil {
				return nil, err
			}
			m, err := c.member()
			if err != nil {
				return nil, err
			}
			ms = append(ms, m)
		}
		return ms, nil
	})
}

// leaveSegments takes contacts a write in tx is about to delete out of their segments.
func (s *Service) leaveSegments(ctx context.Context, tx store.Tx, account uuid.UUID, infos map[uuid.UUID]event.ContactInfo) error {
	if s.segments == nil {
		return nil
	}
	return s.segments.Leave(ctx, tx, account, infos)
}
