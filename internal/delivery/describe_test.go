package delivery

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"code.dny.dev/ssrf"
)

// A failed attempt's error, shown to the subscription's owner, names no address of the
// operator's network: not what the host resolved to, not the resolver, not the error's text.
func TestDescribeShowsNoInternalAddress(t *testing.T) {
	t.Parallel()
	post := func(err error) error { return &url.Error{Op: "Post", URL: "https://hooks.example.com/in", Err: err} }
	dial := func(err error) error {
		return post(&net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(netip.MustParseAddrPort("10.20.30.40:443")),
			Err: &os.SyscallError{Syscall: "connect", Err: err}})
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{dial(syscall.ECONNREFUSED), "the receiver refused the connection"},
		{dial(syscall.EHOSTUNREACH), "the receiver's address is unreachable"},
		{dial(syscall.ECONNRESET), "the receiver closed the connection before answering"},
		{post(&net.DNSError{Err: "no such host", Name: "hooks.example.com", Server: "10.0.0.2:53", IsNotFound: true}),
			"the URL's host name does not resolve (no such host)"},
		{post(&net.DNSError{Err: "i/o timeout", Name: "hooks.example.com", Server: "10.0.0.2:53", IsTimeout: true}),
			"looking up the URL's host name timed out"},
		{post(&net.DNSError{Err: "server misbehaving", Name: "hooks.example.com", Server: "10.0.0.2:53"}),
			"looking up the URL's host name failed"},
		{dial(ssrf.ErrProhibitedIP), "refused: the URL resolves to a private, loopback or otherwise prohibited address"},
		{post(context.DeadlineExceeded), "timed out waiting for the receiver"},
		{post(x509.UnknownAuthorityError{}), "TLS: the receiver's certificate is not signed by a trusted authority"},
		{post(x509.HostnameError{Certificate: &x509.Certificate{}, Host: "10.20.30.40"}),
			"TLS: the receiver's certificate is not valid for the URL's host"},
		{post(errors.New("proxyconnect tcp: dial tcp 10.9.9.9:3128: something new")), "could not reach the receiver"},
	} {
		got := describe(tc.err)
		if got != tc.want {
			t.Errorf("describe(%v) = %q, want %q", tc.err, got, tc.want)
		}
		if strings.Contains(got, "10.") {
			t.Errorf("describe(%v) shows an internal address: %q", tc.err, got)
		}
	}
}
