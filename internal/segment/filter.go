package segment

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/field"
)

// HubSpot's limits on a segment's filter: groups OR'ed, conditions AND'ed within a group.
const (
	MaxGroups          = 5
	MaxGroupConditions = 10
	MaxConditions      = 25
	MaxValues          = 100  // of in and notIn
	MaxValueLength     = 2048 // a string operand, as a custom field's value
)

// Filter selects the contacts of a segment: a contact is in it when every condition of one of
// the groups holds.
type Filter struct {
	Groups []Group `json:"groups"`
}

// Group is conditions that must all hold.
type Group struct {
	Conditions []Condition `json:"conditions"`
}

// Condition compares one attribute of a contact: Value for the comparisons, Values for in and
// notIn, neither for exists and notExists.
type Condition struct {
	Attribute string            `json:"attribute"`
	Operator  string            `json:"operator"`
	Value     json.RawMessage   `json:"value,omitempty"`
	Values    []json.RawMessage `json:"values,omitempty"`

	// operands are Value or Values decoded once (Compile): a string, a float64, a bool, or a
	// time.Time for a time of the contact's own. A membership condition's are also its string
	// operands folded (set) and the others (others): member.
	operands []any
	set      map[string]struct{}
	others   []any
}

// kind is what an attribute holds, which decides the operators it takes and how its operands
// are read.
type kind string

const (
	textKind    kind = "text"
	enumKind    kind = "enum"
	numberKind  kind = "number"
	timeKind    kind = "datetime"
	dateKind    kind = "date"
	setKind     kind = "set" // tags, a multiEnum: contains one element
	booleanKind kind = "boolean"
)

var operators = map[kind][]string{
	textKind:    {"eq", "neq", "in", "notIn", "exists", "notExists"},
	enumKind:    {"eq", "neq", "in", "notIn", "exists", "notExists"},
	numberKind:  {"eq", "neq", "in", "notIn", "gt", "gte", "lt", "lte", "exists", "notExists"},
	timeKind:    {"gt", "gte", "lt", "lte", "exists", "notExists"},
	dateKind:    {"eq", "neq", "in", "notIn", "gt", "gte", "lt", "lte", "exists", "notExists"},
	setKind:     {"contains", "notContains", "exists", "notExists"},
	booleanKind: {"eq", "exists", "notExists"},
}

// attribute is a contact attribute a condition may name (custom fields aside).
type attribute struct {
	kind    kind
	options []string // of an enum
}

// attributes are the contact's own: its details, tags, statuses, lead score, engagement,
// times, and the address of any of its properties.
var attributes = func() map[string]attribute {
	a := map[string]attribute{
		"email": {kind: textKind}, "name": {kind: textKind}, "phone": {kind: textKind},
		"assignedUserEmailId": {kind: textKind},
		"emailStatus":         {kind: enumKind, options: []string{"Valid", "Invalid", "Pending"}},
		"recordStatus":        {kind: enumKind, options: []string{"Marketing", "NonMarketing"}},
		"leadScore":           {kind: numberKind}, "tags": {kind: setKind},
		"createdAt": {kind: timeKind}, "updatedAt": {kind: timeKind},
		"address.streetAddress": {kind: textKind}, "address.city": {kind: textKind}, "address.county": {kind: textKind},
		"address.state": {kind: textKind}, "address.zip": {kind: textKind},
	}
	for _, what := range []string{"AIHandoff", "DashboardClick", "DashboardView", "EmailClick", "EmailOpen", "EmailSend",
		"FormSubmission", "PostcardScan"} {
		a["engagement.numOf"+what+"s"] = attribute{kind: numberKind}
	}
	for _, what := range []string{"AIHandoff", "DashboardClicked", "DashboardViewed", "EmailClick", "EmailOpen", "EmailSent",
		"FormSubmission", "PostcardScan"} {
		a["engagement.last"+what+"Date"] = attribute{kind: timeKind}
	}
	return a
}()

// customPrefix starts an attribute naming a custom field.
const customPrefix = "customFields."

// Check is f with its operands read as the attributes they compare read their values (an email
// in lower case, a time in UTC with milliseconds, a custom field's value as its field reads
// it), or every error there is in it, each naming its place under at ("body.filter").
func Check(f Filter, defs *field.Definitions, at string) (Filter, []apperr.FieldError) {
	var errs []apperr.FieldError
	bad := func(place, reason, msg string) { errs = append(errs, apperr.Field(place, reason, msg)) }
	if len(f.Groups) == 0 || len(f.Groups) > MaxGroups {
		bad(at+".groups", "count", fmt.Sprintf("a filter has 1 to %d groups", MaxGroups))
	}
	total := 0
	out := Filter{Groups: make([]Group, len(f.Groups))}
	for i, g := range f.Groups {
		gat := fmt.Sprintf("%s.groups.%d.conditions", at, i)
		if len(g.Conditions) == 0 || len(g.Conditions) > MaxGroupConditions {
			bad(gat, "count", fmt.Sprintf("a group has 1 to %d conditions", MaxGroupConditions))
		}
		total += len(g.Conditions)
		out.Groups[i].Conditions = make([]Condition, len(g.Conditions))
		for j, c := range g.Conditions {
			cat := fmt.Sprintf("%s.%d", gat, j)
			checked, err := checkCondition(c, defs)
			if err != nil {
				bad(cat+"."+err.place, err.reason, err.msg)
			}
			out.Groups[i].Conditions[j] = checked
		}
	}
	if total > MaxConditions {
		bad(at+".groups", "count", fmt.Sprintf("a filter has at most %d conditions in all", MaxConditions))
	}
	return out, errs
}

type conditionError struct{ place, reason, msg string }

func checkCondition(c Condition, defs *field.Definitions) (Condition, *conditionError) {
	k, options, err := kindOf(c.Attribute, defs)
	if err != nil {
		return c, &conditionError{"attribute", "enum", err.Error()}
	}
	if !slices.Contains(operators[k], c.Operator) {
		return c, &conditionError{"operator", "enum", fmt.Sprintf("%s takes %s", c.Attribute, strings.Join(operators[k], ", "))}
	}
	out := Condition{Attribute: c.Attribute, Operator: c.Operator}
	switch c.Operator {
	case "exists", "notExists":
		if c.Value != nil || c.Values != nil {
			return c, &conditionError{"value", "unexpected", c.Operator + " takes no value"}
		}
		return out, nil
	case "in", "notIn":
		if c.Value != nil || len(c.Values) == 0 || len(c.Values) > MaxValues {
			return c, &conditionError{"values", "count", fmt.Sprintf("%s takes values: 1 to %d", c.Operator, MaxValues)}
		}
		for i, v := range c.Values {
			read, err := operand(c.Attribute, k, options, v, defs)
			if err != nil {
				return c, &conditionError{fmt.Sprintf("values.%d", i), "format", err.Error()}
			}
			out.Values = append(out.Values, read)
		}
		return out, nil
	}
	if c.Value == nil || c.Values != nil {
		return c, &conditionError{"value", "required", c.Operator + " takes one value"}
	}
	read, err := operand(c.Attribute, k, options, c.Value, defs)
	if err != nil {
		return c, &conditionError{"value", "format", err.Error()}
	}
	out.Value = read
	return out, nil
}

// kindOf is what attribute holds, and its options when it is one of the contact's enums.
func kindOf(attr string, defs *field.Definitions) (kind, []string, error) {
	if key, ok := strings.CutPrefix(attr, customPrefix); ok {
		f, ok := defs.Field(key)
		if !ok {
			return "", nil, fmt.Errorf("the account has no custom field %q", key)
		}
		switch f.Type {
		case field.Number:
			return numberKind, nil, nil
		case field.Boolean:
			return booleanKind, nil, nil
		case field.Date:
			return dateKind, nil, nil
		case field.DateTime:
			return timeKind, nil, nil
		case field.Enum:
			return enumKind, nil, nil
		case field.MultiEnum:
			return setKind, nil, nil
		}
		return textKind, nil, nil
	}
	a, ok := attributes[attr]
	if !ok {
		return "", nil, fmt.Errorf("%q is not an attribute of a contact nor %sKEY", attr, customPrefix)
	}
	return a.kind, a.options, nil
}

// operand is raw read as attr's values are.
func operand(attr string, k kind, options []string, raw json.RawMessage, defs *field.Definitions) (json.RawMessage, error) {
	if key, ok := strings.CutPrefix(attr, customPrefix); ok {
		v, _, err := defs.Operand(key, raw)
		if err != nil {
			return nil, err
		}
		if s, ok := v.(string); ok && len(s) > MaxValueLength {
			return nil, fmt.Errorf("at most %d characters", MaxValueLength)
		}
		return json.Marshal(v)
	}
	switch k {
	case numberKind:
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return nil, fmt.Errorf("%s compares with a number", attr)
		}
		x, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return nil, fmt.Errorf("%s compares with a finite number", attr)
		}
		return json.Marshal(x)
	case timeKind:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%s compares with a time (RFC 3339)", attr)
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return nil, fmt.Errorf("%s compares with a time (RFC 3339)", attr)
		}
		return json.Marshal(t.UTC().Format("2006-01-02T15:04:05.000Z"))
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%s compares with a string", attr)
	}
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return nil, fmt.Errorf("%s compares with a value, not an empty one", attr)
	case len(s) > MaxValueLength:
		return nil, fmt.Errorf("at most %d characters", MaxValueLength)
	case k == enumKind && !slices.Contains(options, s):
		return nil, fmt.Errorf("%s is one of %s", attr, strings.Join(options, ", "))
	case attr == "email" || attr == "assignedUserEmailId" || k == setKind: // compared as the contact's keys are
		s = strings.ToLower(s)
	}
	return json.Marshal(s)
}
