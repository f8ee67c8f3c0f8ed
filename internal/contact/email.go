package contact

import (
	"errors"
	"net/mail"
	"strings"
)

// Email limits of the seed spec.
const (
	MaxEmailLen      = 254
	MaxEmailLocalLen = 64
)

// ValidateEmail checks the email rule of the API: a bare RFC 5322 address (no display name,
// no comments), at most 254 characters, at most 64 before the @, and a domain with a dot.
// The message of the error is client-facing.
func ValidateEmail(s string) error {
	if len(s) > MaxEmailLen {
		return errors.New("must be at most 254 characters")
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s {
		return errors.New("not a valid email address")
	}
	at := strings.LastIndexByte(s, '@')
	if at > MaxEmailLocalLen {
		return errors.New("the part before @ must be at most 64 characters")
	}
	domain := s[at+1:]
	if !strings.Contains(domain, ".") || strings.HasSuffix(domain, ".") {
		return errors.New("not a valid email address: the domain needs a dot")
	}
	return nil
}
