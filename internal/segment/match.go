package segment

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Subject is what a filter reads of a contact: its attributes as the API shows them (the lead
// score as decayed when read).
type Subject struct {
	// Text holds email, name, phone and assignedUserEmailId; EmailStatus and RecordStatus too.
	Text      map[string]string
	LeadScore float64
	Tags      []string // lower case
	// Numbers are the engagement.numOf... counters; Times createdAt, updatedAt and the
	// engagement.last...Date dates, absent when the contact has none.
	Numbers map[string]float64
	Times   map[string]time.Time
	// Addresses are the contact's active properties' addresses, each by part (streetAddress,
	// city, county, state, zip).
	Addresses []map[string]string
	// Custom is the contact's custom field values as stored (field.Values).
	Custom map[string]any

	index *subjectIndex // its folded values, once Indexed
}

// Compile decodes f's operands once, for Matches; f must be as Check returned it.
func (f Filter) Compile() Filter {
	out := Filter{Groups: make([]Group, len(f.Groups))}
	for i, g := range f.Groups {
		out.Groups[i].Conditions = make([]Condition, len(g.Conditions))
		for j, c := range g.Conditions {
			raws := c.Values
			if c.Value != nil {
				raws = []json.RawMessage{c.Value}
			}
			for _, raw := range raws {
				o := decodeOperand(c.Attribute, raw)
				c.operands = append(c.operands, o)
				if str, ok := o.(string); ok && membership[c.Operator] {
					if c.set == nil {
						c.set = map[string]struct{}{}
					}
					c.set[fold(str)] = struct{}{}
				} else if membership[c.Operator] {
					c.others = append(c.others, o)
				}
			}
			out.Groups[i].Conditions[j] = c
		}
	}
	return out
}

func decodeOperand(attr string, raw json.RawMessage) any {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	if s, ok := v.(string); ok && attributes[attr].kind == timeKind {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t
		}
	}
	return v
}

// Matches reports whether s is in f: every condition of one of its groups holds. f must be
// compiled.
func (f Filter) Matches(s Subject) bool {
	for _, g := range f.Groups {
		all := true
		for _, c := range g.Conditions {
			if !c.holds(s) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// holds evaluates one condition. A negation (neq, notIn, notContains, notExists) is the
// opposite of its positive over the whole contact: neq holds for a contact without the value,
// and address.state neq IL for a contact none of whose properties is in IL.
func (c Condition) holds(s Subject) bool {
	switch c.Operator {
	case "neq":
		return !c.with("eq").holds(s)
	case "notIn":
		return !c.with("in").holds(s)
	case "notContains":
		return !c.with("contains").holds(s)
	case "notExists":
		return !c.with("exists").holds(s)
	}
	if c.set != nil || c.others != nil {
		return c.member(s)
	}
	for _, v := range c.values(s) {
		if c.compare(v) {
			return true
		}
	}
	return false
}

func (c Condition) with(op string) Condition {
	c.Operator = op
	return c
}

// values are what the condition's attribute holds for s: none when it has no value, one, or
// several (a set's elements, each property's address part).
func (c Condition) values(s Subject) []any {
	attr := c.Attribute
	if key, ok := strings.CutPrefix(attr, customPrefix); ok {
		switch v := s.Custom[key].(type) {
		case nil:
			return nil
		case []any:
			if c.Operator == "exists" {
				return []any{true}
			}
			return v
		default:
			return []any{v}
		}
	}
	if part, ok := strings.CutPrefix(attr, "address."); ok {
		var out []any
		for _, a := range s.Addresses {
			if v := a[part]; v != "" {
				out = append(out, v)
			}
		}
		return out
	}
	switch a := attributes[attr]; {
	case attr == "leadScore":
		return []any{s.LeadScore}
	case attr == "tags":
		if c.Operator == "exists" {
			if len(s.Tags) == 0 {
				return nil
			}
			return []any{true}
		}
		out := make([]any, len(s.Tags))
		for i, t := range s.Tags {
			out[i] = t
		}
		return out
	case a.kind == numberKind:
		if n, ok := s.Numbers[attr]; ok {
			return []any{n}
		}
	case a.kind == timeKind:
		if t, ok := s.Times[attr]; ok {
			return []any{t}
		}
	default:
		if v := s.Text[attr]; v != "" {
			return []any{v}
		}
	}
	return nil
}

// compare says whether one of the attribute's values meets the condition.
func (c Condition) compare(v any) bool {
	switch c.Operator {
	case "exists":
		return true
	case "in", "eq", "contains":
		return slices.ContainsFunc(c.operands, func(o any) bool { return equal(v, o) })
	}
	if len(c.operands) != 1 {
		return false
	}
	sign, ok := order(v, c.operands[0])
	if !ok {
		return false
	}
	switch c.Operator {
	case "gt":
		return sign > 0
	case "gte":
		return sign >= 0
	case "lt":
		return sign < 0
	default: // lte
		return sign <= 0
	}
}

// equal compares a value with an operand: text whatever its case, numbers by value, booleans.
func equal(v, operand any) bool {
	switch v := v.(type) {
	case string:
		s, ok := operand.(string)
		return ok && strings.EqualFold(v, s)
	case float64, bool:
		return v == operand
	}
	return false
}

// order compares a value with an operand of its kind: numbers, times, and dates and
// datetimes of custom fields as their fixed-width text.
func order(v, operand any) (int, bool) {
	switch v := v.(type) {
	case float64:
		n, ok := operand.(float64)
		return cmp.Compare(v, n), ok
	case time.Time:
		t, ok := operand.(time.Time)
		return v.Compare(t), ok
	case string:
		s, ok := operand.(string)
		return strings.Compare(v, s), ok
	}
	return 0, false
}
