// Package address turns a free-text US address into the structured address the API returns,
// standardised the USPS way (abbreviated suffixes and directionals, two-letter state), with
// the county from a bundled ZIP table. It is pure: no I/O, so it is cheap on the request path
// and easy to fuzz.
package address

import (
	"errors"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Address is a structured US address. A part that is not known is an empty string.
type Address struct {
	AptOrUnitNumber string
	StreetAddress   string
	City            string
	County          string
	State           string
	Zip             string
}

// Version names the parser's behaviour, tables included: a contact records the version that
// parsed its addresses, and enrichment re-parses only those parsed by another. It must change
// whenever Parse can return something else for some input (TestVersionNamesTheParser).
const Version = 1

// ErrUnparseable is returned for text that is not a recognisable US address.
var ErrUnparseable = errors.New("not a recognisable US address")

// Normalized is the address's identity for duplicate detection: case and spelling variants
// of one address ("Street" vs "St") normalise to the same string.
func (a Address) Normalized() string {
	zip5, _, _ := strings.Cut(a.Zip, "-")
	return strings.ToLower(strings.Join([]string{a.StreetAddress, a.AptOrUnitNumber, a.City, a.State, zip5}, "|"))
}

var (
	// poBoxRe is tried only on street lines that contain "box" (hasBox): most have none.
	poBoxRe   = regexp.MustCompile(`(?i)^(?:p\.?\s*o\.?|post\s+office)\s*box\s*#?\s*([a-z0-9-]+)$`)
	countries = map[string]bool{"USA": true, "US": true, "U.S.A.": true, "U.S.": true,
		"UNITED STATES": true, "UNITED STATES OF AMERICA": true}
)

// The word shapes below were regular expressions, a fifth of a parse's time; each is checked
// against the expression it replaces (TestWordShapesMatchTheirExpressions, FuzzWordShapes).

// splitZip splits a ZIP or ZIP+4 (`^(\d{5})(?:-?(\d{4}))?$`) into its parts.
func splitZip(w string) (zip5, plus4 string, ok bool) {
	switch {
	case len(w) == 5 && allDigits(w):
		return w, "", true
	case len(w) == 9 && allDigits(w):
		return w[:5], w[5:], true
	case len(w) == 10 && w[5] == '-' && allDigits(w[:5]) && allDigits(w[6:]):
		return w[:5], w[6:], true
	}
	return "", "", false
}

// isHouseNumber: `^\d+[A-Za-z]?(?:-\d+[A-Za-z]?)?$` ("221B", "12-14").
func isHouseNumber(w string) bool {
	n := numberLen(w)
	if n == 0 || n == len(w) {
		return n > 0
	}
	m := numberLen(w[n+1:])
	return w[n] == '-' && m > 0 && n+1+m == len(w)
}

// isNumber: `^\d+[A-Za-z]?$`.
func isNumber(w string) bool { return len(w) > 0 && numberLen(w) == len(w) }

// isFraction: `^\d/\d$` ("1/2").
func isFraction(w string) bool { return len(w) == 3 && isDigit(w[0]) && w[1] == '/' && isDigit(w[2]) }

// isOrdinal: `(?i)^\d+(st|nd|rd|th)$` ("2nd", "41ST"); EqualFold folds as (?i) does.
func isOrdinal(w string) bool {
	i := 0
	for i < len(w) && isDigit(w[i]) {
		i++
	}
	if i == 0 {
		return false
	}
	rest := w[i:]
	return strings.EqualFold(rest, "st") || strings.EqualFold(rest, "nd") ||
		strings.EqualFold(rest, "rd") || strings.EqualFold(rest, "th")
}

// numberLen is the length of the leading `\d+[A-Za-z]?` of w, 0 when it has none.
func numberLen(w string) int {
	i := 0
	for i < len(w) && isDigit(w[i]) {
		i++
	}
	if i > 0 && i < len(w) && ('a' <= w[i] && w[i] <= 'z' || 'A' <= w[i] && w[i] <= 'Z') {
		i++
	}
	return i
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// hasBox tells whether some word contains "box" in any case, as every PO box line does.
func hasBox(words []string) bool {
	for _, w := range words {
		for i := 0; i+3 <= len(w); i++ {
			if w[i]|0x20 == 'b' && w[i+1]|0x20 == 'o' && w[i+2]|0x20 == 'x' {
				return true
			}
		}
	}
	return false
}

// Parse parses one address. It needs a street line (a house number and street name, or a PO
// box), a state, and a city or a ZIP code; anything less is ErrUnparseable.
func Parse(raw string) (Address, error) {
	parts := splitParts(raw)
	if len(parts) > 0 && countries[upper(parts[len(parts)-1])] {
		parts = parts[:len(parts)-1]
	}
	if len(parts) == 0 {
		return Address{}, ErrUnparseable
	}
	var a Address
	last := strings.Fields(parts[len(parts)-1])
	last, a.Zip = takeZip(last)
	last, a.State = takeState(last)
	if a.State == "" {
		return Address{}, ErrUnparseable
	}
	parts = parts[:len(parts)-1]
	if len(last) > 0 {
		parts = append(parts, strings.Join(last, " "))
	}
	if len(parts) == 0 {
		return Address{}, ErrUnparseable
	}
	var streetWords []string
	if len(parts) >= 2 {
		a.City = titleWords(strings.Fields(parts[len(parts)-1]))
		streetWords = strings.Fields(strings.Join(parts[:len(parts)-1], " "))
	} else {
		words := strings.Fields(parts[0])
		end := streetEnd(words)
		streetWords, a.City = words[:end], titleWords(words[end:])
	}
	street, unit, ok := parseStreet(streetWords)
	if !ok || (a.City == "" && a.Zip == "") {
		return Address{}, ErrUnparseable
	}
	a.StreetAddress, a.AptOrUnitNumber = street, unit
	a.County = County(a.Zip, a.State)
	return a, nil
}

// splitParts splits on commas and line breaks, trimming and dropping empty parts.
func splitParts(raw string) []string {
	raw = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == ';':
			return ','
		case unicode.IsSpace(r):
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, raw)
	var parts []string
	for _, p := range strings.Split(raw, ",") {
		p = strings.Join(strings.Fields(strings.Trim(p, " .")), " ")
		if p != "" {
			parts = append(parts, p)
		}
	}
	return parts
}

func takeZip(words []string) ([]string, string) {
	if len(words) == 0 {
		return words, ""
	}
	zip5, plus4, ok := splitZip(words[len(words)-1])
	if !ok {
		return words, ""
	}
	if plus4 != "" {
		return words[:len(words)-1], zip5 + "-" + plus4
	}
	return words[:len(words)-1], zip5
}

func takeState(words []string) ([]string, string) {
	for n := min(maxStateWords, len(words)); n >= 1; n-- {
		name := upper(strings.Join(words[len(words)-n:], " "))
		if code, ok := states[strings.TrimSuffix(name, ".")]; ok {
			return words[:len(words)-n], code
		}
	}
	return words, ""
}

// streetEnd finds where the street line ends in an address written without commas
// ("123 Main St Apt 4 Springfield"): after the first street suffix that follows the street
// name, its post-directional and its unit; or after a PO box or numbered highway.
func streetEnd(words []string) int {
	for i := 1; i < len(words); i++ {
		w := upperBare(words[i])
		switch {
		case (w == "BOX") && i+1 < len(words):
			return i + 2
		case (w == "HWY" || w == "HIGHWAY" || w == "ROUTE" || w == "RTE") && i+1 < len(words) &&
			isNumber(words[i+1]):
			return skipUnit(words, i+2)
		case i >= 2 && suffixes[w] != "":
			end := i + 1
			if end < len(words)-1 && lookup(directionals, words[end]) != "" {
				end++
			}
			return skipUnit(words, end)
		}
	}
	return len(words)
}

func skipUnit(words []string, i int) int {
	if i >= len(words) {
		return i
	}
	w := upperBare(words[i])
	if strings.HasPrefix(words[i], "#") && len(words[i]) > 1 {
		return i + 1
	}
	if unitDesignators[w] && i+1 < len(words) {
		return i + 2
	}
	return i
}

// parseStreet standardises the delivery line and separates its unit.
func parseStreet(words []string) (street, unit string, ok bool) {
	if len(words) == 0 {
		return "", "", false
	}
	if hasBox(words) {
		if m := poBoxRe.FindStringSubmatch(strings.Join(words, " ")); m != nil {
			return "PO Box " + strings.ToUpper(m[1]), "", true
		}
	}
	if !isHouseNumber(words[0]) {
		return "", "", false
	}
	words, unit = takeUnit(words)
	out := []string{strings.ToUpper(words[0])}
	rest := words[1:]
	if len(rest) > 0 && isFraction(rest[0]) {
		out, rest = append(out, rest[0]), rest[1:]
	}
	if len(rest) == 0 {
		return "", "", false
	}
	return strings.Join(append(out, standardiseName(rest)...), " "), unit, true
}

// takeUnit removes a trailing secondary unit ("Apt 4", "Suite 200", "#4B").
func takeUnit(words []string) ([]string, string) {
	for i := 2; i < len(words); i++ {
		w := words[i]
		if strings.HasPrefix(w, "#") && len(w) > 1 && i == len(words)-1 {
			return words[:i], strings.ToUpper(strings.TrimLeft(w, "#"))
		}
		if lookup(unitDesignators, w) && i == len(words)-2 {
			return words[:i], strings.ToUpper(strings.Trim(words[i+1], "#.,"))
		}
	}
	return words, ""
}

// standardiseName abbreviates the directionals and the suffix of a street name and
// title-cases words written all in one case.
func standardiseName(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = titleWord(w)
	}
	n := len(words)
	if n >= 3 && lookup(directionals, words[n-1]) != "" && lookup(suffixes, words[n-2]) != "" {
		out[n-1] = lookup(directionals, words[n-1])
		n--
	}
	if n >= 2 {
		if s := lookup(suffixes, words[n-1]); s != "" {
			out[n-1] = s
		}
	}
	// a leading direction is a pre-directional only when a street name follows it.
	if d := lookup(directionals, words[0]); d != "" && n >= 2 && !(n == 2 && lookup(suffixes, words[1]) != "") {
		out[0] = d
	}
	return out
}

func titleWords(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = titleWord(w)
	}
	return strings.Join(out, " ")
}

// titleWord title-cases a word written all upper or all lower ("MAIN" -> "Main"), keeps
// mixed-case words as written ("McDonald"), and lower-cases ordinals ("1ST" -> "1st").
func titleWord(w string) string {
	if isOrdinal(w) {
		return strings.ToLower(w)
	}
	if w != strings.ToUpper(w) && w != strings.ToLower(w) {
		return w
	}
	r := []rune(strings.ToLower(w))
	for i := range r {
		if i == 0 || r[i-1] == '-' || r[i-1] == '\'' && i == 2 {
			r[i] = unicode.ToUpper(r[i])
		}
	}
	return string(r)
}

func upper(s string) string { return strings.ToUpper(strings.Join(strings.Fields(s), " ")) }

func upperBare(s string) string { return strings.ToUpper(strings.Trim(s, ".,")) }

// lookup is m[upperBare(w)] without building the upper-case copy for short ASCII words.
func lookup[V any](m map[string]V, w string) V {
	w = strings.Trim(w, ".,")
	var buf [16]byte
	if len(w) > len(buf) {
		return m[strings.ToUpper(w)]
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= utf8.RuneSelf { // upper-casing beyond ASCII can change the length or the letters
			return m[strings.ToUpper(w)]
		}
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		buf[i] = c
	}
	return m[string(buf[:len(w)])]
}
