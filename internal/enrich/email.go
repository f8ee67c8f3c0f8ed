package enrich

import (
	"bytes"
	"compress/gzip"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"sync"

	"github.com/contactd/contactd/internal/contact"
)

// Resolver is the DNS the email check needs; *net.Resolver is one, tests use FakeResolver.
type Resolver interface {
	LookupMX(ctx context.Context, name string) ([]*net.MX, error)
	LookupHost(ctx context.Context, host string) ([]string, error)
}

// Email statuses decided by enrichment.
const (
	StatusPending = "Pending"
	StatusValid   = "Valid"
	StatusInvalid = "Invalid"
)

// ErrTemporary wraps a DNS failure that says nothing about the domain (timeout, SERVFAIL):
// the status stays Pending and the check is retried.
var ErrTemporary = errors.New("temporary DNS failure")

// EmailStatus decides whether email can receive mail: valid syntax, not a disposable
// domain, and a domain with MX records (a null MX, RFC 7505, refuses mail) or, failing
// those, A/AAAA records (RFC 5321 §5.1 implicit MX).
func EmailStatus(ctx context.Context, r Resolver, email string) (string, error) {
	if contact.ValidateEmail(email) != nil {
		return StatusInvalid, nil
	}
	domain := strings.ToLower(email[strings.LastIndexByte(email, '@')+1:])
	if Disposable(domain) {
		return StatusInvalid, nil
	}
	mx, err := r.LookupMX(ctx, domain)
	switch {
	case err == nil && len(mx) == 1 && (mx[0].Host == "." || mx[0].Host == ""):
		return StatusInvalid, nil
	case err == nil && len(mx) > 0:
		return StatusValid, nil
	case err != nil && !notFound(err):
		return StatusPending, fmt.Errorf("%w: MX %s: %v", ErrTemporary, domain, err)
	}
	addrs, err := r.LookupHost(ctx, domain)
	switch {
	case err == nil && len(addrs) > 0:
		return StatusValid, nil
	case err == nil || notFound(err):
		return StatusInvalid, nil
	}
	return StatusPending, fmt.Errorf("%w: A %s: %v", ErrTemporary, domain, err)
}

// notFound reports an authoritative "no such domain" or "no records of that type".
func notFound(err error) bool {
	var dnsErr *net.DNSError
	return errors.As(err, &dnsErr) && dnsErr.IsNotFound
}

//go:embed disposable.txt.gz
var disposableGz []byte

// disposableList is the sorted list of disposable domains; "*.d" entries cover d's subdomains.
var disposableList = sync.OnceValue(func() []string {
	zr, err := gzip.NewReader(bytes.NewReader(disposableGz))
	if err != nil {
		panic(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		panic(err)
	}
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if line != "" && line[0] != '#' {
			out = append(out, line)
		}
	}
	sort.Strings(out)
	return out
})

// Disposable reports whether domain belongs to a disposable-email service.
func Disposable(domain string) bool {
	domain = strings.TrimSuffix(strings.ToLower(domain), ".")
	list := disposableList()
	has := func(s string) bool {
		i := sort.SearchStrings(list, s)
		return i < len(list) && list[i] == s
	}
	if has(domain) {
		return true
	}
	for d := domain; ; {
		_, parent, ok := strings.Cut(d, ".")
		if !ok {
			return false
		}
		if has("*." + parent) {
			return true
		}
		d = parent
	}
}
