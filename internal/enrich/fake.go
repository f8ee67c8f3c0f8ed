package enrich

import (
	"context"
	"net"
	"strings"
	"sync"
)

// FakeResolver is an in-memory DNS for tests: domains with MX hosts, with addresses, and
// domains that fail temporarily a number of times before answering.
type FakeResolver struct {
	mu       sync.Mutex
	mx       map[string][]string
	hosts    map[string][]string
	failures map[string]int
	calls    map[string]int
}

// NewFakeResolver returns a resolver that knows no domain.
func NewFakeResolver() *FakeResolver {
	return &FakeResolver{mx: map[string][]string{}, hosts: map[string][]string{},
		failures: map[string]int{}, calls: map[string]int{}}
}

// SetMX gives domain MX records ("." is a null MX).
func (f *FakeResolver) SetMX(domain string, hosts ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mx[domain] = hosts
}

// SetHost gives domain addresses (and no MX).
func (f *FakeResolver) SetHost(domain string, addrs ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hosts[domain] = addrs
}

// FailTimes makes the next n lookups of domain time out.
func (f *FakeResolver) FailTimes(domain string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures[domain] = n
}

// Calls is how many lookups of domain were made.
func (f *FakeResolver) Calls(domain string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[domain]
}

func (f *FakeResolver) lookup(name string, table map[string][]string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name = strings.TrimSuffix(name, ".")
	f.calls[name]++
	if f.failures[name] > 0 {
		f.failures[name]--
		return nil, &net.DNSError{Err: "i/o timeout", Name: name, IsTimeout: true, IsTemporary: true}
	}
	if v, ok := table[name]; ok {
		return v, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
}

// LookupMX implements Resolver.
func (f *FakeResolver) LookupMX(_ context.Context, name string) ([]*net.MX, error) {
	hosts, err := f.lookup(name, f.mx)
	out := make([]*net.MX, len(hosts))
	for i, h := range hosts {
		out[i] = &net.MX{Host: h, Pref: uint16(10 * (i + 1))}
	}
	return out, err
}

// LookupHost implements Resolver.
func (f *FakeResolver) LookupHost(_ context.Context, host string) ([]string, error) {
	return f.lookup(host, f.hosts)
}
