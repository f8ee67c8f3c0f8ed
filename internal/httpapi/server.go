// Package httpapi is the HTTP face of contactd: it implements the generated strict server
// interface over the domain services, validates every request against the embedded spec, and
// turns every error into the documented body in one place.
package httpapi

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	contactd "github.com/contactd/contactd"
	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/apicore"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/auth"
	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/contact/search"
	"github.com/contactd/contactd/internal/delivery"
	"github.com/contactd/contactd/internal/docs"
	"github.com/contactd/contactd/internal/erasure"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/field"
	"github.com/contactd/contactd/internal/idempotency"
	"github.com/contactd/contactd/internal/platform/metrics"
	"github.com/contactd/contactd/internal/ratelimit"
	"github.com/contactd/contactd/internal/segment"
	"github.com/contactd/contactd/internal/subscription"
)

// Config holds the HTTP layer's settings.
type Config struct {
	MaxBodyBytes int64
	// MaxBatchBodyBytes is the body limit of the batch operations (x-contactd-batch).
	MaxBatchBodyBytes int64
	// TrustedProxies are the proxies whose X-Forwarded-For names the client; none: the
	// client is the TCP peer.
	TrustedProxies []netip.Prefix
	// RateLimits are per API key (10 s) and per account (day); zero values disable them.
	RateLimits ratelimit.Limits
	// MetricsToken lets a scraper from anywhere read /metrics (Authorization: Bearer); without
	// it only loopback clients may.
	MetricsToken string
	// ExportStall ends an export whose client has taken none of its bytes for this long
	// (0: 30 s); an export that keeps moving is not bounded in time.
	ExportStall time.Duration
	// RequestTimeout ends the work of a request that runs longer (0: none): its statements
	// are cancelled, its Go work stops at its next check, and it answers 503. The export's
	// stream is not bounded by it (ExportStall is).
	RequestTimeout time.Duration
	// BatchesPerAccount bounds the batch operations' requests one account runs at once
	// (0: no bound); more answer 429.
	BatchesPerAccount int
}

// Deps are the services the API calls.
type Deps struct {
	Log      *slog.Logger
	Auth     *auth.Service
	Contacts *contact.Service
	// Search lists, searches and exports contacts, and reports duplicates.
	Search *search.Service
	// Erasures forgets people (POST /contact/{id}/erase).
	Erasures *erasure.Service
	Webhooks *subscription.Service
	// Fields defines the accounts' custom fields.
	Fields *field.Service
	// Segments saves the accounts' segments.
	Segments *segment.Service
	// Events reads the events feed.
	Events *event.Feed
	// Limiter decides the rate limits; nil: this process's own, from Config.RateLimits.
	Limiter ratelimit.Allower
	// Extra registers more routes (the console) on the server, outside the API. It gets the
	// API's guards to put on them: the body limit, and the key's rate limits and account's
	// day (for requests whose context carries a principal).
	Extra func(e *echo.Echo, bodyLimit, rateLimit echo.MiddlewareFunc)
	// Idempotency replays the responses of writes sent with an Idempotency-Key; nil: the
	// header is ignored.
	Idempotency *idempotency.Service
	// Deliveries answers the delivery visibility endpoints.
	Deliveries *delivery.Service
	// Ready reports whether the service can take traffic (database up, migrations current).
	Ready func(ctx context.Context) error
	// Metrics records requests and serves /metrics; nil disables both.
	Metrics *metrics.Metrics
}

// Server implements api.StrictServerInterface.
type Server struct {
	cfg        Config
	log        *slog.Logger
	auth       *auth.Service
	contacts   *contact.Service
	search     *search.Service
	erasures   *erasure.Service
	webhooks   *subscription.Service
	fields     *field.Service
	segments   *segment.Service
	deliveries *delivery.Service
	events     *event.Feed
	ready      func(ctx context.Context) error
	routes     routeTable
	idem       *idempotency.Service
	batch      *apicore.Batch
	limiter    ratelimit.Allower
	metrics    *metrics.Metrics
	batches    accountSlots
}

var _ api.StrictServerInterface = (*Server)(nil)

// New builds the HTTP handler of the whole service.
func New(cfg Config, d Deps) (http.Handler, error) {
	spec, err := api.GetSwagger()
	if err != nil {
		return nil, fmt.Errorf("load embedded spec: %w", err)
	}
	spec.Servers = nil
	reference, err := docs.New(contactd.OpenAPIYAML)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: d.Log, auth: d.Auth, contacts: d.Contacts, search: d.Search, erasures: d.Erasures, webhooks: d.Webhooks, fields: d.Fields, segments: d.Segments,
		events: d.Events, deliveries: d.Deliveries, ready: d.Ready, routes: newRouteTable(spec),
		limiter: d.Limiter, metrics: d.Metrics, idem: d.Idempotency}
	if s.batch, err = apicore.NewBatch(d.Contacts); err != nil {
		return nil, err
	}
	if s.limiter == nil {
		s.limiter = ratelimit.New(cfg.RateLimits, time.Now)
	}

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	e.JSONSerializer = bodySerializer{}
	e.IPExtractor = ipExtractor(cfg.TrustedProxies)
	e.Use(requestIDMiddleware, s.traced, s.accessLog, middleware.RecoverWithConfig(middleware.RecoverConfig{
		DisableStackAll: true, LogErrorFunc: s.logPanic}), s.apiRoute)
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	if d.Metrics != nil {
		e.GET("/metrics", echo.WrapHandler(d.Metrics.Handler()), s.metricsAccess)
	}
	reference.Register(e)
	if d.Extra != nil {
		d.Extra(e, s.bodyLimit, s.rateLimit)
	}
	api.RegisterHandlers(e, api.NewStrictHandler(s, nil))
	return e, nil
}

// ipExtractor finds the client's address: the TCP peer, or with trusted proxies the last
// X-Forwarded-For address that is not one of them (echo trusts loopback and private
// networks by default: here only what is configured). A forwarded loopback address is
// believed only from a proxy on this machine: from any other host, even a trusted one, a
// client "on this machine" is that host claiming it (the key allow-lists that name loopback).
func ipExtractor(trusted []netip.Prefix) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, p := range trusted {
		opts = append(opts, echo.TrustIPRange(&net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}))
	}
	forwarded := echo.ExtractIPFromXFFHeader(opts...)
	return func(r *http.Request) string {
		client, peer := forwarded(r), tcpPeer(r)
		if addr, err := netip.ParseAddr(client); err == nil && addr.IsLoopback() && !peer.IsLoopback() {
			return peer.String()
		}
		return client
	}
}

// tcpPeer is the address of the connection's other end (invalid if unreadable).
func tcpPeer(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

func (s *Server) logPanic(c echo.Context, err error, stack []byte) error {
	s.log.ErrorContext(c.Request().Context(), "panic", slog.String("request_id", requestID(c)),
		slog.Any("error", err), slog.String("stack", string(stack)))
	return err
}

// metricsAccess keeps /metrics to the operator: it shows every tenant's traffic and queues.
// A scraper sends CONTACTD_METRICS_TOKEN as a bearer token, or, with none configured, runs on
// this machine: its TCP peer is loopback, whatever a header says, and it is not a request a
// proxy forwarded (a trusted proxy's request with X-Forwarded-For: a header can refuse here,
// never admit).
func (s *Server) metricsAccess(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if want := s.cfg.MetricsToken; want != "" {
			got, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
				return apperr.New(apperr.KindUnauthorized, "Unauthorized", "/metrics needs the operator's bearer token (CONTACTD_METRICS_TOKEN)")
			}
			return next(c)
		}
		r := c.Request()
		peer := tcpPeer(r)
		forwarded := r.Header.Get(echo.HeaderXForwardedFor) != "" && s.fromProxy(peer)
		if !peer.IsLoopback() || forwarded {
			return apperr.New(apperr.KindForbidden, "Forbidden", "/metrics answers clients on this machine only, unless the operator sets CONTACTD_METRICS_TOKEN")
		}
		return next(c)
	}
}

// fromProxy reports whether peer is one of CONTACTD_TRUSTED_PROXIES.
func (s *Server) fromProxy(peer netip.Addr) bool {
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(peer) {
			return true
		}
	}
	return false
}

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(c echo.Context) error {
	if err := s.ready(c.Request().Context()); err != nil {
		s.log.WarnContext(c.Request().Context(), "not ready", slog.Any("error", err))
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "not ready"})
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

func principal(ctx context.Context) auth.Principal {
	p, _ := auth.FromContext(ctx)
	return p
}
