package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The filter language evaluated in Go, at fan-out, outside every statement: what PostgreSQL's
// lax SQL/JSON path mode makes of the predicate ParseFilter compiles (migration 00033's
// webhook_filter_matches, which the previous release evaluates), so both answer alike
// (TestMatcherAgreesWithPostgreSQL). In lax mode:
//   - a member of an array is the member of each of its elements that is an object (one level);
//   - a condition on a value that is an array holds when it holds for one of its elements, and
//     for one element of an element that is an array (two levels, no deeper);
//   - values of different types never compare equal or ordered, except that null is unequal to
//     everything but null; objects and arrays compare with nothing;
//   - strings compare by their bytes, numbers exactly (decimal).
//
// Its cost is counted in steps, one a value visited or compared, and bounded: an event holds
// at most MaxEventValues values and a filter at most maxFilterConditions conditions, each of
// which visits a value at most once, so no evaluation can pass MaxFilterSteps. The count is still kept and checked, so a bug in that reasoning stops an
// evaluation rather than a core.

// MaxEventValues is the most JSON values (objects, arrays, strings, numbers, booleans and
// nulls, counted each) an event's payload may hold: a filter's cost is at most linear in it.
const MaxEventValues = 2048

// MaxFilterSteps is the most steps one filter takes on one event: one condition takes at most
// one step a value of the event, since the path's walk reaches a value once (as a member or as
// an array's element), and the test only the values below the path's end, which the walk
// never reaches.
const MaxFilterSteps = maxFilterConditions * MaxEventValues

// ErrFilterBudget is an evaluation stopped at MaxFilterSteps.
var ErrFilterBudget = errors.New("payload filter: evaluation passed its step budget")

// Payload is an event parsed once for every filter that looks at it.
type Payload struct {
	root   any
	values int
}

// Values is how many JSON values the payload holds.
func (p Payload) Values() int { return p.values }

// ParsePayload parses an event as receivers get it; one of more than MaxEventValues values is
// refused, naming field (the request's member that carries it) in the error.
func ParsePayload(field string, raw []byte) (Payload, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return Payload{}, eventError(field, "is not JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return Payload{}, eventError(field, "is not one JSON value")
	}
	n := countValues(root, MaxEventValues+1)
	if n > MaxEventValues {
		return Payload{}, eventError(field, fmt.Sprintf("holds more than %d JSON values, the most a filter may be evaluated on", MaxEventValues))
	}
	return Payload{root: root, values: n}, nil
}

func eventError(field, msg string) error { return filterError(field, msg) }

// ValuesIn counts the JSON values of raw (nil: none), stopping once past limit; JSON that does
// not parse counts 0 (the caller's own validation refuses it).
func ValuesIn(raw []byte, limit int) int {
	if raw == nil {
		return 0
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return 0
	}
	return countValues(v, limit)
}

// countValues counts v's values, stopping once past limit.
func countValues(v any, limit int) int {
	n := 1
	switch x := v.(type) {
	case map[string]any:
		for _, m := range x {
			if n += countValues(m, limit-n); n > limit {
				return n
			}
		}
	case []any:
		for _, e := range x {
			if n += countValues(e, limit-n); n > limit {
				return n
			}
		}
	}
	return n
}

// matcher is a compiled filter or part of one.
type matcher interface {
	match(p *evaluation) bool
}

type evaluation struct {
	root  any
	steps int
	over  bool
}

// step counts n steps; false once past the budget.
func (e *evaluation) step(n int) bool {
	e.steps += n
	if e.steps > MaxFilterSteps {
		e.over = true
	}
	return !e.over
}

// Match reports whether the filter wants the event, and the steps it took.
func (f Filter) Match(p Payload) (bool, int, error) {
	if f.m == nil {
		return true, 0, nil
	}
	e := evaluation{root: p.root}
	ok := f.m.match(&e)
	if e.over {
		return false, e.steps, ErrFilterBudget
	}
	return ok, e.steps, nil
}

type allOf []matcher

func (m allOf) match(e *evaluation) bool {
	for _, c := range m {
		if !c.match(e) {
			return false
		}
	}
	return true
}

type anyOf []matcher

func (m anyOf) match(e *evaluation) bool {
	for _, c := range m {
		if c.match(e) {
			return true
		}
	}
	return false
}

type notOf struct{ m matcher }

func (m notOf) match(e *evaluation) bool { return !m.m.match(e) && !e.over }

// condition is one operator on the values at a path: exists(path), or exists(path ? (test)).
type condition struct {
	path   []string
	test   func(v any) bool // nil: $exists
	negate bool
}

func (c condition) match(e *evaluation) bool {
	found := c.find(e)
	return found != c.negate && !e.over
}

func (c condition) find(e *evaluation) bool {
	values := []any{e.root}
	for _, seg := range c.path {
		var next []any
		for _, v := range values {
			if !e.step(1) {
				return false
			}
			switch x := v.(type) {
			case map[string]any:
				if m, ok := x[seg]; ok {
					next = append(next, m)
				}
			case []any:
				for _, el := range x {
					if !e.step(1) {
						return false
					}
					if obj, ok := el.(map[string]any); ok {
						if m, ok := obj[seg]; ok {
							next = append(next, m)
						}
					}
				}
			}
		}
		values = next
	}
	if c.test == nil {
		return len(values) > 0
	}
	for _, v := range values {
		if c.holds(e, v, 2) {
			return true
		}
	}
	return false
}

// holds is the test on v, or, for an array, on one of its elements, levels arrays deep.
func (c condition) holds(e *evaluation, v any, levels int) bool {
	if !e.step(1) {
		return false
	}
	if arr, ok := v.([]any); ok {
		if levels == 0 {
			return false // an array compares with nothing
		}
		for _, el := range arr {
			if c.holds(e, el, levels-1) {
				return true
			}
		}
		return false
	}
	return c.test(v)
}

// valueSet is the values of $eq, $in, $neq and $nin, looked up in one step whatever its size.
type valueSet struct {
	strings map[string]struct{}
	numbers map[string]struct{} // decimal keys
	bools   [2]bool
	null    bool
}

func (s *valueSet) add(v any) {
	switch x := v.(type) {
	case nil:
		s.null = true
	case bool:
		s.bools[b2i(x)] = true
	case string:
		if s.strings == nil {
			s.strings = map[string]struct{}{}
		}
		s.strings[x] = struct{}{}
	case float64:
		if s.numbers == nil {
			s.numbers = map[string]struct{}{}
		}
		d, _ := parseDecimal(formatNumber(x))
		s.numbers[d.key()] = struct{}{}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (s *valueSet) has(v any) bool {
	switch x := v.(type) {
	case nil:
		return s.null
	case bool:
		return s.bools[b2i(x)]
	case string:
		_, ok := s.strings[x]
		return ok
	case json.Number:
		d, ok := parseDecimal(string(x))
		if !ok {
			return false
		}
		_, ok = s.numbers[d.key()]
		return ok
	}
	return false // objects compare with nothing
}

// ordered is $gt, $gte, $lt or $lte against a string or a number.
type ordered struct {
	op  string
	str *string
	num *decimal
}

func (o ordered) test(v any) bool {
	var c int
	switch x := v.(type) {
	case string:
		if o.str == nil {
			return false
		}
		c = compareStrings(x, *o.str)
	case json.Number:
		d, ok := parseDecimal(string(x))
		if o.num == nil || !ok {
			return false
		}
		c = d.cmp(*o.num)
	default:
		return false
	}
	switch o.op {
	case "$gt":
		return c > 0
	case "$gte":
		return c >= 0
	case "$lt":
		return c < 0
	default:
		return c <= 0
	}
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
