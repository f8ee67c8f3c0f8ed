package field

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/suppression"
)

// Bounds of a value whatever its field's validation says: what a value may cost to store,
// index and send in every event that carries it.
const (
	MaxTextLength = 1000
	MaxURLLength  = 2048
	// MaxValuesBytes bounds a contact's values together, as JSON: what a search reads of each
	// contact it walks (16 TOAST chunks), and what every read of the contact carries.
	MaxValuesBytes = 32 << 10
	// The E.164 bounds: a country code and a subscriber number of 15 digits at most.
	minPhoneDigits = 8
	maxPhoneDigits = 15
)

// Values are a contact's custom field values by key, normalised: a string (text, enum,
// email, phone, url, date, datetime), a float64 (number), a bool (boolean) or a []any of
// strings (multiEnum). A key without a value is absent, never null.
type Values map[string]any

// ParseValues reads stored values ('{}' for none).
func ParseValues(stored []byte) (Values, error) {
	v := Values{}
	if len(stored) == 0 {
		return v, nil
	}
	if err := json.Unmarshal(stored, &v); err != nil {
		return nil, fmt.Errorf("custom fields: %w", err)
	}
	return v, nil
}

// JSON is the values as an object, keys in order.
func (v Values) JSON() []byte {
	if len(v) == 0 {
		return []byte("{}")
	}
	b, err := json.Marshal(map[string]any(v))
	if err != nil { // only the types above are ever held
		panic(err)
	}
	return b
}

// Claim is a value of a unique field in its unique form: the value two contacts cannot share.
type Claim struct{ Key, Value string }

// Write is what a write of customFields does to a contact's values.
type Write struct {
	Values Values
	// Changed are the keys whose value changed (set, replaced or cleared), in key order.
	Changed []string
	// Claims are the unique values to claim, and Released the unique fields whose claims
	// go first (changed or cleared).
	Claims   []Claim
	Released []string
	// encoded is Values as JSON, once Apply has made it.
	encoded []byte
}

// JSON is the values after the write, as an object (encoded once).
func (w Write) JSON() []byte {
	if w.encoded != nil {
		return w.encoded
	}
	return w.Values.JSON()
}

// Apply checks and normalises a write of customFields (raw: an object of key to value; null
// or "" clears) over the contact's current values (nil on a create), against the
// definitions: each key an active field, each value of its type and within its rules, the
// required fields present on a create and never cleared. Errors name body.customFields.KEY
// and the rule.
func (d *Definitions) Apply(current Values, raw json.RawMessage, creating bool) (Write, []apperr.FieldError) {
	var in map[string]json.RawMessage
	if len(raw) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if err := json.Unmarshal(raw, &in); err != nil {
			return Write{}, []apperr.FieldError{apperr.Field("body.customFields", "type", "must be an object of field keys to values")}
		}
	}
	w := Write{Values: Values{}}
	for k, v := range current {
		w.Values[k] = v
	}
	var errs []apperr.FieldError
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		at := "body.customFields." + k
		f, ok := d.byKey[k]
		if !ok {
			errs = append(errs, apperr.Field(at, "unknown", "the account has no field with this key (define it with POST /public/v1/fields)"))
			continue
		}
		if f.ArchivedAt != nil {
			errs = append(errs, apperr.Field(at, "archived", "the field is archived: its values are read, not written"))
			continue
		}
		value, unique, fe := d.normalise(f, in[k])
		if fe != nil {
			fe.Field = at
			errs = append(errs, *fe)
			continue
		}
		before, had := current[k]
		switch {
		case value == nil && !had:
			continue
		case value == nil:
			if f.Required {
				errs = append(errs, apperr.Field(at, "required", "a required field cannot be cleared"))
				continue
			}
			delete(w.Values, k)
		case had && reflect.DeepEqual(before, value):
			continue
		default:
			w.Values[k] = value
		}
		w.Changed = append(w.Changed, k)
		if f.Unique {
			if had {
				w.Released = append(w.Released, k)
			}
			if value != nil {
				w.Claims = append(w.Claims, Claim{Key: k, Value: claimForm(unique)})
			}
		}
	}
	if creating {
		for _, f := range d.fields {
			if f.Required && f.ArchivedAt == nil && w.Values[f.Key] == nil && !named(errs, "body.customFields."+f.Key) {
				errs = append(errs, apperr.Field("body.customFields."+f.Key, "required", "the field is required"))
			}
		}
	}
	if len(errs) == 0 && len(w.Changed) > 0 {
		if w.encoded = w.Values.JSON(); len(w.encoded) > MaxValuesBytes {
			n := len(w.encoded)
			errs = append(errs, apperr.Field("body.customFields", "maxBytes",
				fmt.Sprintf("a contact's custom field values take at most %d bytes as JSON (these %d)", MaxValuesBytes, n)))
		}
	}
	if len(errs) > 0 {
		return Write{}, errs
	}
	return w, nil
}

// normalise is the stored form of raw for f, and its unique form; nil for no value (null, an
// empty string or an empty list). The error's Field is set by the caller.
func (d *Definitions) normalise(f *Field, raw json.RawMessage) (value any, unique string, fe *apperr.FieldError) {
	bad := func(reason, msg string) (any, string, *apperr.FieldError) {
		e := apperr.Field("", reason, msg)
		return nil, "", &e
	}
	v, err := decodeValue(raw)
	if err != nil || v == nil {
		return nil, "", nil
	}
	if s, ok := v.(string); ok && strings.TrimSpace(s) == "" {
		return nil, "", nil // an empty value is no value: it never collides
	}
	switch f.Type {
	case Number:
		n, ok := v.(json.Number)
		if !ok {
			return bad("type", "must be a number")
		}
		x, err := strconv.ParseFloat(string(n), 64)
		if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
			return bad("type", "must be a finite number")
		}
		if f.Validation.Min != nil && x < *f.Validation.Min {
			return bad("minimum", fmt.Sprintf("must be at least %v", *f.Validation.Min))
		}
		if f.Validation.Max != nil && x > *f.Validation.Max {
			return bad("maximum", fmt.Sprintf("must be at most %v", *f.Validation.Max))
		}
		return x, strconv.FormatFloat(x, 'g', -1, 64), nil
	case Boolean:
		b, ok := v.(bool)
		if !ok {
			return bad("type", "must be true or false")
		}
		return b, "", nil
	case MultiEnum:
		list, ok := v.([]any)
		if !ok {
			return bad("type", "must be a list of the field's options")
		}
		chosen := map[string]bool{}
		for _, item := range list {
			s, ok := item.(string)
			if !ok {
				return bad("type", "must be a list of the field's options")
			}
			if e := f.option(s); e != nil {
				return nil, "", e
			}
			chosen[s] = true
		}
		if len(chosen) == 0 {
			return nil, "", nil
		}
		out := []any{}
		for _, o := range f.Options { // in the definition's order, each once
			if chosen[o.Value] {
				out = append(out, o.Value)
			}
		}
		return out, "", nil
	}
	s, ok := v.(string)
	if !ok {
		return bad("type", "must be a string")
	}
	max := MaxTextLength
	if f.Type == URL {
		max = MaxURLLength
	}
	if f.Validation.MaxLength != nil {
		max = min(max, *f.Validation.MaxLength)
	}
	if utf8.RuneCountInString(s) > max {
		return bad("maxLength", fmt.Sprintf("must be at most %d characters", max))
	}
	switch f.Type {
	case Text:
		if !d.matches(f, s) {
			return bad("pattern", "does not match the field's pattern")
		}
		return s, s, nil
	case Enum:
		if e := f.option(s); e != nil {
			return nil, "", e
		}
		return s, s, nil
	case Date:
		t, err := time.Parse(time.DateOnly, strings.TrimSpace(s))
		if err != nil {
			return bad("format", "must be a date, YYYY-MM-DD")
		}
		return t.Format(time.DateOnly), t.Format(time.DateOnly), nil
	case DateTime:
		t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
		if err != nil {
			return bad("format", "must be an RFC 3339 date-time with its offset")
		}
		out := t.UTC().Truncate(time.Millisecond).Format("2006-01-02T15:04:05.000Z")
		return out, out, nil
	case Email:
		addr := strings.TrimSpace(s)
		parsed, err := mail.ParseAddress(addr)
		local, _, _ := strings.Cut(addr, "@")
		if err != nil || parsed.Address != addr || len(local) > 64 || len(addr) > 254 {
			return bad("format", "not a valid email address")
		}
		key := strings.ToLower(addr)
		if canon := suppression.EmailCanon(key); canon != "" {
			return key, canon, nil
		}
		return key, key, nil
	case Phone:
		for _, r := range s {
			if !strings.ContainsRune("0123456789+-(). ", r) {
				return bad("format", "a phone has digits, and may have + - ( ) . and spaces")
			}
		}
		e164 := suppression.PhoneE164(&s)
		if n := len(e164) - 1; n < minPhoneDigits || n > maxPhoneDigits {
			return bad("format", "not a phone number: E.164 has 8 to 15 digits with the country code (ten digits are read as +1)")
		}
		return e164, e164, nil
	case URL:
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("format", "must be an absolute http or https URL")
		}
		u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
		return u.String(), u.String(), nil
	}
	return bad("type", "the field's type takes no value") // unreachable: every type is above
}

// decodeValue is one value of a customFields object that json.Unmarshal has read already (so
// valid JSON): a string, a json.Number, a bool, a []any or nil, read by its first byte
// rather than through a Decoder for each value.
func decodeValue(raw json.RawMessage) (any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, nil
	}
	switch raw[0] {
	case 'n':
		return nil, nil
	case 't':
		return true, nil
	case 'f':
		return false, nil
	case '"':
		if body := raw[1 : len(raw)-1]; bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
			return string(body), nil // no escapes: the bytes are the string (else as encoding/json reads it)
		}
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	case '[', '{':
		var v any
		err := json.Unmarshal(raw, &v)
		return v, err
	}
	return json.Number(raw), nil
}

// option is nil when s is one of f's options that can be written.
func (f *Field) option(s string) *apperr.FieldError {
	for _, o := range f.Options {
		if o.Value == s && !o.Archived {
			return nil
		}
		if o.Value == s {
			e := apperr.Field("", "enum", fmt.Sprintf("the option %q is archived", s))
			return &e
		}
	}
	e := apperr.Field("", "enum", fmt.Sprintf("%q is not one of the field's options", s))
	return &e
}

// named says whether errs has one about field.
func named(errs []apperr.FieldError, field string) bool {
	for _, e := range errs {
		if e.Field == field {
			return true
		}
	}
	return false
}

// UniqueForm is value's unique form for the unique field key (value as a query gives it: a
// number's digits for a number field), to find the contact that holds it; a 400 naming
// param when the field is not a unique field of the account or value is not one of its.
func (d *Definitions) UniqueForm(key, value, param string) (string, error) {
	f, ok := d.byKey[key]
	if !ok || !f.Unique {
		return "", apperr.Invalid(apperr.Field(param, "unique", "not a unique field of the account: a contact is found by a unique field's value"))
	}
	raw, err := json.Marshal(value)
	if f.Type == Number {
		raw, err = []byte(strings.TrimSpace(value)), nil
	}
	if err != nil {
		return "", err
	}
	v, unique, fe := d.normalise(f, raw)
	if fe != nil || v == nil {
		reason, msg := "required", "a value is needed"
		if fe != nil {
			reason, msg = fe.Reason, fe.Message
		}
		return "", apperr.Invalid(apperr.Field("query.value", reason, msg))
	}
	return claimForm(unique), nil
}

// maxClaimBytes bounds a claim's value: a B-tree entry of PostgreSQL holds at most about
// 2,700 bytes, and a text value may be 1,000 characters of 4 bytes.
const maxClaimBytes = 256

// claimForm is how a unique form is held in contact_unique_values: as it is up to
// maxClaimBytes, its SHA-256 beyond.
func claimForm(unique string) string {
	if len(unique) <= maxClaimBytes {
		return unique
	}
	sum := sha256.Sum256([]byte(unique))
	return "sha256:" + hex.EncodeToString(sum[:])
}
