// Package csvcell keeps CSV cells from running as spreadsheet formulas (CSV injection): a
// contact's name of `=HYPERLINK(...)` or `@SUM(...)` must open as text in Excel, LibreOffice
// and Google Sheets, not as a formula that can leak the sheet or start a program.
//
// Neutralize puts a single quote before a cell that a spreadsheet would read as a formula,
// OWASP's advice; Restore takes it off again, so that an export imported back is unchanged:
// Restore(Neutralize(s)) == s for every s.
package csvcell

import "strings"

// Neutralize returns s as a cell no spreadsheet evaluates: s itself unless it starts with
// =, +, -, @, a tab or a carriage return (or with quotes before one of them), with one more
// quote in front when it does. A plain number or phone number ("+1 (415) 555-0100", "-3")
// stays as it is: with only digits, spaces and ( ) - . after its sign it cannot call a function
// or refer to a cell.
func Neutralize(s string) string {
	if needsQuote(s) {
		return "'" + s
	}
	return s
}

// Restore undoes Neutralize: one leading quote comes off a cell that Neutralize would have
// quoted without it.
func Restore(s string) string {
	if strings.HasPrefix(s, "'") && needsQuote(s[1:]) {
		return s[1:]
	}
	return s
}

// needsQuote: after any quotes, a formula's first character, and not a plain number. (Quotes
// before it count, so that Restore never takes off a quote the value itself began with.)
func needsQuote(s string) bool {
	s = strings.TrimLeft(s, "'")
	return s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) && !isNumber(s)
}

// isNumber: a sign, then a digit, then only digits, spaces, parentheses, hyphens and dots.
func isNumber(s string) bool {
	if s[0] != '+' && s[0] != '-' || len(s) < 2 || s[1] < '0' || s[1] > '9' {
		return false
	}
	for _, r := range s[2:] {
		if !(r >= '0' && r <= '9' || strings.ContainsRune(" ().-", r)) {
			return false
		}
	}
	return true
}
