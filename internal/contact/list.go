package contact

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
)

// Sort orders of a contact list.
const (
	SortCreated = "createdAt" // newest first
	SortUpdated = "updatedAt" // most recently changed first
)

// Filter selects contacts: every field set must hold (AND); nil or empty is no filter.
type Filter struct {
	Tags                        []string
	EmailStatus, RecordStatus   *string
	AssignedUser                *string
	CreatedAfter, CreatedBefore *time.Time
	UpdatedAfter                *time.Time
	MinLeadScore                *int
	Q                           *string
}

// ListOptions asks for one page.
type ListOptions struct {
	Filter
	Sort   string
	Limit  int
	Cursor string
}

// listParams are a filter as the list queries take it (both take the same).
type listParams = db.ContactsByCreatedParams

// List returns a page of the account's contacts and the cursor of the next page ("" after the
// last). Pages are keyset pages over (sort time, contact id): a walk never returns a contact
// twice and never skips one that did not change during it.
func (s *Service) List(ctx context.Context, accountID uuid.UUID, o ListOptions) ([]Contact, string, error) {
	p, err := o.Filter.params(accountID)
	if err != nil {
		return nil, "", err
	}
	if o.Sort == "" {
		o.Sort = SortCreated
	}
	if o.Cursor != "" {
		c, err := parseCursor(o.Cursor, o.Sort)
		if err != nil {
			return nil, "", err
		}
		p.HasCursor, p.AfterAt, p.AfterID = true, c.At, c.ID
	}
	p.RowLimit = int32(o.Limit)
	var rows []db.ContactRow
	err = s.store.Read(ctx, func(q *db.Queries) (err error) {
		rows, err = listPage(ctx, q, o.Sort, p)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	out, err := s.keep(rows, o.MinLeadScore)
	if err != nil || len(rows) < o.Limit {
		return out, "", err
	}
	last := rows[len(rows)-1]
	at := last.CreatedAt
	if o.Sort == SortUpdated {
		at = last.UpdatedAt
	}
	return out, cursor{Sort: o.Sort, At: at, ID: last.ContactID}.String(), nil
}

func listPage(ctx context.Context, q *db.Queries, sort string, p listParams) ([]db.ContactRow, error) {
	if sort == SortUpdated {
		return q.ContactsByUpdated(ctx, db.ContactsByUpdatedParams(p))
	}
	return q.ContactsByCreated(ctx, p)
}

// keep is the rows as contacts, without those whose lead score has decayed below min since it
// was stored (the query can only compare the stored one, never lower than today's).
func (s *Service) keep(rows []db.ContactRow, min *int) ([]Contact, error) {
	out := make([]Contact, 0, len(rows))
	for _, r := range rows {
		c, err := s.fromRow(r)
		if err != nil {
			return nil, err
		}
		if min == nil || c.LeadScore >= *min {
			out = append(out, c)
		}
	}
	return out, nil
}

// exportPage is how many contacts an export reads at a time: its memory, whatever its size.
const exportPage = 2000

// Export calls emit with every contact the filter selects, newest first, read page by page in
// one read-only transaction, so the whole export is one snapshot of the account. It stops
// at the first error emit returns, or when ctx ends (a client that went away).
func (s *Service) Export(ctx context.Context, accountID uuid.UUID, f Filter, emit func(Contact) error) error {
	p, err := f.params(accountID)
	if err != nil {
		return err
	}
	p.RowLimit = exportPage
	return s.store.ReadSnapshot(ctx, func(q *db.Queries) error {
		for {
			rows, err := q.ContactsByCreated(ctx, p)
			if err != nil {
				return err
			}
			cs, err := s.keep(rows, f.MinLeadScore)
			if err != nil {
				return err
			}
			for _, c := range cs {
				if err := emit(c); err != nil {
					return err
				}
			}
			if len(rows) < exportPage {
				return nil
			}
			last := rows[len(rows)-1]
			p.HasCursor, p.AfterAt, p.AfterID = true, last.CreatedAt, last.ContactID
		}
	})
}

// params is the filter checked and shaped for the queries.
func (f Filter) params(accountID uuid.UUID) (listParams, error) {
	p := listParams{AccountID: accountID, EmailStatus: f.EmailStatus, RecordStatus: f.RecordStatus,
		CreatedAfter: f.CreatedAfter, CreatedBefore: f.CreatedBefore, UpdatedAfter: f.UpdatedAfter}
	var errs []apperr.FieldError
	if len(f.Tags) > 0 {
		for _, t := range f.Tags {
			t = strings.ToLower(strings.TrimSpace(t))
			if t == "" {
				errs = append(errs, apperr.FieldError{Field: "query.tag", Reason: "minLength", Message: "a tag must not be blank"})
				continue
			}
			p.Tags = append(p.Tags, t)
		}
	}
	if f.AssignedUser != nil {
		a := strings.ToLower(strings.TrimSpace(*f.AssignedUser))
		p.AssignedUser = &a
	}
	if f.MinLeadScore != nil {
		m := int32(*f.MinLeadScore)
		p.MinStoredScore = &m
	}
	if f.Q != nil {
		q := strings.ToLower(strings.TrimSpace(*f.Q))
		if q == "" {
			errs = append(errs, apperr.FieldError{Field: "query.q", Reason: "minLength", Message: "q must not be blank"})
		} else {
			prefix := likePrefix(q)
			p.QPrefix = &prefix
			p.QWords = prefixQuery(q)
		}
	}
	if f.CreatedAfter != nil && f.CreatedBefore != nil && !f.CreatedAfter.Before(*f.CreatedBefore) {
		errs = append(errs, apperr.FieldError{Field: "query.createdBefore", Reason: "minimum", Message: "createdBefore must be after createdAfter"})
	}
	if len(errs) > 0 {
		return p, apperr.Invalid(errs...)
	}
	return p, nil
}

// likePrefix is a LIKE pattern matching what starts with s.
func likePrefix(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s) + "%"
}

// prefixQuery is a tsquery matching names with a word starting with each word of q ("jane d"
// -> "jane:* & d:*"), or nil when q has no letters or digits.
func prefixQuery(q string) *string {
	words := strings.FieldsFunc(q, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(words) == 0 {
		return nil
	}
	for i, w := range words {
		words[i] = w + ":*"
	}
	out := strings.Join(words, " & ")
	return &out
}

// cursor is a position in a list: after the contact ID, whose sort time is At.
type cursor struct {
	Sort string    `json:"s"`
	At   time.Time `json:"t"`
	ID   uuid.UUID `json:"id"`
}

func (c cursor) String() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

var errBadCursor = apperr.Invalid(apperr.FieldError{Field: "query.cursor", Reason: "format",
	Message: "not a cursor this list returned"})

func parseCursor(s, sort string) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil || c.ID == uuid.Nil || c.At.IsZero() {
		return cursor{}, errBadCursor
	}
	if c.Sort != sort {
		return cursor{}, apperr.Invalid(apperr.FieldError{Field: "query.cursor", Reason: "format",
			Message: "this cursor is for sort=" + c.Sort + "; ask with the same sort"})
	}
	return c, nil
}
