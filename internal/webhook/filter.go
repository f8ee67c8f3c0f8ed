package webhook

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
// ParseFilter checks a filter and compiles it to an SQL/JSON path predicate, which PostgreSQL
// evaluates (webhook_filter_matches, migration 00033) in the statement that queues an event's
// deliveries: the one evaluator, so filter-test answers exactly as deliveries go.

// Limits of a filter, so that evaluating one costs every write of its event type little.
const (
	maxFilterConditions = 32
	maxFilterDepth      = 4
	maxFilterValues     = 64
	maxFilterString     = 256
	maxFilterPathParts  = 8
)

// Filter is a checked payload filter: JSON as the subscriber gave it (re-encoded), and Path, the
// SQL/JSON path predicate that decides it.
type Filter struct {
	JSON []byte
	Path string
}

// ParseFilter checks raw (the decoded JSON object of a request's field) and compiles it; field
// names the request's field in errors. An empty object is no filter: ok is false.
func ParseFilter(field string, raw map[string]any) (f Filter, ok bool, err error) {
	if len(raw) == 0 {
		return Filter{}, false, nil
	}
	c := filterCompiler{}
	path, err := c.filter(field, raw, 1)
	if err != nil {
		return Filter{}, false, err
	}
	js, err := json.Marshal(raw)
	if err != nil {
		return Filter{}, false, filterError(field, "is not JSON")
	}
	return Filter{JSON: js, Path: path}, true, nil
}

type filterCompiler struct{ conditions int }

func filterError(field, msg string) error {
	return apperr.Invalid(apperr.Field(field, "filter", msg))
}

// filter compiles an object of conditions: all of them hold.
func (c *filterCompiler) filter(field string, obj map[string]any, depth int) (string, error) {
	if depth > maxFilterDepth {
		return "", filterError(field, fmt.Sprintf("nests deeper than %d levels", maxFilterDepth))
	}
	if len(obj) == 0 {
		return "", filterError(field, "is an empty filter")
	}
	var parts []string
	for _, key := range sortedKeys(obj) {
		at := field + "." + key
		var (
			part string
			err  error
		)
		switch key {
		case "$and", "$or":
			part, err = c.junction(at, key, obj[key], depth)
		case "$not":
			sub, isObj := obj[key].(map[string]any)
			if !isObj {
				return "", filterError(at, "must be a filter (an object)")
			}
			if part, err = c.filter(at, sub, depth+1); err == nil {
				part = "!(" + part + ")"
			}
		default:
			if strings.HasPrefix(key, "$") {
				return "", filterError(at, "is not a filter operator: use $and, $or or $not, or a path into the event")
			}
			part, err = c.condition(at, key, obj[key])
		}
		if err != nil {
			return "", err
		}
		parts = append(parts, part)
	}
	return joinPredicates(parts, " && "), nil
}

func (c *filterCompiler) junction(field, op string, v any, depth int) (string, error) {
	items, isArr := v.([]any)
	if !isArr || len(items) == 0 || len(items) > 16 {
		return "", filterError(field, "must be an array of 1 to 16 filters")
	}
	parts := make([]string, len(items))
	for i, item := range items {
		at := fmt.Sprintf("%s[%d]", field, i)
		sub, isObj := item.(map[string]any)
		if !isObj {
			return "", filterError(at, "must be a filter (an object)")
		}
		p, err := c.filter(at, sub, depth+1)
		if err != nil {
			return "", err
		}
		parts[i] = p
	}
	if op == "$and" {
		return joinPredicates(parts, " && "), nil
	}
	return joinPredicates(parts, " || "), nil
}

// condition compiles the condition on the value at a dotted path of the event.
func (c *filterCompiler) condition(field, dotted string, v any) (string, error) {
	path, err := jsonPath(field, dotted)
	if err != nil {
		return "", err
	}
	ops, isObj := v.(map[string]any)
	if !isObj {
		ops = map[string]any{"$eq": v}
	} else if len(ops) == 0 {
		return "", filterError(field, "is an empty condition")
	}
	var parts []string
	for _, op := range sortedKeys(ops) {
		at := field + "." + op
		if c.conditions++; c.conditions > maxFilterConditions {
			return "", filterError(at, fmt.Sprintf("is past the %d conditions a filter may have", maxFilterConditions))
		}
		arg := ops[op]
		var part string
		switch op {
		case "$eq", "$neq":
			lit, err := literal(at, arg)
			if err != nil {
				return "", err
			}
			part = "exists(" + path + " ? (@ == " + lit + "))"
			if op == "$neq" {
				part = "!(" + part + ")"
			}
		case "$in", "$nin":
			vals, isArr := arg.([]any)
			if !isArr || len(vals) == 0 || len(vals) > maxFilterValues {
				return "", filterError(at, fmt.Sprintf("must be an array of 1 to %d values", maxFilterValues))
			}
			eqs := make([]string, len(vals))
			for i, val := range vals {
				lit, err := literal(fmt.Sprintf("%s[%d]", at, i), val)
				if err != nil {
					return "", err
				}
				eqs[i] = "@ == " + lit
			}
			part = "exists(" + path + " ? (" + strings.Join(eqs, " || ") + "))"
			if op == "$nin" {
				part = "!(" + part + ")"
			}
		case "$gt", "$gte", "$lt", "$lte":
			switch arg.(type) {
			case string, float64:
			default:
				return "", filterError(at, "must be a number or a string")
			}
			lit, err := literal(at, arg)
			if err != nil {
				return "", err
			}
			cmp := map[string]string{"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[op]
			part = "exists(" + path + " ? (@ " + cmp + " " + lit + "))"
		case "$exists":
			want, isBool := arg.(bool)
			if !isBool {
				return "", filterError(at, "must be true or false")
			}
			part = "exists(" + path + ")"
			if !want {
				part = "!(" + part + ")"
			}
		default:
			if !strings.HasPrefix(op, "$") {
				return "", filterError(at, "is not an operator: a condition is a value or an object of $eq, $neq, $in, $nin, $gt, $gte, $lt, $lte, $exists (nested members are a dotted path)")
			}
			return "", filterError(at, "is not an operator: use $eq, $neq, $in, $nin, $gt, $gte, $lt, $lte or $exists")
		}
		parts = append(parts, part)
	}
	return joinPredicates(parts, " && "), nil
}

// jsonPath is the SQL/JSON path of a dotted path, each member quoted.
func jsonPath(field, dotted string) (string, error) {
	segs := strings.Split(dotted, ".")
	if len(segs) > maxFilterPathParts {
		return "", filterError(field, fmt.Sprintf("is a path of more than %d members", maxFilterPathParts))
	}
	var b strings.Builder
	b.WriteString("$")
	for _, seg := range segs {
		if seg == "" || len(seg) > 64 {
			return "", filterError(field, "is not a path: members of 1 to 64 characters, joined by dots")
		}
		q, _ := json.Marshal(seg)
		b.WriteString(".")
		b.Write(q)
	}
	return b.String(), nil
}

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
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case string:
		if len(x) > maxFilterString {
			return "", filterError(field, fmt.Sprintf("is longer than %d characters", maxFilterString))
		}
		q, _ := json.Marshal(x)
		return string(q), nil
	default:
		return "", filterError(field, "must be a string, a number, true, false or null (arrays: $in; nested members: a dotted path)")
	}
}

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
