package segment

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/contactd/contactd/internal/field"
)

// Set-based matching. A membership condition (eq, in, contains and their negations) on text
// keeps its operands folded once into a set (Compile), and a contact's values of an attribute
// are folded once per write (Subject.Indexed), so a condition costs a lookup per value of the
// smaller side, not a case-folding comparison per value and operand: 100 segments of in over
// 500 tags were 12.5 million comparisons a write.

// fold is s with each rune replaced by the smallest rune of its simple case-folding orbit: two
// strings are equal under strings.EqualFold exactly when their folds are equal.
func fold(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			var b strings.Builder
			b.Grow(len(s))
			for _, r := range s {
				b.WriteRune(foldRune(r))
			}
			return b.String()
		}
	}
	return strings.ToUpper(s) // an ASCII letter's orbit's smallest is its capital (K before U+212A)
}

func foldRune(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

// subjectIndex holds a subject's values folded, by attribute, as conditions first ask for them.
type subjectIndex struct {
	folded map[string]map[string]struct{}
}

// Indexed is s keeping its folded values for every filter evaluated on it (and its copies): a
// write evaluates the account's segments on one subject. Not for concurrent use.
func (s Subject) Indexed() Subject {
	s.index = &subjectIndex{folded: map[string]map[string]struct{}{}}
	return s
}

// foldedValues is the set of s's text values of attr, folded.
func (s Subject) foldedValues(attr string) map[string]struct{} {
	if s.index != nil {
		if set, ok := s.index.folded[attr]; ok {
			return set
		}
	}
	values := Condition{Attribute: attr, Operator: "in"}.values(s)
	set := make(map[string]struct{}, len(values))
	for _, v := range values {
		if str, ok := v.(string); ok {
			set[fold(str)] = struct{}{}
		}
	}
	if s.index != nil {
		s.index.folded[attr] = set
	}
	return set
}

// member is whether one of the attribute's values equals one of c's operands.
func (c Condition) member(s Subject) bool {
	if len(c.set) > 0 {
		values := s.foldedValues(c.Attribute)
		small, large := values, c.set
		if len(c.set) < len(values) {
			small, large = c.set, values
		}
		for v := range small {
			if _, ok := large[v]; ok {
				return true
			}
		}
	}
	if len(c.others) > 0 {
		for _, v := range c.values(s) {
			for _, o := range c.others {
				if equal(v, o) {
					return true
				}
			}
		}
	}
	return false
}

// membership operators compare by equality with a set of operands.
var membership = map[string]bool{"eq": true, "in": true, "contains": true, "neq": true, "notIn": true, "notContains": true}

// What a filter may cost a write, in lookups (Price), and the account's budget for its dynamic
// segments together: a write of a contact evaluates every one of them.
const (
	// MaxAccountPrice is the budget of an account's dynamic segments on one write: about 3 ms
	// of CPU for the costliest segments within it (BenchmarkSegmentsOnAWrite: 2.7 ms, against
	// 20 ms comparing every value with every operand).
	MaxAccountPrice = 100_000

	// the most values a contact holds of a multi-valued attribute (contact.MaxTagsPerContact,
	// contact.MaxActiveProperties; a multiEnum's field.MaxOptions)
	maxTags       = 500
	maxProperties = 50
)

// Price is the most lookups evaluating f on one contact may take: a membership condition the
// fewer of its operands and of the values its attribute may hold, another condition the
// values its attribute may hold (exists one), and, once a filter, folding each multi-valued
// attribute's values. defs says which custom fields hold several values.
func (f Filter) Price(defs *field.Definitions) int {
	price := 0
	folded := map[string]bool{}
	for _, g := range f.Groups {
		for _, c := range g.Conditions {
			most := mostValues(c.Attribute, defs)
			switch {
			case membership[c.Operator]:
				price += min(max(len(c.Values), 1), most)
			case c.Operator == "exists" || c.Operator == "notExists":
				price++
			default:
				price += most
			}
			if most > 1 && !folded[c.Attribute] {
				folded[c.Attribute] = true
				price += most
			}
		}
	}
	return price
}

// mostValues is the most values a contact may hold of attr.
func mostValues(attr string, defs *field.Definitions) int {
	switch {
	case attr == "tags":
		return maxTags
	case strings.HasPrefix(attr, "address."):
		return maxProperties
	}
	if key, ok := strings.CutPrefix(attr, customPrefix); ok && defs != nil {
		if f, ok := defs.Field(key); ok && f.Type == field.MultiEnum {
			return field.MaxOptions
		}
	}
	return 1
}
