package segment

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
)

// fold(a) == fold(b) exactly when strings.EqualFold(a, b): the sets look up what the
// pairwise comparisons compared, for every rune whose case folds (every pair of runes of an
// orbit, and each with a rune of no orbit of its own), and for strings of them.
func TestFoldAgreesWithEqualFold(t *testing.T) {
	var runes []rune
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if unicode.SimpleFold(r) != r {
			runes = append(runes, r)
		}
	}
	for _, a := range runes {
		for f := unicode.SimpleFold(a); f != a; f = unicode.SimpleFold(f) {
			if fold(string(a)) != fold(string(f)) {
				t.Fatalf("%q and %q fold apart: %q, %q", a, f, fold(string(a)), fold(string(f)))
			}
		}
		if b := a + 1; !strings.EqualFold(string(a), string(b)) && fold(string(a)) == fold(string(b)) {
			t.Fatalf("%q and %q are not EqualFold, and fold alike", a, b)
		}
	}
	for _, c := range [][2]string{{"Kelvin", "\u212aELVIN"}, {"straße", "STRASSE"}, {"ſtop", "STOP"}, {"σας", "ΣΑΣ"},
		{"İstanbul", "istanbul"}, {"ǅ", "ǆ"}, {"vip", "VIP"}, {"vip ", "vip"}, {"\xff", "\xfe"}} {
		if got, want := fold(c[0]) == fold(c[1]), strings.EqualFold(c[0], c[1]); got != want {
			t.Errorf("%q, %q: folds alike %v, EqualFold %v", c[0], c[1], got, want)
		}
	}
}

// BenchmarkSegmentsOnAWrite: a write of a contact of 500 tags and 50 properties evaluated on
// the costliest dynamic segments an account may have (TestSegmentsArePricedTogether's): 76
// segments of 25 conditions, each an in of 100 cities, priced 98,800 lookups in all, just
// within MaxAccountPrice; in each group every condition holds but the last, so every condition
// is evaluated. The operands folded into sets and the contact's values folded once (indexed),
// against every value compared with every operand (pairwise, as before the sets).
func BenchmarkSegmentsOnAWrite(b *testing.B) {
	s := Subject{}
	for i := range 500 {
		s.Tags = append(s.Tags, fmt.Sprintf("tag %d", i))
	}
	for i := range maxProperties {
		s.Addresses = append(s.Addresses, map[string]string{"city": fmt.Sprintf("City %d", i), "state": "IL"})
	}
	var filters []Filter
	price := 0
	for i := 0; price+1300 <= MaxAccountPrice; i++ {
		var groups []Group
		for g := range MaxGroups {
			var conds []Condition
			for c := range MaxConditions / MaxGroups {
				values := make([]any, MaxValues)
				for v := range values {
					values[v] = fmt.Sprintf("place %d %d %d %d", i, g, c, v)
				}
				if c < MaxConditions/MaxGroups-1 {
					values[MaxValues-1] = "CITY 7" // holds, at the last value
				}
				conds = append(conds, cond("address.city", "in", nil, values...))
			}
			groups = append(groups, Group{Conditions: conds})
		}
		f := Filter{Groups: groups}
		price += f.Price(nil)
		filters = append(filters, f.Compile())
	}
	run := func(b *testing.B, filters []Filter, subject func() Subject) {
		for b.Loop() {
			s := subject()
			for _, f := range filters {
				if f.Matches(s) {
					b.Fatal("matched")
				}
			}
		}
		b.ReportMetric(float64(price), "lookups-priced")
	}
	b.Run("indexed", func(b *testing.B) { run(b, filters, s.Indexed) })
	pairwise := make([]Filter, len(filters))
	for i, f := range filters {
		pairwise[i] = Filter{Groups: make([]Group, len(f.Groups))}
		for g, grp := range f.Groups {
			for _, c := range grp.Conditions {
				c.set, c.others = nil, nil
				pairwise[i].Groups[g].Conditions = append(pairwise[i].Groups[g].Conditions, c)
			}
		}
	}
	b.Run("pairwise", func(b *testing.B) { run(b, pairwise, func() Subject { return s }) })
}
