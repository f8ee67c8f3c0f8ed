package httpapi

import (
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/labstack/echo/v4"
)

// X-Forwarded-For is believed only from the configured proxies: a peer on a private, loopback
// or link-local network that is not one of them (echo would trust those by default) is the
// client itself, whatever it claims.
func TestClientAddressTrustsOnlyTheConfiguredProxies(t *testing.T) {
	proxy := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	for _, tc := range []struct {
		peer, xff string
		trusted   []netip.Prefix
		want      string
	}{
		{"127.0.0.1:5000", "203.0.113.9", proxy, "203.0.113.9"},               // the proxy names the client
		{"127.0.0.1:5000", "198.51.100.1, 203.0.113.9", proxy, "203.0.113.9"}, // the last hop the proxy saw
		{"10.9.8.7:5000", "203.0.113.9", proxy, "10.9.8.7"},                   // private network, not the proxy
		{"192.168.1.2:5000", "203.0.113.9", proxy, "192.168.1.2"},
		{"127.0.0.2:5000", "203.0.113.9", proxy, "127.0.0.2"},     // loopback, but not the proxy
		{"169.254.1.1:5000", "203.0.113.9", proxy, "169.254.1.1"}, // link-local
		{"[fd00::1]:5000", "203.0.113.9", proxy, "fd00::1"},       // unique local IPv6
		{"127.0.0.1:5000", "203.0.113.9", nil, "127.0.0.1"},       // no proxies configured
		{"10.9.8.7:5000", "203.0.113.9", nil, "10.9.8.7"},
		// a loopback client is believed only from a proxy on this machine
		{"127.0.0.1:5000", "127.0.0.1", proxy, "127.0.0.1"},
		{"10.0.0.5:5000", "127.0.0.1", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, "10.0.0.5"},
		{"10.0.0.5:5000", "198.51.100.1, ::1", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, "10.0.0.5"},
	} {
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = tc.peer
		req.Header.Set(echo.HeaderXForwardedFor, tc.xff)
		if got := ipExtractor(tc.trusted)(req); got != tc.want {
			t.Errorf("peer %s, X-Forwarded-For %q, trusted %v: client %s, want %s", tc.peer, tc.xff, tc.trusted, got, tc.want)
		}
	}
}
