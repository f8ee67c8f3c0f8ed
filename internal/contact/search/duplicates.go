package search

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/platform/store"
)

// The rules that find likely duplicates, in the order a page without one walks them.
const (
	DuplicatesByPhone          = "phone"
	DuplicatesByEmail          = "email"
	DuplicatesByNameAndAddress = "nameAndAddress"
)

// maxGroupIDs is how many of a group's contacts a page lists.
const maxGroupIDs = 100

var duplicateRules = []string{DuplicatesByPhone, DuplicatesByEmail, DuplicatesByNameAndAddress}

// DuplicateGroup is contacts one rule says are likely the same person.
type DuplicateGroup struct {
	By, Match  string
	Size       int
	ContactIDs []uuid.UUID
	at         duplicatesCursor
}

// DuplicatesPage is a page of groups, and the cursor of the next ("" on the last).
type DuplicatesPage struct {
	Groups     []DuplicateGroup
	NextCursor string
}

// duplicatesCursor is a position in the walk: after this rule's group with this match.
type duplicatesCursor struct {
	By    string `json:"b"`
	Match string `json:"k"`
	Name  string `json:"n,omitempty"` // nameAndAddress: Match is the address
}

var errDuplicatesCursor = apperr.Invalid(apperr.Field("query.cursor", "format", "not a cursor of this list"))

// Duplicates is a page of the account's likely duplicates by one rule (by), or by each in
// turn ("" for all), after cursor.
func (s *Service) Duplicates(ctx context.Context, accountID uuid.UUID, by, cursor string, limit int) (DuplicatesPage, error) {
	rules := duplicateRules
	if by != "" {
		rules = []string{by}
	}
	var at duplicatesCursor
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || json.Unmarshal(raw, &at) != nil {
			return DuplicatesPage{}, errDuplicatesCursor
		}
		i := slices.Index(rules, at.By)
		if i < 0 {
			return DuplicatesPage{}, errDuplicatesCursor
		}
		rules = rules[i:]
	}
	release, err := s.turns.Take(ctx, accountID)
	if err != nil {
		return DuplicatesPage{}, store.Translate(err)
	}
	defer release()
	var groups []DuplicateGroup
	err = s.store.ReadSnapshot(ctx, func(q *db.Queries) error {
		for _, rule := range rules {
			after := duplicatesCursor{By: rule}
			if at.By == rule {
				after = at
			}
			found, err := duplicatesAfter(ctx, q, accountID, after, limit+1-len(groups))
			if err != nil {
				return err
			}
			if groups = append(groups, found...); len(groups) > limit {
				break
			}
		}
		return nil
	})
	if err != nil {
		return DuplicatesPage{}, err
	}
	page := DuplicatesPage{Groups: groups}
	if len(groups) > limit {
		page.Groups = groups[:limit]
		next, _ := json.Marshal(groups[limit-1].at)
		page.NextCursor = base64.RawURLEncoding.EncodeToString(next)
	}
	return page, nil
}

// duplicatesAfter is at most n groups of one rule after a position.
func duplicatesAfter(ctx context.Context, q *db.Queries, accountID uuid.UUID, after duplicatesCursor, n int) ([]DuplicateGroup, error) {
	var out []DuplicateGroup
	add := func(match, name string, size int32, ids []uuid.UUID) {
		g := DuplicateGroup{By: after.By, Match: match, Size: int(size), ContactIDs: ids, at: duplicatesCursor{By: after.By, Match: match}}
		if after.By == DuplicatesByNameAndAddress {
			g.Match, g.at.Name = name+" @ "+match, name
		}
		out = append(out, g)
	}
	switch after.By {
	case DuplicatesByPhone:
		rows, err := q.DuplicatesByPhone(ctx, db.DuplicatesByPhoneParams{AccountID: accountID, After: after.Match, PageLimit: int32(n)})
		for _, r := range rows {
			add(r.Match, "", r.Size, r.ContactIds)
		}
		return out, err
	case DuplicatesByEmail:
		rows, err := q.DuplicatesByEmail(ctx, db.DuplicatesByEmailParams{AccountID: accountID, After: after.Match, PageLimit: int32(n)})
		for _, r := range rows {
			add(r.Match, "", r.Size, r.ContactIds)
		}
		return out, err
	default:
		return nameAndAddressAfter(ctx, q, accountID, after, n)
	}
}

// nameAndAddressAfter is at most n groups of contacts with the same name at the same active
// address, after a position. The addresses more than one contact has are read in chunks
// from the index; the names only of their contacts (a join planned for every address read
// the name of every contact the walk passed).
func nameAndAddressAfter(ctx context.Context, q *db.Queries, accountID uuid.UUID, after duplicatesCursor, n int) ([]DuplicateGroup, error) {
	var out []DuplicateGroup
	from, done := after.Match, "" // done: an address whose groups a chunk before returned
	for chunk := max(4*n, 64); ; {
		rows, err := q.SharedAddresses(ctx, db.SharedAddressesParams{AccountID: accountID, FromAddress: from, PageLimit: int32(chunk)})
		if err != nil {
			return nil, err
		}
		var ids []uuid.UUID
		for _, r := range rows {
			ids = append(ids, r.ContactIds...)
		}
		named, err := q.ContactNames(ctx, db.ContactNamesParams{AccountID: accountID, ContactIds: ids})
		if err != nil {
			return nil, err
		}
		names := make(map[uuid.UUID]string, len(named))
		for _, c := range named {
			names[c.ContactID] = c.Name
		}
		for _, r := range rows {
			if r.Address == done {
				continue
			}
			byName := map[string][]uuid.UUID{}
			for _, id := range r.ContactIds {
				if name := names[id]; name != "" && (r.Address != after.Match || name > after.Name) {
					byName[name] = append(byName[name], id)
				}
			}
			for _, name := range slices.Sorted(maps.Keys(byName)) {
				if ids := byName[name]; len(ids) > 1 {
					slices.SortFunc(ids, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
					out = append(out, DuplicateGroup{By: DuplicatesByNameAndAddress, Match: name + " @ " + r.Address, Size: len(ids),
						ContactIDs: ids[:min(len(ids), maxGroupIDs)], at: duplicatesCursor{By: DuplicatesByNameAndAddress, Match: r.Address, Name: name}})
					if len(out) == n {
						return out, nil
					}
				}
			}
		}
		if len(rows) < chunk {
			return out, nil
		}
		from = rows[len(rows)-1].Address
		done = from
	}
}
