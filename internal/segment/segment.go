// Package segment holds an account's segments: named, saved filters of its contacts, dynamic
// (kept current) or snapshot (evaluated once, then changed by hand). A segment's kind never
// changes; its filter is stored as checked, its operands read as the attributes they compare
// are stored.
package segment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sync/singleflight"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/field"
	"github.com/contactd/contactd/internal/platform/store"
)

// Kinds of segment.
const (
	Dynamic  = "dynamic"
	Snapshot = "snapshot"
)

// Statuses of a segment.
const (
	Backfilling = "backfilling"
	Ready       = "ready"
)

// Limits.
const (
	MaxPerAccount = 100
	MaxNameLength = 128
)

// Errors of the segment operations.
var (
	ErrNotFound = apperr.New(apperr.KindNotFound, "SegmentDoesNotExist", "segment does not exist")
	ErrExists   = apperr.New(apperr.KindConflict, "SegmentExists", "the account already has a segment with this name")
)

// Segment is one of an account's segments.
type Segment struct {
	ID                   uuid.UUID
	Name, Kind           string
	Filter               Filter
	CreatedAt, UpdatedAt time.Time
	// Status is Backfilling until its members were found among the contacts the account had
	// when it was saved or its filter last changed, then Ready; Evaluated counts the contacts
	// the backfill went through.
	Status    string
	Evaluated int64
}

// Definitions reads an account's custom field definitions, which conditions on custom fields
// are checked against.
type Definitions interface {
	Definitions(ctx context.Context, q *db.Queries, account uuid.UUID) (*field.Definitions, error)
	Reload(ctx context.Context, q *db.Queries, account uuid.UUID) (*field.Definitions, error)
}

// Service is the segment operations.
type Service struct {
	store  *store.Store
	fields Definitions
	events *event.Emitter
	now    func() time.Time
	wake   chan struct{}
	stop   func()

	mu      sync.Mutex
	dynamic map[uuid.UUID]dynamicSegments // by account: the last read
	// compiled is each account's segments as last compiled, kept when Forget drops the
	// version: the next read reuses each one whose filter has not changed
	compiled map[uuid.UUID][]storedSegment
	// loads reads and compiles an account's dynamic segments once for every write that needs
	// them at once: after an edit, each write of the account would otherwise compile its own
	// copy of every filter (a hundred segments of a hundred operands a condition are tens of
	// megabytes), all of them held at once
	loads singleflight.Group
}

// dynamicSegments are an account's dynamic segments at a version of them.
type dynamicSegments struct {
	version  int64
	segments []storedSegment
}

type storedSegment struct {
	ID     uuid.UUID `json:"id"`
	Name   string    `json:"name"`
	Ready  bool      `json:"ready"`
	Filter Filter    `json:"filter"`
	// raw is the filter as stored: a later read of the same one reuses this compilation
	raw json.RawMessage
}

// maxCachedAccounts bounds the accounts whose dynamic segments a process keeps.
const maxCachedAccounts = 1000

// NewService returns the segment service over st, which records membership events with
// events.
func NewService(st *store.Store, fields Definitions, events *event.Emitter, now func() time.Time) *Service {
	return &Service{store: st, fields: fields, events: events, now: now, dynamic: map[uuid.UUID]dynamicSegments{}, compiled: map[uuid.UUID][]storedSegment{},
		wake: make(chan struct{}, 1)}
}

// Of is the ids of the segments the contact is a member of, dynamic and snapshot, in the
// order they were saved.
func (s *Service) Of(ctx context.Context, account, contact uuid.UUID) ([]uuid.UUID, error) {
	var rows []db.SegmentMembershipsOfRow
	err := s.store.Do(ctx, func(q *db.Queries) (err error) {
		rows, err = q.SegmentMembershipsOf(ctx, db.SegmentMembershipsOfParams{AccountID: account, ContactIds: []uuid.UUID{contact}})
		return err
	})
	out := make([]uuid.UUID, len(rows))
	for i, r := range rows {
		out[i] = r.SegmentID
	}
	return out, err
}

// Create saves a segment.
func (s *Service) Create(ctx context.Context, account uuid.UUID, name, kind string, f Filter) (Segment, error) {
	name, f, err := s.check(ctx, account, name, f)
	if err != nil {
		return Segment{}, err
	}
	filter, err := json.Marshal(f)
	if err != nil {
		return Segment{}, err
	}
	var rows []db.Segment
	err = s.store.InTx(ctx, func(tx store.Tx) error {
		if err := tx.SegmentsLock(ctx, account); err != nil {
			return err
		}
		n, err := tx.SegmentsCount(ctx, account)
		if err != nil {
			return err
		}
		if n >= MaxPerAccount {
			return apperr.Invalid(apperr.Field("body", "limit", fmt.Sprintf("an account has at most %d segments", MaxPerAccount)))
		}
		price, err := s.checkPrice(ctx, tx, account, uuid.Nil, kind, f)
		if err != nil {
			return err
		}
		now := s.now()
		rows, err = tx.SegmentInsert(ctx, db.SegmentInsertParams{AccountID: account, SegmentID: uuid.Must(uuid.NewV7()),
			Name: name, Kind: kind, Filter: filter, Price: price, Now: now})
		if err != nil || len(rows) == 0 {
			return err
		}
		return tx.SegmentsVersionBump(ctx, account)
	})
	if err != nil {
		return Segment{}, err
	}
	if len(rows) == 0 {
		return Segment{}, ErrExists
	}
	s.Wake()
	return fromRow(rows[0])
}

// List is the account's segments in the order they were made (at most MaxPerAccount).
func (s *Service) List(ctx context.Context, account uuid.UUID) ([]Segment, error) {
	var rows []db.Segment
	err := s.store.Do(ctx, func(q *db.Queries) (err error) {
		rows, err = q.SegmentList(ctx, account)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]Segment, len(rows))
	for i, r := range rows {
		if out[i], err = fromRow(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Get is one of the account's segments.
func (s *Service) Get(ctx context.Context, account, id uuid.UUID) (Segment, error) {
	var row db.Segment
	err := s.store.Do(ctx, func(q *db.Queries) (err error) {
		row, err = q.SegmentGet(ctx, db.SegmentGetParams{AccountID: account, SegmentID: id})
		return err
	})
	return found(row, err)
}

// Change is what an update of a segment sets: the fields that are not nil.
type Change struct {
	Name   *string
	Filter *Filter
}

// Update renames a segment or replaces its filter.
func (s *Service) Update(ctx context.Context, account, id uuid.UUID, c Change) (Segment, error) {
	cur, err := s.Get(ctx, account, id)
	if err != nil {
		return Segment{}, err
	}
	name, f := cur.Name, cur.Filter
	if c.Name != nil {
		name = *c.Name
	}
	if c.Filter != nil {
		f = *c.Filter
	}
	if name, f, err = s.check(ctx, account, name, f); err != nil {
		return Segment{}, err
	}
	filter, err := json.Marshal(f)
	if err != nil {
		return Segment{}, err
	}
	var rows []db.Segment
	err = s.store.InTx(ctx, func(tx store.Tx) (err error) {
		var price *int32
		if c.Filter != nil {
			if err := tx.SegmentsLock(ctx, account); err != nil { // one priced change at a time
				return err
			}
			if price, err = s.checkPrice(ctx, tx, account, id, cur.Kind, f); err != nil {
				return err
			}
		}
		rows, err = tx.SegmentUpdate(ctx, db.SegmentUpdateParams{AccountID: account, SegmentID: id, Name: name,
			Filter: filter, Price: price, Now: s.now()})
		if err != nil || len(rows) == 0 {
			return err
		}
		return tx.SegmentsVersionBump(ctx, account)
	})
	if pgErr := (*pgconn.PgError)(nil); errors.As(err, &pgErr) && pgErr.Code == "23505" { // a racing rename to the name won
		return Segment{}, ErrExists
	}
	if err != nil {
		return Segment{}, err
	}
	if len(rows) == 0 {
		if _, err := s.Get(ctx, account, id); err != nil {
			return Segment{}, err // deleted meanwhile
		}
		return Segment{}, ErrExists
	}
	s.Wake()
	return fromRow(rows[0])
}

// Delete deletes a segment.
func (s *Service) Delete(ctx context.Context, account, id uuid.UUID) error {
	var n int64
	err := s.store.InTx(ctx, func(tx store.Tx) (err error) {
		if n, err = tx.SegmentDelete(ctx, db.SegmentDeleteParams{AccountID: account, SegmentID: id}); err != nil || n == 0 {
			return err
		}
		if err := tx.SegmentsVersionBump(ctx, account); err != nil {
			return err
		}
		return tx.SegmentMembersDelete(ctx, db.SegmentMembersDeleteParams{AccountID: account, SegmentID: id})
	})
	if err == nil && n == 0 {
		return ErrNotFound
	}
	return err
}

// checkPrice refuses a dynamic segment's filter f (of segment id; uuid.Nil for a new one) whose
// price, with the account's other dynamic segments', passes MaxAccountPrice: every write of a
// contact evaluates them all. It returns the price to store with the segment (nil for a
// snapshot, never evaluated by a write). In tx, under the account's segments lock, so that
// two changes cannot each pass against the segments before the other; the others' prices are
// a sum of what their saves stored, those saved before prices were priced here once.
func (s *Service) checkPrice(ctx context.Context, tx store.Tx, account, id uuid.UUID, kind string, f Filter) (*int32, error) {
	if kind == Snapshot {
		return nil, nil
	}
	defs, err := s.fields.Definitions(ctx, nil, account) // a field's type never changes
	if err != nil {
		return nil, err
	}
	own := f.Price(defs)
	row, err := tx.SegmentsPriced(ctx, db.SegmentsPricedParams{AccountID: account, SegmentID: id})
	if err != nil {
		return nil, err
	}
	total := int64(own) + row.Priced
	if row.Unpriced > 0 {
		unpriced, err := tx.SegmentsUnpriced(ctx, account)
		if err != nil {
			return nil, err
		}
		for _, u := range unpriced {
			var old Filter
			if err := json.Unmarshal(u.Filter, &old); err != nil {
				return nil, err
			}
			p := int32(old.Price(defs))
			if u.SegmentID != id {
				total += int64(p)
			}
			if err := tx.SegmentSetPrice(ctx, db.SegmentSetPriceParams{AccountID: account, SegmentID: u.SegmentID, Price: &p}); err != nil {
				return nil, err
			}
		}
	}
	if total > MaxAccountPrice {
		return nil, apperr.Invalid(apperr.Field("body.filter", "cost", fmt.Sprintf(
			"the account's dynamic segments would take %d lookups on each write of a contact (this filter %d): the budget is %d",
			total, own, MaxAccountPrice)))
	}
	price := int32(own)
	return &price, nil
}

// check is the name trimmed and the filter checked against the account's current field
// definitions, or the 400 naming everything wrong with them.
func (s *Service) check(ctx context.Context, account uuid.UUID, name string, f Filter) (string, Filter, error) {
	var errs []apperr.FieldError
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > MaxNameLength {
		errs = append(errs, apperr.Field("body.name", "length", fmt.Sprintf("a name has 1 to %d characters", MaxNameLength)))
	}
	// the process's cached definitions first: a key and a type never change, so older ones
	// can only lack what is new, and a filter they refuse is checked again against the current
	defs, err := s.fields.Definitions(ctx, nil, account)
	if err != nil {
		return "", Filter{}, err
	}
	checked, ferrs := Check(f, defs, "body.filter")
	if len(ferrs) > 0 {
		if defs, err = s.fields.Reload(ctx, nil, account); err != nil {
			return "", Filter{}, err
		}
		checked, ferrs = Check(f, defs, "body.filter")
	}
	if errs = append(errs, ferrs...); len(errs) > 0 {
		return "", Filter{}, apperr.Invalid(errs...)
	}
	return name, checked, nil
}

func found(row db.Segment, err error) (Segment, error) {
	if errors.Is(err, apperr.ErrNoRows) {
		return Segment{}, ErrNotFound
	}
	if err != nil {
		return Segment{}, err
	}
	return fromRow(row)
}

func fromRow(r db.Segment) (Segment, error) {
	out := Segment{ID: r.SegmentID, Name: r.Name, Kind: r.Kind, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		Status: r.Status, Evaluated: r.BackfillEvaluated}
	return out, json.Unmarshal(r.Filter, &out.Filter)
}
