package field

import (
	"strings"
	"testing"
)

// costliest is a pattern within MaxPatternSteps at the longest text value whose every match
// keeps most of its program's threads alive: the slowest steps found for Go's regexp.
const costliest = `(a*a*a*a*a*a*a*a*a*a*){1,20}b`

func TestAPatternIsPricedByItsProgramAndTheLongestValue(t *testing.T) {
	steps, err := patternSteps(ptr(costliest), Validation{})
	if err != nil || steps > MaxPatternSteps || steps < MaxPatternSteps*9/10 {
		t.Fatalf("the costliest pattern costs %d steps (%v): want just within %d", steps, err, MaxPatternSteps)
	}
	// a pattern of under 500 characters that compiles to a program of 7,000 instructions
	big := `(\w+\s?){1,1000}x`
	if errs := checkPattern(Validation{Pattern: &big}); len(errs) != 1 || errs[0].Reason != "cost" {
		t.Errorf("%s at values of 1,000 characters: %v, want refused for its cost", big, errs)
	}
	short := 60 // 7,004 instructions x 60 characters
	if errs := checkPattern(Validation{Pattern: &big, MaxLength: &short}); len(errs) != 0 {
		t.Errorf("%s at values of at most 60 characters: %v, want accepted", big, errs)
	}
	if errs := checkPattern(Validation{Pattern: ptr("a(b")}); len(errs) != 1 || errs[0].Reason != "pattern" {
		t.Errorf("a(b: %v, want not RE2", errs)
	}
}

func TestAPatternMatchesTheWholeValue(t *testing.T) {
	d, err := NewDefinitions(Field{Key: "code", Type: Text, Validation: Validation{Pattern: ptr(`[a-z]+|[0-9]{3}`)}})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := d.Field("code")
	for value, want := range map[string]bool{"abc": true, "123": true, "abc1": false, "1234": false, "x123": false, " abc": false} {
		if got := d.matches(f, value); got != want {
			t.Errorf("%q matches [a-z]+|[0-9]{3}: %v, want %v", value, got, want)
		}
	}
}

// BenchmarkCostliestPattern: the CPU of one value's check at the pattern budget, in ns a step
// (docs/api.md's figure for a value and for a write).
func BenchmarkCostliestPattern(b *testing.B) {
	re, err := compilePattern(costliest)
	if err != nil {
		b.Fatal(err)
	}
	steps, _ := patternSteps(ptr(costliest), Validation{})
	value := strings.Repeat("a", MaxTextLength)
	b.ResetTimer()
	for b.Loop() {
		re.MatchString(value)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(steps), "ns/step")
}

func ptr(s string) *string { return &s }
