package field

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/platform/store"
)

// Definitions are an account's fields, archived ones too, at a version of them: the version a
// write of values names (ContactCreate's fields_version), so that a write validated against
// older definitions is not made.
type Definitions struct {
	Version  int64
	fields   []*Field
	byKey    map[string]*Field
	patterns map[string]*regexp.Regexp
	steps    map[string]int // each pattern's price (patternSteps)
}

// None are the definitions of an account without fields, at version 0.
var None = &Definitions{byKey: map[string]*Field{}}

// Has says whether the account has any field: without one, a write with no customFields
// has nothing to check.
func (d *Definitions) Has() bool { return len(d.fields) > 0 }

// Field is the definition of key, archived or not.
func (d *Definitions) Field(key string) (*Field, bool) {
	f, ok := d.byKey[key]
	return f, ok
}

// matches is whether the whole of s matches f's pattern (compiled once per version).
func (d *Definitions) matches(f *Field, s string) bool {
	re, ok := d.patterns[f.Key]
	if !ok {
		return true
	}
	return re.MatchString(s)
}

// definitionRow is a contact_fields row as to_jsonb writes it.
type definitionRow struct {
	Key         string          `json:"key"`
	Label       string          `json:"label"`
	Description string          `json:"description"`
	Type        string          `json:"type"`
	Required    bool            `json:"required"`
	IsUnique    bool            `json:"is_unique"`
	Options     json.RawMessage `json:"options"`
	Validation  json.RawMessage `json:"validation"`
	ArchivedAt  *time.Time      `json:"archived_at"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
}

func definitionsOf(row db.FieldDefinitionsRow) (*Definitions, error) {
	var rows []definitionRow
	if err := json.Unmarshal(row.Fields, &rows); err != nil {
		return nil, fmt.Errorf("field definitions: %w", err)
	}
	fields := make([]Field, len(rows))
	for i, r := range rows {
		f, err := fromRow(db.ContactField{Key: r.Key, Label: r.Label, Description: r.Description, Type: r.Type,
			Required: r.Required, IsUnique: r.IsUnique, Options: r.Options, Validation: r.Validation,
			ArchivedAt: r.ArchivedAt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt})
		if err != nil {
			return nil, err
		}
		fields[i] = f
	}
	d, err := NewDefinitions(fields...)
	if d != nil {
		d.Version = row.Version
	}
	return d, err
}

// NewDefinitions are fields as an account's definitions (at version 0): what the stored ones
// are read into, and what tests of other packages check against.
func NewDefinitions(fields ...Field) (*Definitions, error) {
	d := &Definitions{byKey: make(map[string]*Field, len(fields)), patterns: map[string]*regexp.Regexp{}, steps: map[string]int{}}
	for i := range fields {
		f := &fields[i]
		if f.Validation.Pattern != nil {
			re, err := compilePattern(*f.Validation.Pattern)
			if err != nil {
				return nil, fmt.Errorf("field %s: pattern: %w", f.Key, err)
			}
			d.patterns[f.Key] = re
			if d.steps[f.Key], err = patternSteps(f.Validation.Pattern, f.Validation); err != nil {
				return nil, fmt.Errorf("field %s: pattern: %w", f.Key, err)
			}
		}
		d.fields = append(d.fields, f)
		d.byKey[f.Key] = f
	}
	return d, nil
}

// maxCached bounds the definitions a process keeps: past it, the cache starts again empty.
const maxCached = 10000

// cache holds the definitions each account's writes were last checked against. A change in
// this process drops its account's entry; a change in another process is found by the write
// itself (its fields_version no longer current), which reads them again (Reload).
type cache struct {
	mu   sync.Mutex
	defs map[uuid.UUID]*Definitions
}

// Definitions are the account's definitions, from the cache when it has them.
func (s *Service) Definitions(ctx context.Context, q *db.Queries, account uuid.UUID) (*Definitions, error) {
	s.cache.mu.Lock()
	d, ok := s.cache.defs[account]
	s.cache.mu.Unlock()
	if ok {
		return d, nil
	}
	return s.Reload(ctx, q, account)
}

// Of is the account's definitions, read again when reload; a nil Service has none (field.None).
func (s *Service) Of(ctx context.Context, q *db.Queries, account uuid.UUID, reload bool) (*Definitions, error) {
	switch {
	case s == nil:
		return None, nil
	case reload:
		return s.Reload(ctx, q, account)
	default:
		return s.Definitions(ctx, q, account)
	}
}

// Reload reads the account's definitions again (q: a transaction's, or nil for the pool's),
// after a write found those it was checked against were not current.
func (s *Service) Reload(ctx context.Context, q *db.Queries, account uuid.UUID) (*Definitions, error) {
	var row db.FieldDefinitionsRow
	var err error
	if q != nil {
		row, err = q.FieldDefinitions(ctx, account)
	} else {
		err = s.store.Do(ctx, func(q *db.Queries) (err error) {
			row, err = q.FieldDefinitions(ctx, account)
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	d, err := definitionsOf(row)
	if err != nil {
		return nil, err
	}
	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	if cur, ok := s.cache.defs[account]; !ok || cur.Version <= d.Version {
		if len(s.cache.defs) >= maxCached {
			s.cache.defs = map[uuid.UUID]*Definitions{}
		}
		s.cache.defs[account] = d
	}
	return d, nil
}

// forget drops the account's cached definitions after this process changed them.
func (s *Service) forget(account uuid.UUID) {
	s.cache.mu.Lock()
	delete(s.cache.defs, account)
	s.cache.mu.Unlock()
}

// checkAccountPatterns prices the account's live patterns with key's validation v in place of
// its own, inside tx, after the account's definitions lock: they are read there, so that two
// changes cannot each pass against the definitions before the other.
func (s *Service) checkAccountPatterns(ctx context.Context, tx store.Tx, account uuid.UUID, key string, v Validation) error {
	if v.Pattern == nil {
		return nil
	}
	steps, err := patternSteps(v.Pattern, v)
	if err != nil {
		return err
	}
	d, err := s.Reload(ctx, tx.Queries, account)
	if err != nil {
		return err
	}
	return checkAccountPatterns(d, key, steps)
}
