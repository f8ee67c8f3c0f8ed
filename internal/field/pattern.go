package field

import (
	"fmt"
	"regexp"
	"regexp/syntax"

	"github.com/contactd/contactd/internal/apperr"
)

// A pattern's price is what checking one value against it may cost: Go's regexp matches in
// time linear in the program and in the value, so its compiled program's instructions times
// the most characters the field's value may have bounds the steps of any match. The slowest
// steps found take about 6 ns (a program whose threads all stay live: BenchmarkCostliestPattern,
// 2.9 ms for a value at the budget), so a value costs at most a few milliseconds of CPU, and a
// write of every field's value about four times that.
const (
	// MaxPatternSteps is one pattern's budget.
	MaxPatternSteps = 500_000
	// MaxAccountPatternSteps is the budget of the account's live patterns together: a write
	// may check a value of every field.
	MaxAccountPatternSteps = 2_000_000
)

// anchored is p matching whole values only, as the spec says a pattern does. p compiles on
// its own (checked first), so its parentheses are balanced and the wrapping cannot change it.
func anchored(p string) string { return `^(?:` + p + `)$` }

// compilePattern compiles a field's pattern, anchored.
func compilePattern(p string) (*regexp.Regexp, error) { return regexp.Compile(anchored(p)) }

// patternSteps is the price of f's pattern (0 without one, or for an archived field, whose
// values are never written again).
func patternSteps(pattern *string, v Validation) (int, error) {
	if pattern == nil {
		return 0, nil
	}
	re, err := syntax.Parse(anchored(*pattern), syntax.Perl)
	if err != nil {
		return 0, err
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0, err
	}
	longest := MaxTextLength
	if v.MaxLength != nil {
		longest = min(longest, *v.MaxLength)
	}
	return len(prog.Inst) * max(longest, 1), nil
}

// checkPattern says what is wrong with a text field's pattern: not RE2, or over its budget.
func checkPattern(v Validation) []apperr.FieldError {
	if _, err := regexp.Compile(*v.Pattern); err != nil {
		return []apperr.FieldError{apperr.Field("body.validation.pattern", "pattern", "not an RE2 expression: "+reSyntax(err))}
	}
	steps, err := patternSteps(v.Pattern, v)
	if err != nil {
		return []apperr.FieldError{apperr.Field("body.validation.pattern", "pattern", "not an RE2 expression: "+reSyntax(err))}
	}
	if steps > MaxPatternSteps {
		return []apperr.FieldError{apperr.Field("body.validation.pattern", "cost", fmt.Sprintf(
			"the pattern may cost %d steps a value (its program's instructions times the longest value, %d characters): the budget is %d; shorten it or set a lower maxLength",
			steps, longestText(v), MaxPatternSteps))}
	}
	return nil
}

func longestText(v Validation) int {
	if v.MaxLength != nil {
		return min(MaxTextLength, *v.MaxLength)
	}
	return MaxTextLength
}

// checkAccountPatterns refuses a definition of key whose pattern's price (steps) would bring
// the account's live patterns (d, read under the account's definitions lock) past their budget.
func checkAccountPatterns(d *Definitions, key string, steps int) error {
	total := steps
	for _, f := range d.fields {
		if f.Key != key && f.ArchivedAt == nil {
			total += d.steps[f.Key]
		}
	}
	if total > MaxAccountPatternSteps {
		return apperr.Invalid(apperr.Field("body.validation.pattern", "cost", fmt.Sprintf(
			"the account's patterns together would cost %d steps a write (each live pattern's steps a value, added): the budget is %d",
			total, MaxAccountPatternSteps)))
	}
	return nil
}
