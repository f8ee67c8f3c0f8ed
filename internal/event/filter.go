package event

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/contactd/contactd/internal/apperr"
)

// A payload filter keeps a subscription's deliveries to the events it wants (docs/webhooks.md,
// "Filters"). It is a JSON object, the shape Convoy and Hookdeck Outpost use: each member is a
// condition on the event (as the events feed and receivers see it, without the {"events": []}
// around it) at a dotted path, all of which must hold, or "$and", "$or" (arrays of filters)
// and "$not" (a filter):
//
//	{"data.tagsAddedInfo.tagsAdded": "vip"}
//	{"$or": [{"data.tagsAddedInfo.tagsAdded": {"$in": ["vip", "gold"]}}, {"data.contactInfo.propertyId": {"$neq": ""}}]}
//
// A condition is a value (equality), or an object of operators that must all hold: $eq, $neq,
// $in, $nin (values), $gt, $gte, $lt, $lte (a number or a string: strings compare as text, so
// timestamps compare in time) and $exists (true or false). Where the path holds an array, $eq,
// $in and the comparisons hold when one of its elements satisfies them, and $neq and $nin when
// none does; a value of another type than the condition's never satisfies it.
//
// ParseFilter checks a filter and compiles it twice: to a matcher evaluated in Go (match.go),
// the one evaluator of fan-out and filter-test alike, and to the SQL/JSON path predicate that
// the previous release evaluates in PostgreSQL (webhook_filter_matches, migration 00033), kept
// in filter_path while a rolling upgrade runs both.

// Limits of a filter, so that evaluating one costs every write of its event type little.
const (
	maxFilterConditions = 32
	maxFilterDepth      = 4
	maxFilterValues     = 64
	maxFilterString     = 256
	maxFilterPathParts  = 8
)

// Filter is a checked payload filter: JSON as the subscriber gave it (re-encoded), and Path, the
// SQL/JSON path predicate the previous release decides it by. The zero Filter wants every event.
type Filter struct {
	JSON []byte
	Path string
	m    matcher
}

// ParseFilter checks raw (the decoded JSON object of a request's field) and compiles it; field
// names the request's field in errors. An empty object is no filter: ok is false.
func ParseFilter(field string, raw map[string]any) (f Filter, ok bool, err error) {
	if len(raw) == 0 {
		return Filter{}, false, nil
	}
	c := filterCompiler{}
	path, m, err := c.filter(field, raw, 1)
	if err != nil {
		return Filter{}, false, err
	}
	js, err := json.Marshal(raw)
	if err != nil {
		return Filter{}, false, filterError(field, "is not JSON")
	}
	return Filter{JSON: js, Path: path, m: m}, true, nil
}

// StoredFilter compiles a filter as a subscription keeps it (nil: none).
func StoredFilter(js []byte) (Filter, error) {
	if js == nil {
		return Filter{}, nil
	}
	var raw map[string]any
	if err := json.Unmarshal(js, &raw); err != nil {
		return Filter{}, err
	}
	f, _, err := ParseFilter("filter", raw)
	return f, err
}

type filterCompiler struct{ conditions int }

func filterError(field, msg string) error {
	return apperr.Invalid(apperr.Field(field, "filter", msg))
}

// filter compiles an object of conditions: all of them hold.
func (c *filterCompiler) filter(field string, obj map[string]any, depth int) (string, matcher, error) {
	if depth > maxFilterDepth {
		return "", nil, filterError(field, fmt.Sprintf("nests deeper than %d levels", maxFilterDepth))
	}
	if len(obj) == 0 {
		return "", nil, filterError(field, "is an empty filter")
	}
	var parts []string
	var all allOf
	for _, key := range sortedKeys(obj) {
		at := field + "." + key
		var (
			part string
			m    matcher
			err  error
		)
		switch key {
		case "$and", "$or":
			part, m, err = c.junction(at, key, obj[key], depth)
		case "$not":
			sub, isObj := obj[key].(map[string]any)
			if !isObj {
				return "", nil, filterError(at, "must be a filter (an object)")
			}
			if part, m, err = c.filter(at, sub, depth+1); err == nil {
				part, m = "!("+part+")", notOf{m}
			}
		default:
			if strings.HasPrefix(key, "$") {
				return "", nil, filterError(at, "is not a filter operator: use $and, $or or $not, or a path into the event")
			}
			part, m, err = c.condition(at, key, obj[key])
		}
		if err != nil {
			return "", nil, err
		}
		parts, all = append(parts, part), append(all, m)
	}
	return joinPredicates(parts, " && "), one(all), nil
}

// one is a single matcher as itself.
func one(all allOf) matcher {
	if len(all) == 1 {
		return all[0]
	}
	return all
}

func (c *filterCompiler) junction(field, op string, v any, depth int) (string, matcher, error) {
	items, isArr := v.([]any)
	if !isArr || len(items) == 0 || len(items) > 16 {
		return "", nil, filterError(field, "must be an array of 1 to 16 filters")
	}
	parts := make([]string, len(items))
	ms := make([]matcher, len(items))
	for i, item := range items {
		at := fmt.Sprintf("%s[%d]", field, i)
		sub, isObj := item.(map[string]any)
		if !isObj {
			return "", nil, filterError(at, "must be a filter (an object)")
		}
		p, m, err := c.filter(at, sub, depth+1)
		if err != nil {
			return "", nil, err
		}
		parts[i], ms[i] = p, m
	}
	if op == "$and" {
		return joinPredicates(parts, " && "), one(ms), nil
	}
	return joinPredicates(parts, " || "), anyOf(ms), nil
}

// condition compiles the condition on the value at a dotted path of the event.
func (c *filterCompiler) condition(field, dotted string, v any) (string, matcher, error) {
	path, segs, err := jsonPath(field, dotted)
	if err != nil {
		return "", nil, err
	}
	ops, isObj := v.(map[string]any)
	if !isObj {
		ops = map[string]any{"$eq": v}
	} else if len(ops) == 0 {
		return "", nil, filterError(field, "is an empty condition")
	}
	var parts []string
	var all allOf
	for _, op := range sortedKeys(ops) {
		at := field + "." + op
		if c.conditions++; c.conditions > maxFilterConditions {
			return "", nil, filterError(at, fmt.Sprintf("is past the %d conditions a filter may have", maxFilterConditions))
		}
		arg := ops[op]
		var part string
		m := condition{path: segs}
		switch op {
		case "$eq", "$neq":
			lit, err := literal(at, arg)
			if err != nil {
				return "", nil, err
			}
			part = "exists(" + path + " ? (@ == " + lit + "))"
			set := &valueSet{}
			set.add(arg)
			m.test = set.has
			if op == "$neq" {
				part, m.negate = "!("+part+")", true
			}
		case "$in", "$nin":
			vals, isArr := arg.([]any)
			if !isArr || len(vals) == 0 || len(vals) > maxFilterValues {
				return "", nil, filterError(at, fmt.Sprintf("must be an array of 1 to %d values", maxFilterValues))
			}
			eqs := make([]string, len(vals))
			set := &valueSet{}
			for i, val := range vals {
				lit, err := literal(fmt.Sprintf("%s[%d]", at, i), val)
				if err != nil {
					return "", nil, err
				}
				eqs[i] = "@ == " + lit
				set.add(val)
			}
			part = "exists(" + path + " ? (" + strings.Join(eqs, " || ") + "))"
			m.test = set.has
			if op == "$nin" {
				part, m.negate = "!("+part+")", true
			}
		case "$gt", "$gte", "$lt", "$lte":
			o := ordered{op: op}
			switch x := arg.(type) {
			case string:
				o.str = &x
			case float64:
				if d, ok := parseDecimal(formatNumber(x)); ok {
					o.num = &d
				}
			default:
				return "", nil, filterError(at, "must be a number or a string")
			}
			lit, err := literal(at, arg)
			if err != nil {
				return "", nil, err
			}
			cmp := map[string]string{"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[op]
			part = "exists(" + path + " ? (@ " + cmp + " " + lit + "))"
			m.test = o.test
		case "$exists":
			want, isBool := arg.(bool)
			if !isBool {
				return "", nil, filterError(at, "must be true or false")
			}
			part = "exists(" + path + ")"
			if !want {
				part, m.negate = "!("+part+")", true
			}
		default:
			if !strings.HasPrefix(op, "$") {
				return "", nil, filterError(at, "is not an operator: a condition is a value or an object of $eq, $neq, $in, $nin, $gt, $gte, $lt, $lte, $exists (nested members are a dotted path)")
			}
			return "", nil, filterError(at, "is not an operator: use $eq, $neq, $in, $nin, $gt, $gte, $lt, $lte or $exists")
		}
		parts, all = append(parts, part), append(all, m)
	}
	return joinPredicates(parts, " && "), one(all), nil
}

// jsonPath is the SQL/JSON path of a dotted path, each member quoted, and its members.
func jsonPath(field, dotted string) (string, []string, error) {
	segs := strings.Split(dotted, ".")
	if len(segs) > maxFilterPathParts {
		return "", nil, filterError(field, fmt.Sprintf("is a path of more than %d members", maxFilterPathParts))
	}
	var b strings.Builder
	b.WriteString("$")
	for _, seg := range segs {
		if seg == "" || len(seg) > 64 {
			return "", nil, filterError(field, "is not a path: members of 1 to 64 characters, joined by dots")
		}
		if strings.ContainsRune(seg, 0) {
			return "", nil, filterError(field, nulMessage)
		}
		q, _ := json.Marshal(seg)
		b.WriteString(".")
		b.Write(q)
	}
	return b.String(), segs, nil
}

// nulMessage refuses U+0000, which neither PostgreSQL's text nor its jsonb can hold.
const nulMessage = "contains the character U+0000, which a filter cannot hold"

// literal is v as an SQL/JSON path literal: a string, a number, true, false or null.
func literal(field string, v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "null", nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return "", filterError(field, "is not a finite number")
		}
		return formatNumber(x), nil
	case string:
		if len(x) > maxFilterString {
			return "", filterError(field, fmt.Sprintf("is longer than %d characters", maxFilterString))
		}
		if strings.ContainsRune(x, 0) {
			return "", filterError(field, nulMessage)
		}
		q, _ := json.Marshal(x)
		return string(q), nil
	default:
		return "", filterError(field, "must be a string, a number, true, false or null (arrays: $in; nested members: a dotted path)")
	}
}

// formatNumber is a filter's number as both evaluators read it.
func formatNumber(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

func joinPredicates(parts []string, op string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, op) + ")"
}

// sortedKeys keeps a filter's compiled form the same for the same filter.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
