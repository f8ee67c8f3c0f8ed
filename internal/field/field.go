// Package field holds an account's custom field definitions: what fields its contacts may
// carry in customFields, of which type, under which rules. A field's key and type never
// change; its options are added or archived, never removed, since contacts may hold them; an
// archived field's values stay readable and cannot be written.
package field

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp/syntax"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/platform/store"
)

// Type is what a field's values are.
type Type string

// The types of field.
const (
	Text      Type = "text"
	Number    Type = "number"
	Boolean   Type = "boolean"
	Date      Type = "date"
	DateTime  Type = "datetime"
	Enum      Type = "enum"
	MultiEnum Type = "multiEnum"
	Email     Type = "email"
	Phone     Type = "phone"
	URL       Type = "url"
)

// Limits of the definitions.
const (
	MaxPerAccount = 200 // archived fields included: their values are still read
	MaxOptions    = 100
)

// Option is one value an enum or multiEnum field may take.
type Option struct {
	Value    string `json:"value"`
	Label    string `json:"label"`
	Archived bool   `json:"archived"`
}

// Validation is what a value must meet when it is written.
type Validation struct {
	Min       *float64 `json:"min,omitempty"`
	Max       *float64 `json:"max,omitempty"`
	MaxLength *int     `json:"maxLength,omitempty"`
	Pattern   *string  `json:"pattern,omitempty"`
}

// Field is a custom field of an account's contacts.
type Field struct {
	Key, Label, Description string
	Type                    Type
	Required, Unique        bool
	Options                 []Option
	Validation              Validation
	ArchivedAt              *time.Time
	CreatedAt, UpdatedAt    time.Time
}

// New is a field to define.
type New struct {
	Key, Label, Description string
	Type                    Type
	Required, Unique        bool
	Options                 []Option // Archived ignored
	Validation              Validation
}

// OptionChange adds an option (with its Label), relabels it, or archives or restores it.
type OptionChange struct {
	Value    string
	Label    *string
	Archived *bool
}

// Change is a PATCH of a field: nil is unchanged.
type Change struct {
	Label, Description *string
	Required           *bool
	Options            []OptionChange
	Validation         *Validation
}

// Errors of the field operations.
var (
	ErrNotFound = apperr.New(apperr.KindNotFound, "FieldDoesNotExist", "field does not exist")
	ErrExists   = apperr.New(apperr.KindConflict, "FieldExists", "the account already has a field with this key")
	ErrArchived = apperr.New(apperr.KindConflict, "FieldArchived", "the field is archived")
)

// Service defines and reads fields.
type Service struct {
	store *store.Store
	now   func() time.Time
	cache cache
}

// NewService returns the field service over st.
func NewService(st *store.Store, now func() time.Time) *Service {
	return &Service{store: st, now: now, cache: cache{defs: map[uuid.UUID]*Definitions{}}}
}

// Create defines a field.
func (s *Service) Create(ctx context.Context, account uuid.UUID, in New) (Field, error) {
	options := make([]Option, len(in.Options))
	for i, o := range in.Options {
		options[i] = Option{Value: o.Value, Label: o.Label}
	}
	if errs := check(in.Type, in.Unique, options, in.Validation, in.Options != nil); len(errs) > 0 {
		return Field{}, apperr.Invalid(errs...)
	}
	optionsJSON, validationJSON, err := encode(options, in.Validation)
	if err != nil {
		return Field{}, err
	}
	var rows []db.ContactField
	err = s.store.InTx(ctx, func(tx store.Tx) error {
		if err := tx.FieldsLock(ctx, account); err != nil {
			return err
		}
		n, err := tx.FieldsCount(ctx, account)
		if err != nil {
			return err
		}
		if n >= MaxPerAccount {
			if _, err := tx.FieldGet(ctx, db.FieldGetParams{AccountID: account, Key: in.Key}); err == nil {
				return ErrExists // the key is taken, whatever the count
			}
			return apperr.Invalid(apperr.Field("body.key", "limit", fmt.Sprintf("an account has at most %d fields, archived ones included", MaxPerAccount)))
		}
		if err := s.checkAccountPatterns(ctx, tx, account, in.Key, in.Validation); err != nil {
			return err
		}
		rows, err = tx.FieldInsert(ctx, db.FieldInsertParams{AccountID: account, Key: in.Key, Label: in.Label,
			Description: in.Description, Type: string(in.Type), Required: in.Required, IsUnique: in.Unique,
			Options: optionsJSON, Validation: validationJSON, Now: s.now()})
		if err != nil || len(rows) == 0 {
			return err
		}
		return tx.FieldsVersionBump(ctx, account)
	})
	s.forget(account)
	if err != nil {
		return Field{}, err
	}
	if len(rows) == 0 {
		return Field{}, ErrExists
	}
	return fromRow(rows[0])
}

// List is the account's fields in the order they were defined, archived ones too when asked.
func (s *Service) List(ctx context.Context, account uuid.UUID, withArchived bool) ([]Field, error) {
	var rows []db.ContactField
	err := s.store.Do(ctx, func(q *db.Queries) (err error) {
		rows, err = q.FieldList(ctx, db.FieldListParams{AccountID: account, WithArchived: withArchived})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]Field, len(rows))
	for i, r := range rows {
		if out[i], err = fromRow(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Get is one field, archived or not.
func (s *Service) Get(ctx context.Context, account uuid.UUID, key string) (Field, error) {
	return s.one(ctx, func(q *db.Queries) (db.ContactField, error) {
		return q.FieldGet(ctx, db.FieldGetParams{AccountID: account, Key: key})
	})
}

// one is the field a statement returns, or ErrNotFound.
func (s *Service) one(ctx context.Context, query func(q *db.Queries) (db.ContactField, error)) (Field, error) {
	var row db.ContactField
	err := s.store.Do(ctx, func(q *db.Queries) (err error) {
		row, err = query(q)
		return err
	})
	return found(row, err)
}

// found is the field of row, or ErrNotFound when there was none.
func found(row db.ContactField, err error) (Field, error) {
	if errors.Is(err, apperr.ErrNoRows) {
		return Field{}, ErrNotFound
	}
	if err != nil {
		return Field{}, err
	}
	return fromRow(row)
}

// Update changes a field that is not archived.
func (s *Service) Update(ctx context.Context, account uuid.UUID, key string, in Change) (Field, error) {
	var row db.ContactField
	err := s.store.InTx(ctx, func(tx store.Tx) error {
		if in.Validation != nil && in.Validation.Pattern != nil {
			// the account's patterns are priced together: one change of them at a time
			if err := tx.FieldsLock(ctx, account); err != nil {
				return err
			}
		}
		cur, err := tx.FieldGetForUpdate(ctx, db.FieldGetForUpdateParams{AccountID: account, Key: key})
		if err != nil {
			return err
		}
		f, err := fromRow(cur)
		if err != nil {
			return err
		}
		if f.ArchivedAt != nil {
			return ErrArchived
		}
		if errs := f.apply(in); len(errs) > 0 {
			return apperr.Invalid(errs...)
		}
		if in.Validation != nil && in.Validation.Pattern != nil {
			if err := s.checkAccountPatterns(ctx, tx, account, key, f.Validation); err != nil {
				return err
			}
		}
		options, validation, err := encode(f.Options, f.Validation)
		if err != nil {
			return err
		}
		row, err = tx.FieldUpdate(ctx, db.FieldUpdateParams{AccountID: account, Key: key, Label: f.Label,
			Description: f.Description, Required: f.Required, Options: options, Validation: validation, Now: s.now()})
		if err != nil {
			return err
		}
		return tx.FieldsVersionBump(ctx, account)
	})
	s.forget(account)
	return found(row, err)
}

// Archive archives a field; archiving an archived field changes nothing.
func (s *Service) Archive(ctx context.Context, account uuid.UUID, key string) (Field, error) {
	var row db.ContactField
	err := s.store.InTx(ctx, func(tx store.Tx) (err error) {
		if row, err = tx.FieldArchive(ctx, db.FieldArchiveParams{AccountID: account, Key: key, Now: s.now()}); err != nil {
			return err
		}
		return tx.FieldsVersionBump(ctx, account)
	})
	s.forget(account)
	return found(row, err)
}

// apply makes the change on f, or says what in it breaks the field's rules.
func (f *Field) apply(in Change) []apperr.FieldError {
	if in.Label != nil {
		f.Label = *in.Label
	}
	if in.Description != nil {
		f.Description = *in.Description
	}
	if in.Required != nil {
		f.Required = *in.Required
	}
	if in.Validation != nil {
		f.Validation = *in.Validation
	}
	var errs []apperr.FieldError
	for i, c := range in.Options {
		at := fmt.Sprintf("body.options[%d]", i)
		j := -1
		for k, o := range f.Options {
			if o.Value == c.Value {
				j = k
			}
		}
		if j < 0 {
			if c.Label == nil {
				errs = append(errs, apperr.Field(at+".label", "required", "a new option needs a label"))
				continue
			}
			f.Options = append(f.Options, Option{Value: c.Value, Label: *c.Label})
			j = len(f.Options) - 1
		}
		if c.Label != nil {
			f.Options[j].Label = *c.Label
		}
		if c.Archived != nil {
			f.Options[j].Archived = *c.Archived
		}
	}
	return append(errs, check(f.Type, f.Unique, f.Options, f.Validation, in.Options != nil)...)
}

// check says what breaks a definition's rules: options only for the enum types (and then
// distinct, at most MaxOptions), uniqueness not for them nor booleans, each validation rule
// only for the types it means something for.
func check(t Type, unique bool, options []Option, v Validation, optionsSent bool) []apperr.FieldError {
	var errs []apperr.FieldError
	enum := t == Enum || t == MultiEnum
	switch {
	case enum && len(options) == 0:
		errs = append(errs, apperr.Field("body.options", "required", "an "+string(t)+" field needs options"))
	case !enum && optionsSent:
		errs = append(errs, apperr.Field("body.options", "type", "only enum and multiEnum fields have options"))
	case len(options) > MaxOptions:
		errs = append(errs, apperr.Field("body.options", "maxItems", fmt.Sprintf("a field has at most %d options", MaxOptions)))
	}
	seen := map[string]bool{}
	for i, o := range options {
		if seen[o.Value] {
			errs = append(errs, apperr.Field(fmt.Sprintf("body.options[%d].value", i), "uniqueItems", "this option is named twice"))
		}
		seen[o.Value] = true
	}
	if unique && (enum || t == Boolean) {
		errs = append(errs, apperr.Field("body.unique", "type", "a "+string(t)+" field cannot be unique"))
	}
	if (v.Min != nil || v.Max != nil) && t != Number {
		errs = append(errs, apperr.Field("body.validation", "type", "min and max apply to number fields"))
	}
	if v.Min != nil && v.Max != nil && *v.Min > *v.Max {
		errs = append(errs, apperr.Field("body.validation.max", "minimum", "max must not be below min"))
	}
	if v.MaxLength != nil && t != Text && t != Email && t != Phone && t != URL {
		errs = append(errs, apperr.Field("body.validation.maxLength", "type", "maxLength applies to text, email, phone and url fields"))
	}
	if v.Pattern != nil {
		if t != Text {
			errs = append(errs, apperr.Field("body.validation.pattern", "type", "pattern applies to text fields"))
		} else {
			errs = append(errs, checkPattern(v)...)
		}
	}
	return errs
}

// reSyntax is the reason a pattern does not compile, without the pattern itself.
func reSyntax(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return string(se.Code)
	}
	return "invalid"
}

func encode(options []Option, v Validation) (optionsJSON, validationJSON []byte, err error) {
	if options == nil {
		options = []Option{}
	}
	if optionsJSON, err = json.Marshal(options); err != nil {
		return nil, nil, err
	}
	validationJSON, err = json.Marshal(v)
	return optionsJSON, validationJSON, err
}

func fromRow(r db.ContactField) (Field, error) {
	f := Field{Key: r.Key, Label: r.Label, Description: r.Description, Type: Type(r.Type), Required: r.Required,
		Unique: r.IsUnique, ArchivedAt: r.ArchivedAt, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if err := json.Unmarshal(r.Options, &f.Options); err != nil {
		return Field{}, fmt.Errorf("field %s: options: %w", r.Key, err)
	}
	if err := json.Unmarshal(r.Validation, &f.Validation); err != nil {
		return Field{}, fmt.Errorf("field %s: validation: %w", r.Key, err)
	}
	return f, nil
}
