package event

import (
	"strconv"
	"strings"
)

// decimal is a JSON number as PostgreSQL's numeric holds it, exactly: 0.digits x 10^exp, with
// neither leading nor trailing zeros in digits ("" is zero). Comparing two needs no
// arithmetic, so a number of any size costs its length, never a big allocation.
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

// maxExp saturates an exponent: numbers past it compare as their sign and size alone.
const maxExp = 1 << 40

// parseDecimal reads a JSON number (as encoding/json and strconv.FormatFloat write them).
func parseDecimal(s string) (decimal, bool) {
	var d decimal
	if strings.HasPrefix(s, "-") {
		d.neg, s = true, s[1:]
	}
	mant, e, hasExp := s, "", false
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, e, hasExp = s[:i], s[i+1:], true
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart == "" || !allDigits(intPart) || !allDigits(frac) {
		return decimal{}, false
	}
	var exp int64
	if hasExp {
		neg := false
		if e != "" && (e[0] == '+' || e[0] == '-') {
			neg, e = e[0] == '-', e[1:]
		}
		if e == "" || !allDigits(e) {
			return decimal{}, false
		}
		for _, c := range e {
			if exp = exp*10 + int64(c-'0'); exp > maxExp {
				exp = maxExp
			}
		}
		if neg {
			exp = -exp
		}
	}
	all := intPart + frac
	point := int64(len(intPart))
	trimmed := strings.TrimLeft(all, "0")
	point -= int64(len(all) - len(trimmed))
	d.digits = strings.TrimRight(trimmed, "0")
	if d.digits == "" {
		return decimal{}, true // zero, whatever its sign
	}
	d.exp = point + exp
	return d, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// cmp orders two decimals: -1, 0 or 1.
func (a decimal) cmp(b decimal) int {
	switch {
	case a.digits == "" && b.digits == "":
		return 0
	case a.digits == "":
		return b.sign() * -1
	case b.digits == "":
		return a.sign()
	case a.neg != b.neg:
		return a.sign()
	}
	c := 0
	switch {
	case a.exp != b.exp:
		c = 1
		if a.exp < b.exp {
			c = -1
		}
	default:
		c = strings.Compare(a.digits, b.digits) // trailing zeros trimmed: a prefix is smaller
	}
	if a.neg {
		return -c
	}
	return c
}

func (a decimal) sign() int {
	if a.neg {
		return -1
	}
	return 1
}

// key is the same string for every spelling of one number.
func (a decimal) key() string {
	if a.digits == "" {
		return "0"
	}
	var b strings.Builder
	if a.neg {
		b.WriteByte('-')
	}
	b.WriteString(a.digits)
	b.WriteByte('e')
	b.WriteString(strconv.FormatInt(a.exp, 10))
	return b.String()
}
