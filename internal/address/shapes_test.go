package address

import (
	"regexp"
	"testing"
)

// The expressions the word-shape functions replace.
var (
	zipRe     = regexp.MustCompile(`^(\d{5})(?:-?(\d{4}))?$`)
	houseRe   = regexp.MustCompile(`^\d+[A-Za-z]?(?:-\d+[A-Za-z]?)?$`)
	numberRe  = regexp.MustCompile(`^\d+[A-Za-z]?$`)
	fractRe   = regexp.MustCompile(`^\d/\d$`)
	ordinalRe = regexp.MustCompile(`(?i)^\d+(st|nd|rd|th)$`)
)

var shapeWords = []string{"", "1", "12", "62704", "62704-1234", "627041234", "62704-123", "6270-41234", "62704 1234",
	"221B", "221b", "12-14", "12A-14B", "12-", "-12", "1-2-3", "A12", "12AB", "1/2", "11/2", "1/", "2nd", "41ST",
	"3Rd", "11th", "1ſt", "1st.", "st", "1s", "١٢", "12\u212a", "Box", "bOx7", "٣rd", "0", "st.", "Street,", "aVe", "ſt", "NORTHWEST", "apt", "aaaaaaaaaaaaaaaaaaaaaaaaa"}

func TestWordShapesMatchTheirExpressions(t *testing.T) {
	t.Parallel()
	for _, w := range shapeWords {
		checkShapes(t, w)
	}
}

func FuzzWordShapes(f *testing.F) {
	for _, w := range shapeWords {
		f.Add(w)
	}
	f.Fuzz(checkShapes)
}

func checkShapes(t *testing.T, w string) {
	zip5, plus4, ok := splitZip(w)
	if m := zipRe.FindStringSubmatch(w); (m != nil) != ok || m != nil && (m[1] != zip5 || m[2] != plus4) {
		t.Errorf("splitZip(%q) = %q %q %v, the expression says %q", w, zip5, plus4, ok, m)
	}
	for _, c := range []struct {
		name string
		got  bool
		re   *regexp.Regexp
	}{
		{"isHouseNumber", isHouseNumber(w), houseRe}, {"isNumber", isNumber(w), numberRe},
		{"isFraction", isFraction(w), fractRe}, {"isOrdinal", isOrdinal(w), ordinalRe},
	} {
		if want := c.re.MatchString(w); c.got != want {
			t.Errorf("%s(%q) = %v, the expression says %v", c.name, w, c.got, want)
		}
	}
	if lookup(suffixes, w) != suffixes[upperBare(w)] || lookup(directionals, w) != directionals[upperBare(w)] ||
		lookup(unitDesignators, w) != unitDesignators[upperBare(w)] {
		t.Errorf("lookup(%q) differs from the map at upperBare", w)
	}
	if poBoxRe.MatchString(w) && !hasBox([]string{w}) {
		t.Errorf("hasBox(%q) is false for a PO box", w)
	}
}
