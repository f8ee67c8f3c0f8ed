package delivery

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"

	"code.dny.dev/ssrf"
)

// NewHTTPClient is the client that POSTs to receivers. Its dialer checks every resolved
// address at connect time (so DNS rebinding cannot slip past) and refuses loopback, private,
// link-local, CGNAT, multicast and metadata ranges, except the operator's allowed networks.
// Redirects are not followed: a 3xx is a failed attempt. Every byte it reads from a
// receiver's socket is counted in read (nil: not counted): what a receiver can make contactd
// take in, whatever it sends.
func NewHTTPClient(timeout time.Duration, allowed []netip.Prefix, read *atomic.Int64) *http.Client {
	var v4, v6 []netip.Prefix
	for _, p := range allowed {
		if p.Addr().Is4() {
			v4 = append(v4, p)
		} else {
			v6 = append(v6, p)
		}
	}
	guard := ssrf.New(ssrf.WithAnyPort(), ssrf.WithAllowedV4Prefixes(v4...), ssrf.WithAllowedV6Prefixes(v6...))
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: guard.Safe}
	transport := &http.Transport{
		Proxy: nil, // a proxy would connect on our behalf, past the guard
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil || read == nil {
				return c, err
			}
			return countingConn{Conn: c, read: read}, nil
		},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          512,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
	}
	return &http.Client{
		Transport:     transport,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// countingConn counts the bytes read from its connection.
type countingConn struct {
	net.Conn
	read *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// ResponseBytesRead is how many bytes the workers read from receivers' sockets so far.
func (s *Service) ResponseBytesRead() int64 { return s.bytesRead.Load() }
