package delivery

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"code.dny.dev/ssrf"
)

// describe words a transport error for the deliveries list, which the subscription's owner
// reads: what went wrong, in words of the owner's own URL, never the error's text. That text
// names what only the operator should see: the address a name resolved to inside the
// operator's network, the resolver's address ("lookup x on 10.0.0.2:53"), the proxy's.
func describe(err error) string {
	var dnsErr *net.DNSError
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	var invalidCert x509.CertificateInvalidError
	var tlsAlert tls.AlertError
	var tlsRecord tls.RecordHeaderError
	var verify *tls.CertificateVerificationError
	switch msg := err.Error(); {
	case errors.Is(err, ssrf.ErrProhibitedIP) || errors.Is(err, ssrf.ErrProhibitedNetwork):
		return "refused: the URL resolves to a private, loopback or otherwise prohibited address"
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return "the URL's host name does not resolve (no such host)"
	case errors.As(err, &dnsErr) && dnsErr.IsTimeout:
		return "looking up the URL's host name timed out"
	case errors.As(err, &dnsErr):
		return "looking up the URL's host name failed"
	case errors.Is(err, context.DeadlineExceeded) || strings.Contains(msg, "Client.Timeout") ||
		strings.Contains(msg, "timeout awaiting") || isTimeout(err):
		return "timed out waiting for the receiver"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "the receiver refused the connection"
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return "the receiver's address is unreachable"
	case errors.As(err, &unknownCA):
		return "TLS: the receiver's certificate is not signed by a trusted authority"
	case errors.As(err, &badHost):
		return "TLS: the receiver's certificate is not valid for the URL's host"
	case errors.As(err, &invalidCert) || errors.As(err, &verify):
		return "TLS: the receiver's certificate is not valid (expired or not yet valid, or not for serving)"
	case errors.As(err, &tlsAlert) || errors.As(err, &tlsRecord) || strings.Contains(msg, "tls: "):
		return "TLS: the handshake with the receiver failed"
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "the receiver closed the connection before answering"
	}
	return "could not reach the receiver"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
