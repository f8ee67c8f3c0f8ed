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
	"time"

	"golang.org/x/sync/singleflight"

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
	domain, verdict := precheck(email)
	if verdict != "" {
		return verdict, nil
	}
	return domainStatus(ctx, r, domain)
}

// precheck decides what needs no DNS: the domain to look up, or the verdict.
func precheck(email string) (domain, verdict string) {
	if contact.ValidateEmail(email) != nil {
		return "", StatusInvalid
	}
	domain = strings.ToLower(email[strings.LastIndexByte(email, '@')+1:])
	if Disposable(domain) {
		return "", StatusInvalid
	}
	return domain, ""
}

// domainStatus asks DNS whether domain receives mail.
func domainStatus(ctx context.Context, r Resolver, domain string) (string, error) {
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

// DomainVerdictTTL is how long a domain's DNS verdict is reused. A bulk import is mostly a
// few large domains: one lookup each, not one per contact.
const DomainVerdictTTL = 10 * time.Minute

// domainVerdicts remembers DNS verdicts per domain, and lets concurrent checks of one domain
// share one lookup. Temporary failures are not remembered: the retry asks DNS again.
type domainVerdicts struct {
	now     func() time.Time
	mu      sync.Mutex
	byName  map[string]domainVerdict
	lookups singleflight.Group
}

type domainVerdict struct {
	status  string
	expires time.Time
}

func newDomainVerdicts(now func() time.Time) *domainVerdicts {
	return &domainVerdicts{now: now, byName: map[string]domainVerdict{}}
}

// emailStatus is EmailStatus with the domain's verdict remembered.
func (d *domainVerdicts) emailStatus(ctx context.Context, r Resolver, email string) (string, error) {
	domain, verdict := precheck(email)
	if verdict != "" {
		return verdict, nil
	}
	if status, ok := d.get(domain); ok {
		return status, nil
	}
	status, err, _ := d.lookups.Do(domain, func() (any, error) {
		if status, ok := d.get(domain); ok { // stored by a lookup that ended after our miss
			return status, nil
		}
		status, err := domainStatus(ctx, r, domain)
		if err == nil {
			d.mu.Lock()
			if len(d.byName) > 100_000 { // bounded however many domains pass through
				clear(d.byName)
			}
			d.byName[domain] = domainVerdict{status: status, expires: d.now().Add(DomainVerdictTTL)}
			d.mu.Unlock()
		}
		return status, err
	})
	return status.(string), err
}

// remembered is the email's status when deciding it needs no lookup.
func (d *domainVerdicts) remembered(email string) (string, bool) {
	domain, verdict := precheck(email)
	if verdict != "" {
		return verdict, true
	}
	return d.get(domain)
}

func (d *domainVerdicts) get(domain string) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.byName[domain]
	return v.status, ok && d.now().Before(v.expires)
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
