package search

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"github.com/contactd/contactd/internal/contact"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/field"
	"github.com/contactd/contactd/internal/platform/store"
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
	// Fields are conditions on custom fields (field.Definitions.Path): a list page filtered by
	// them walks the creation order alone, at most maxWalk contacts, and may end early.
	Fields []string
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
func (s *Service) List(ctx context.Context, accountID uuid.UUID, o ListOptions) ([]contact.Contact, string, error) {
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
	release, err := s.turns.Take(ctx, accountID)
	if err != nil {
		return nil, "", store.Translate(err)
	}
	defer release()
	if len(o.Fields) > 0 {
		search, err := s.fieldsSearch(ctx, accountID, o.Fields)
		if err != nil {
			return nil, "", err
		}
		return s.fieldsPage(ctx, o, p, search)
	}
	if o.Filter.selective() {
		cs, next, done, err := s.walkPage(ctx, o, p)
		if err != nil || done {
			return cs, next, err
		}
	}
	p.RowLimit = int32(o.Limit)
	var rows []db.ContactRow
	err = s.store.DoStale(ctx, func(q *db.Queries) (err error) {
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
	return out, pageCursor(o.Sort, rows[len(rows)-1]), nil
}

// selective reports whether the filter leaves out contacts along the list's order (not only
// a time range of it).
func (f Filter) selective() bool {
	return len(f.Tags) > 0 || f.EmailStatus != nil || f.RecordStatus != nil || f.AssignedUser != nil ||
		f.MinLeadScore != nil || f.Q != nil || len(f.Fields) > 0
}

// fieldsPage is a page of a list filtered by custom fields: the matches among the contacts
// walked down the creation order after the cursor, walkFactor per contact of the page and at
// most maxFieldsWalk, so its cost is bounded whatever the account's size. The walk goes in
// stretches growing fourfold from 4 contacts per contact of the page; the first is walked and
// its matches read in one statement, so a filter most contacts pass is one round trip. When the
// first does not fill the page and the search has an equality, the custom fields' index finds
// the matches after it, up to half the walk's limit (a value few contacts hold: the page,
// whatever the account's size); more than that, and the walk goes on with what is left of its
// limit. A page that walked that far without filling ends early, its cursor at the last
// contact walked: the next page walks on from there.
func (s *Service) fieldsPage(ctx context.Context, o ListOptions, p listParams, search field.Search) ([]contact.Contact, string, error) {
	if o.Sort != SortCreated {
		return nil, "", apperr.Invalid(apperr.Field("query.sort", "enum", "a list filtered by custom fields is in createdAt order"))
	}
	var page []contact.Contact
	next := ""
	walkLimit := min(maxFieldsWalk, walkFactor*o.Limit)
	err := s.store.DoStale(ctx, func(q *db.Queries) error {
		stretch := min(walkLimit, 4*o.Limit)
		w := pageWalkParams(p, stretch, o.Limit)
		w.FieldsPath = search.Path
		rows, err := q.ContactsPageWalkByCreated(ctx, w)
		if err != nil {
			return err
		}
		if len(rows) == o.Limit {
			next = pageCursor(SortCreated, rows[len(rows)-1])
			page, err = s.keep(rows, o.MinLeadScore)
			return err
		}
		end, err := q.ContactsWalkedTo(ctx, db.ContactsWalkedToParams{AccountID: p.AccountID, CreatedAfter: p.CreatedAfter,
			CreatedBefore: p.CreatedBefore, UpdatedAfter: p.UpdatedAfter, HasCursor: p.HasCursor, AfterAt: p.AfterAt,
			AfterID: p.AfterID, Skip: int32(stretch - 1)})
		if errors.Is(err, pgx.ErrNoRows) { // the account ended within the stretch: every match is in rows
			page, err = s.keep(rows, o.MinLeadScore)
			return err
		}
		if err != nil {
			return err
		}
		matched := make([]walkedKey, len(rows), o.Limit)
		for i, r := range rows {
			matched[i] = walkedKey{at: r.CreatedAt, id: r.ContactID, matched: true}
		}
		last, walked := walkedKey{at: end.At, id: end.ContactID}, stretch
		indexed := search.Indexed // the index is still to be asked
		for {
			p.HasCursor, p.AfterAt, p.AfterID = true, last.at, last.id
			if indexed {
				indexed = false
				found, all, err := s.fieldMatches(ctx, q, p, search.Path, walkLimit/2)
				if err != nil {
					return err
				}
				if all { // every match after the walk: a cursor only if some are left for the next page
					if want := o.Limit - len(matched); len(found) > want {
						found = found[:want]
						next = cursor{Sort: SortCreated, At: found[want-1].at, ID: found[want-1].id}.String()
					}
					matched = append(matched, found...)
					break
				}
				walked += len(found)
			}
			if walked >= walkLimit {
				next = cursor{Sort: SortCreated, At: last.at, ID: last.id}.String()
				break
			}
			stretch = min(walkLimit-walked, 4*stretch)
			keys, err := s.walk(ctx, q, p, int32(stretch), search.Path)
			if err != nil {
				return err
			}
			for _, k := range keys {
				last, walked = k, walked+1
				if k.matched {
					if matched = append(matched, k); len(matched) == o.Limit {
						break
					}
				}
			}
			if len(matched) == o.Limit {
				next = cursor{Sort: SortCreated, At: last.at, ID: last.id}.String()
				break
			}
			if len(keys) < stretch { // the account ended
				break
			}
		}
		if page, err = s.keep(rows, o.MinLeadScore); err != nil {
			return err
		}
		rest, err := s.fetch(ctx, q, p.AccountID, matched[len(rows):], o.MinLeadScore)
		page = append(page, rest...)
		return err
	})
	return page, next, err
}

// fieldMatches is, newest first, every contact after p's cursor that matches p's filters and
// path, found through the custom fields' index, when there are fewer than limit (all); when
// there are not, limit of them in no order, and not all.
func (s *Service) fieldMatches(ctx context.Context, q *db.Queries, p listParams, path string, limit int) ([]walkedKey, bool, error) {
	rows, err := q.ContactsFieldMatches(ctx, db.ContactsFieldMatchesParams{AccountID: p.AccountID, FieldsPath: path,
		Tags: p.Tags, EmailStatus: p.EmailStatus, RecordStatus: p.RecordStatus, AssignedUser: p.AssignedUser,
		MinStoredScore: p.MinStoredScore, QPrefix: p.QPrefix, QWords: p.QWords, CreatedAfter: p.CreatedAfter,
		CreatedBefore: p.CreatedBefore, UpdatedAfter: p.UpdatedAfter, HasCursor: p.HasCursor, AfterAt: p.AfterAt,
		AfterID: p.AfterID, CandidateLimit: int32(limit)})
	if err != nil {
		return nil, false, err
	}
	out := make([]walkedKey, len(rows))
	for i, r := range rows {
		out[i] = walkedKey{at: r.At, id: r.ContactID, matched: true}
	}
	slices.SortFunc(out, func(a, b walkedKey) int { // the list's order: newest first, then the greater id
		if c := b.at.Compare(a.at); c != 0 {
			return c
		}
		return bytes.Compare(b.id[:], a.id[:])
	})
	return out, len(rows) < limit, nil
}

// A list walks up to walkFactor contacts per contact of its page (at most maxWalk) before it
// takes matches for sparse and asks the indexes of the filters instead. The walk reads rows
// in the order's index until the page is full: it costs the page divided by the matches'
// density. The filters' indexes return every match before any is sorted: they cost the
// matches' density times the account. At a million contacts and pages of 50 the two cross
// below 1 % density, and maxWalk hands the filters over just under that crossing
// (contactbench dataout measures both sides).
const (
	walkFactor = 160
	maxWalk    = 8000
	// maxFieldsWalk bounds the walk of a page filtered by custom fields, which reads each
	// walked contact's values (up to field.MaxValuesBytes, out of line) and not only an index.
	maxFieldsWalk = 2000
)

// walkPage is the page found by walking down the order's index, when the walk finds a full
// page (done); not done when it did not (matches too sparse, or the end of the account), which
// the indexes of the filters then answer. The walk and the read of its contacts are one
// statement: one round trip, one snapshot.
func (s *Service) walkPage(ctx context.Context, o ListOptions, p listParams) ([]contact.Contact, string, bool, error) {
	w := pageWalkParams(p, min(maxWalk, walkFactor*o.Limit), o.Limit)
	var rows []db.ContactRow
	err := s.store.DoStale(ctx, func(q *db.Queries) (err error) {
		rows, err = walkedPage(ctx, q, o.Sort, w)
		return err
	})
	if err != nil || len(rows) < o.Limit {
		return nil, "", false, err
	}
	cs, err := s.keep(rows, o.MinLeadScore)
	return cs, pageCursor(o.Sort, rows[len(rows)-1]), true, err
}

// pageWalkParams are p's filters for a page of rowLimit found walking walkLimit contacts.
func pageWalkParams(p listParams, walkLimit, rowLimit int) db.ContactsPageWalkByCreatedParams {
	return db.ContactsPageWalkByCreatedParams{Tags: p.Tags, EmailStatus: p.EmailStatus, RecordStatus: p.RecordStatus,
		AssignedUser: p.AssignedUser, MinStoredScore: p.MinStoredScore, QPrefix: p.QPrefix, QWords: p.QWords,
		AccountID: p.AccountID, CreatedAfter: p.CreatedAfter, CreatedBefore: p.CreatedBefore, UpdatedAfter: p.UpdatedAfter,
		HasCursor: p.HasCursor, AfterAt: p.AfterAt, AfterID: p.AfterID, WalkLimit: int32(walkLimit), RowLimit: int32(rowLimit)}
}

// walkedPage runs the walk of w: the commonest searches (tags alone, or q alone, newest first,
// pages of the default size) by statements of their own, which PostgreSQL plans once per
// connection; any other by the general statement, planned for each call so that its unused
// filters fold away.
func walkedPage(ctx context.Context, q *db.Queries, sort string, w db.ContactsPageWalkByCreatedParams) ([]db.ContactRow, error) {
	if sort == SortUpdated {
		return q.ContactsPageWalkByUpdated(ctx, db.ContactsPageWalkByUpdatedParams(w))
	}
	planned := w.RowLimit == plannedPage && w.WalkLimit == plannedWalk && w.CreatedAfter == nil &&
		w.CreatedBefore == nil && w.UpdatedAfter == nil && w.EmailStatus == nil && w.RecordStatus == nil &&
		w.AssignedUser == nil && w.MinStoredScore == nil
	at, id := w.AfterAt, w.AfterID
	if !w.HasCursor { // past every contact
		at, id = endOfTime, uuid.Max
	}
	switch {
	case planned && len(w.Tags) > 0 && w.QPrefix == nil:
		return q.ContactsTaggedPage(ctx, db.ContactsTaggedPageParams{AccountID: w.AccountID, Tags: w.Tags, AfterAt: at, AfterID: id})
	case planned && len(w.Tags) == 0 && w.QPrefix != nil && w.QWords != nil:
		return q.ContactsSearchPage(ctx, db.ContactsSearchPageParams{AccountID: w.AccountID, QPrefix: *w.QPrefix,
			QWords: *w.QWords, AfterAt: at, AfterID: id})
	}
	return q.ContactsPageWalkByCreated(ctx, w)
}

// plannedPage and plannedWalk are the page and the walk of the statements planned once
// (constants in their SQL): the default page and its walk.
const (
	plannedPage = 50
	plannedWalk = min(maxWalk, walkFactor*plannedPage)
)

// endOfTime is after every contact's creation.
var endOfTime = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

// pageCursor is the cursor of the page after the one ending with last.
func pageCursor(sort string, last db.ContactRow) string {
	at := last.CreatedAt
	if sort == SortUpdated {
		at = last.UpdatedAt
	}
	return cursor{Sort: sort, At: at, ID: last.ContactID}.String()
}

// walkedKey is a contact an export's walk passed: its place in the order, and whether it
// matched.
type walkedKey struct {
	at      time.Time
	id      uuid.UUID
	matched bool
}

// walk reads, after p's cursor in creation order, up to walkLimit contacts' keys, each with
// whether it matches p's filters and the custom fields' path ("": none), newest first.
func (s *Service) walk(ctx context.Context, q *db.Queries, p listParams, walkLimit int32, path string) ([]walkedKey, error) {
	var fieldsPath any // jsonpath, NULL when none
	if path != "" {
		fieldsPath = path
	}
	rows, err := q.ContactsWalkByCreated(ctx, db.ContactsWalkByCreatedParams{FieldsPath: fieldsPath, Tags: p.Tags, EmailStatus: p.EmailStatus,
		RecordStatus: p.RecordStatus, AssignedUser: p.AssignedUser, MinStoredScore: p.MinStoredScore, QPrefix: p.QPrefix,
		QWords: p.QWords, AccountID: p.AccountID, CreatedAfter: p.CreatedAfter, CreatedBefore: p.CreatedBefore,
		UpdatedAfter: p.UpdatedAfter, HasCursor: p.HasCursor, AfterAt: p.AfterAt, AfterID: p.AfterID, WalkLimit: walkLimit})
	out := make([]walkedKey, len(rows))
	for i, r := range rows {
		out[i] = walkedKey{at: r.At, id: r.ContactID, matched: r.Matched}
	}
	return out, err
}

// fetch reads the contacts of keys, in the keys' order, without those whose lead score has
// decayed below min.
func (s *Service) fetch(ctx context.Context, q *db.Queries, accountID uuid.UUID, keys []walkedKey, min *int) ([]contact.Contact, error) {
	if len(keys) == 0 {
		return []contact.Contact{}, nil
	}
	ids := make([]uuid.UUID, len(keys))
	for i, k := range keys {
		ids[i] = k.id
	}
	rows, err := q.ContactsByIDs(ctx, db.ContactsByIDsParams{AccountID: accountID, Ids: ids})
	if err != nil {
		return nil, err
	}
	byID := make(map[uuid.UUID]db.ContactRow, len(rows))
	for _, r := range rows {
		byID[r.ContactID] = r
	}
	ordered := make([]db.ContactRow, 0, len(rows))
	for _, id := range ids {
		if r, ok := byID[id]; ok { // a contact deleted between the walk and the read is left out
			ordered = append(ordered, r)
		}
	}
	return s.keep(ordered, min)
}

func listPage(ctx context.Context, q *db.Queries, sort string, p listParams) ([]db.ContactRow, error) {
	if sort == SortUpdated {
		return q.ContactsByUpdated(ctx, db.ContactsByUpdatedParams(p))
	}
	return q.ContactsByCreated(ctx, p)
}

// keep is the rows as contacts, without those whose lead score has decayed below min since it
// was stored (the query can only compare the stored one, never lower than today's).
func (s *Service) keep(rows []db.ContactRow, min *int) ([]contact.Contact, error) {
	out := make([]contact.Contact, 0, len(rows))
	for _, r := range rows {
		c, err := s.contacts.FromRow(r)
		if err != nil {
			return nil, err
		}
		if min == nil || c.LeadScore >= *min {
			out = append(out, c)
		}
	}
	return out, nil
}

// exportWalk is how many contacts an export walks at a time, and exportFetch how many it
// reads at once: its memory, whatever the account's size.
const (
	exportWalk  = 10000
	exportFetch = 1000
)

// Export calls emit with every contact the filter selects, newest first, walking the account
// a page at a time in one read-only transaction, so the whole export is one snapshot of it
// and its memory does not grow with it. It stops at the first error emit returns, or when ctx
// ends (a client that went away). While the account runs Options.ExportsPerAccount exports,
// or the process Options.Exports, it is ErrTooManyExports at once.
func (s *Service) Export(ctx context.Context, accountID uuid.UUID, f Filter, emit func(contact.Contact) error) error {
	p, err := f.params(accountID)
	if err != nil {
		return err
	}
	var search field.Search
	if len(f.Fields) > 0 {
		if search, err = s.fieldsSearch(ctx, accountID, f.Fields); err != nil {
			return err
		}
	}
	release, ok := s.exports.take(accountID)
	if !ok {
		return ErrTooManyExports
	}
	defer release()
	if !f.selective() {
		return s.exportInOrder(ctx, p, emit)
	}
	return s.store.ReadSnapshotStale(ctx, func(q *db.Queries) error {
		for {
			keys, err := s.walk(ctx, q, p, exportWalk, search.Path)
			if err != nil {
				return err
			}
			var matched []walkedKey
			for _, k := range keys {
				if k.matched {
					matched = append(matched, k)
				}
			}
			for len(matched) > 0 {
				n := min(exportFetch, len(matched))
				cs, err := s.fetch(ctx, q, accountID, matched[:n], f.MinLeadScore)
				if err != nil {
					return err
				}
				for _, c := range cs {
					if err := emit(c); err != nil {
						return err
					}
				}
				matched = matched[n:]
			}
			if len(keys) < exportWalk {
				return nil
			}
			last := keys[len(keys)-1]
			p.HasCursor, p.AfterAt, p.AfterID = true, last.at, last.id
		}
	})
}

// exportInOrder is Export when every contact in p's time range is wanted: pages of the list's
// own statement, read in the creation index's order (the contacts' rows come mostly in the
// order they were written), where the walk and read by ids would go down the primary key once
// per contact.
func (s *Service) exportInOrder(ctx context.Context, p listParams, emit func(contact.Contact) error) error {
	p.RowLimit = exportFetch
	return s.store.ReadSnapshotStale(ctx, func(q *db.Queries) error {
		for {
			rows, err := q.ContactsByCreated(ctx, p)
			if err != nil {
				return err
			}
			for _, r := range rows {
				c, err := s.contacts.FromRow(r)
				if err != nil {
					return err
				}
				if err := emit(c); err != nil {
					return err
				}
			}
			if len(rows) < exportFetch {
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

// fieldsSearch is conditions on the account's custom fields as one jsonpath predicate.
// The process's cached definitions are read first: a field's key and type never change, so
// definitions older than the account's can only lack a field or an option the conditions
// name, and a search they refuse is checked again against the current ones.
func (s *Service) fieldsSearch(ctx context.Context, accountID uuid.UUID, conditions []string) (field.Search, error) {
	defs, err := s.fields.Of(ctx, nil, accountID, false)
	if err != nil {
		return field.Search{}, err
	}
	if search, err := defs.Path(conditions); err == nil {
		return search, nil
	}
	if defs, err = s.fields.Of(ctx, nil, accountID, true); err != nil {
		return field.Search{}, err
	}
	return defs.Path(conditions)
}
