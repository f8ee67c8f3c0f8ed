package field

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/contactd/contactd/internal/apperr"
)

// MaxConditions bounds the custom field conditions of one search.
const MaxConditions = 5

// MaxSearchComparisons is a search's budget: the comparisons its predicate may make on one
// contact. A condition compares each of its distinct values with each value the field may
// hold (a multiEnum up to MaxOptions, another type one), so an in of many alternatives over a
// multiEnum multiplies; a page reads at most a few thousand contacts (contact/search's walk
// limit), and PostgreSQL's jsonpath makes each comparison apart (it has no set to look in).
const MaxSearchComparisons = 1000

// Operators of a condition on a field's value.
var operators = map[string]string{"eq": "==", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}

// Path is the conditions of a search (each KEY:OP[:VALUE], OP one of eq, in, gt, gte, lt, lte,
// exists; in's values separated by |), all of which must hold, as a jsonpath predicate over a
// contact's stored values. Each value is read as a write of the field would read it (an email
// lower case, a phone in E.164), so a condition matches what is stored; ranges are for number,
// date and datetime fields, compared as numbers or as their fixed-width text. A multiEnum
// matches when it holds the option. A 400 names query.field and what is wrong.
func (d *Definitions) Path(conditions []string) (Search, error) {
	if len(conditions) > MaxConditions {
		return Search{}, apperr.Invalid(apperr.Field("query.field", "maxItems", fmt.Sprintf("at most %d conditions on custom fields", MaxConditions)))
	}
	parts := make([]string, 0, len(conditions))
	var s Search
	comparisons := 0
	for _, c := range conditions {
		part, n, err := d.condition(c)
		if err != nil {
			return Search{}, apperr.Invalid(apperr.Field("query.field", "format", fmt.Sprintf("%q: %v", c, err)))
		}
		parts = append(parts, part)
		comparisons += n
		s.Indexed = s.Indexed || equality(c)
	}
	if comparisons > MaxSearchComparisons {
		return Search{}, apperr.Invalid(apperr.Field("query.field", "cost", fmt.Sprintf(
			"the conditions make %d comparisons on each contact (each distinct value times the values its field may hold: a multiEnum %d): the budget is %d",
			comparisons, MaxOptions, MaxSearchComparisons)))
	}
	s.Path = strings.Join(parts, " && ")
	return s, nil
}

// Search is the conditions of a search as one jsonpath predicate.
type Search struct {
	Path string
	// Indexed says that an equality (eq, in, a multiEnum's option) is among the conditions:
	// the custom fields' index (jsonb_path_ops) finds the contacts holding its value. Ranges and
	// exists are not in it.
	Indexed bool
}

// equality reports whether condition c, already checked, compares by equality.
func equality(c string) bool {
	_, rest, _ := strings.Cut(c, ":")
	op, _, _ := strings.Cut(rest, ":")
	return op == "eq" || op == "in"
}

// condition is c as a jsonpath predicate, and the comparisons it makes on a contact.
func (d *Definitions) condition(c string) (string, int, error) {
	key, rest, _ := strings.Cut(c, ":")
	op, value, hasValue := strings.Cut(rest, ":")
	f, ok := d.byKey[key]
	if !ok {
		return "", 0, fmt.Errorf("the account has no field %q", key)
	}
	at := "$." + strconv.Quote(key) // keys are [a-z][a-z0-9_]*: quoted all the same
	fanOut := 1
	if f.Type == MultiEnum {
		at += "[*]"
		fanOut = MaxOptions
	}
	switch {
	case op == "exists" && !hasValue:
		return "exists(" + at + ")", fanOut, nil
	case op == "in" && hasValue:
		var alts []string
		seen := map[string]bool{}
		for _, v := range strings.Split(value, "|") {
			lit, err := d.literal(f, v)
			if err != nil {
				return "", 0, err
			}
			if !seen[lit] { // a value named twice is compared once
				seen[lit] = true
				alts = append(alts, at+" == "+lit)
			}
		}
		return "(" + strings.Join(alts, " || ") + ")", len(alts) * fanOut, nil
	case operators[op] != "" && hasValue:
		if op != "eq" && f.Type != Number && f.Type != Date && f.Type != DateTime {
			return "", 0, fmt.Errorf("%s compares number, date and datetime fields", op)
		}
		lit, err := d.literal(f, value)
		if err != nil {
			return "", 0, err
		}
		return at + " " + operators[op] + " " + lit, fanOut, nil
	}
	return "", 0, fmt.Errorf("not KEY:OP:VALUE (OP eq, in, gt, gte, lt or lte) nor KEY:exists")
}

// literal is value, read as the field's values are, as a jsonpath literal.
func (d *Definitions) literal(f *Field, value string) (string, error) {
	if f.Type == MultiEnum { // one option
		f = &Field{Key: f.Key, Type: Enum, Options: f.Options}
	}
	raw, err := json.Marshal(value)
	if f.Type == Number || f.Type == Boolean {
		raw, err = []byte(strings.TrimSpace(value)), nil
	}
	if err != nil {
		return "", err
	}
	if f.Type == Text || f.Type == Enum { // compared as stored, whatever the rules of new values
		if f.Type == Enum && f.option(value) != nil && !f.hasOption(value) {
			return "", fmt.Errorf("%q is not one of the field's options", value)
		}
		return string(raw), nil
	}
	v, _, fe := d.normalise(&Field{Key: f.Key, Type: f.Type}, raw)
	if fe != nil || v == nil {
		return "", fmt.Errorf("not a value of the %s field", f.Type)
	}
	switch v := v.(type) {
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case bool:
		return strconv.FormatBool(v), nil
	}
	lit, err := json.Marshal(v)
	return string(lit), err
}

// hasOption says whether s is one of f's options, archived or not.
func (f *Field) hasOption(s string) bool {
	for _, o := range f.Options {
		if o.Value == s {
			return true
		}
	}
	return false
}

// Operand is raw, a value a condition compares field key's values with, read as a write of the
// field reads it but without its rules (minimum, pattern: a condition may name any value), and
// the field. A text is compared as stored; an enum's or a multiEnum's operand is one of its
// options, archived ones too (contacts may hold them). An error says what is wrong with it.
func (d *Definitions) Operand(key string, raw json.RawMessage) (any, *Field, error) {
	f, ok := d.byKey[key]
	if !ok {
		return nil, nil, fmt.Errorf("the account has no field %q", key)
	}
	if f.Type == Text || f.Type == Enum || f.Type == MultiEnum {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, f, fmt.Errorf("compares the %s field %q with a string", f.Type, key)
		}
		if f.Type != Text && !f.hasOption(s) {
			return nil, f, fmt.Errorf("%q is not one of the options of %q", s, key)
		}
		return s, f, nil
	}
	v, _, fe := d.normalise(&Field{Key: f.Key, Type: f.Type}, raw)
	if fe != nil {
		return nil, f, fmt.Errorf("%s", fe.Message)
	}
	if v == nil {
		return nil, f, fmt.Errorf("a condition compares with a value, not an empty one")
	}
	return v, f, nil
}
