// Package console is the browser console at /console: sign in with an API key, find contacts
// and change their tags, read a contact's events, and debug webhooks (delivery log,
// redelivery, secret rotation). Pages are server-rendered html/template, work without
// JavaScript, and use a vendored htmx only to navigate without full reloads. Every action
// goes through the same services as the API, as the signed-in key's account and scopes; the
// store is used directly only for the console's own sessions.
package console

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/auth"
	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/contact/search"
	"github.com/contactd/contactd/internal/delivery"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/field"
	"github.com/contactd/contactd/internal/platform/queue"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/platform/token"
	"github.com/contactd/contactd/internal/segment"
	"github.com/contactd/contactd/internal/subscription"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// SessionTTL is how long a console session lasts.
const SessionTTL = 12 * time.Hour

const (
	// Over https the session cookie is __Host- prefixed: the browser then takes it only
	// Secure, for this exact host (no Domain) and Path=/, so a sibling subdomain or a
	// plain-http page cannot plant or shadow it. Plain http (development) cannot carry it.
	cookieName       = "contactd_console"
	secureCookieName = "__Host-contactd_console"
	// csp: nothing but this origin's own files, no inline script or style, never framed.
	csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

// Deps are the services the console acts through.
type Deps struct {
	Store      *store.Store
	Auth       *auth.Service
	Contacts   *contact.Service
	Search     *search.Service
	Fields     *field.Service
	Segments   *segment.Service
	Webhooks   *subscription.Service
	Deliveries *delivery.Service
	Events     *event.Feed
	Log        *slog.Logger
	Now        func() time.Time
	// PublicURL decides whether the session cookie is Secure (https).
	PublicURL string
}

// Console serves /console.
type Console struct {
	d      Deps
	secure bool
	pages  map[string]*template.Template
}

// New parses the templates.
func New(d Deps) (*Console, error) {
	c := &Console{d: d, pages: map[string]*template.Template{}}
	if u, err := url.Parse(d.PublicURL); err == nil && u.Scheme == "https" {
		c.secure = true
	}
	funcs := template.FuncMap{
		"stamp": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
		"stampp": func(t *time.Time) string {
			if t == nil {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04:05Z")
		},
		"deref": func(s *string) string {
			if s == nil {
				return ""
			}
			return *s
		},
		"ms": func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + " ms" },
		// json is a value indented for reading (a raw JSON value is indented as it is)
		"json": func(v any) (string, error) {
			var b []byte
			var err error
			if raw, ok := v.(json.RawMessage); ok {
				var out bytes.Buffer
				err = json.Indent(&out, raw, "", "  ")
				b = out.Bytes()
			} else {
				b, err = json.MarshalIndent(v, "", "  ")
			}
			return string(b), err
		},
		"pct": func(n, of int) int {
			if of == 0 {
				return 0
			}
			return n * 100 / of
		},
	}
	for _, page := range []string{"login", "contacts", "contact", "webhooks", "webhook", "eventtypes", "segments", "segment", "error"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/"+page+".html")
		if err != nil {
			return nil, err
		}
		c.pages[page] = t
	}
	return c, nil
}

// Register mounts the console on e. bodyLimit bounds every form as it bounds the API's
// bodies; rateLimit counts a signed-in page or action against its key's limits and its
// account's day, as the same request to the API would be.
func (c *Console) Register(e *echo.Echo, bodyLimit, rateLimit echo.MiddlewareFunc) {
	static, _ := fs.Sub(staticFiles, "static")
	g := e.Group("/console", c.headers, bodyLimit)
	g.GET("/static/*", echo.WrapHandler(http.StripPrefix("/console/static/", http.FileServer(http.FS(static)))))
	g.GET("/login", c.loginPage)
	g.POST("/login", c.login, c.sameOrigin)
	signedIn := g.Group("", c.session, rateLimit)
	signedIn.GET("", func(ec echo.Context) error { return ec.Redirect(http.StatusSeeOther, "/console/contacts") })
	signedIn.POST("/logout", c.logout, c.sameOrigin, c.csrf)
	signedIn.GET("/contacts", c.contactsPage, c.scope("contacts:read"))
	signedIn.GET("/contacts/:id", c.contactPage, c.scope("contacts:read"))
	signedIn.POST("/contacts/:id/tags", c.addTag, c.sameOrigin, c.csrf, c.scope("contacts:write"))
	signedIn.POST("/contacts/:id/tags/remove", c.removeTag, c.sameOrigin, c.csrf, c.scope("contacts:write"))
	signedIn.POST("/contacts/:id/fields", c.setField, c.sameOrigin, c.csrf, c.scope("contacts:write"))
	signedIn.POST("/contacts/:id/properties", c.addProperty, c.sameOrigin, c.csrf, c.scope("contacts:write"))
	signedIn.POST("/contacts/:id/properties/:property/archive", c.archiveProperty, c.sameOrigin, c.csrf, c.scope("contacts:write"))
	signedIn.GET("/segments", c.segmentsPage, c.scope("contacts:read"))
	signedIn.GET("/segments/:id", c.segmentPage, c.scope("contacts:read"))
	signedIn.GET("/webhooks", c.webhooksPage, c.scope("webhooks:read"))
	signedIn.GET("/webhooks/:id", c.webhookPage, c.scope("webhooks:read"))
	signedIn.GET("/event-types", c.eventTypesPage, c.scope("webhooks:read"))
	signedIn.POST("/webhooks/:id/deliveries/:delivery/redeliver", c.redeliver, c.sameOrigin, c.csrf, c.scope("webhooks:write"))
	signedIn.POST("/webhooks/:id/secret", c.rotate, c.sameOrigin, c.csrf, c.scope("webhooks:write"))
	signedIn.POST("/webhooks/:id/delete", c.remove, c.sameOrigin, c.csrf, c.scope("webhooks:write"))
	signedIn.POST("/webhooks/:id/pause", c.pause, c.sameOrigin, c.csrf, c.scope("webhooks:write"))
	signedIn.POST("/webhooks/:id/test", c.sendTest, c.sameOrigin, c.csrf, c.scope("webhooks:write"))
}

// headers keeps every console response out of frames and caches, under a strict CSP.
func (c *Console) headers(next echo.HandlerFunc) echo.HandlerFunc {
	return func(ec echo.Context) error {
		h := ec.Response().Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		if !strings.HasPrefix(ec.Request().URL.Path, "/console/static/") {
			h.Set("Cache-Control", "no-store")
		}
		return next(ec)
	}
}

// sameOrigin refuses a form posted from another site (an Origin or Referer that is not ours),
// on top of the SameSite=Strict cookie and the CSRF token.
func (c *Console) sameOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(ec echo.Context) error {
		r := ec.Request()
		from := r.Header.Get("Origin")
		if from == "" || from == "null" {
			from = r.Header.Get("Referer")
		}
		if from != "" {
			if u, err := url.Parse(from); err != nil || u.Host != r.Host {
				return c.fail(ec, http.StatusForbidden, "This form was sent from another site.")
			}
		}
		return next(ec)
	}
}

type sessionKey struct{}

// signedIn is the session of a request: the key's principal and the form token.
type signedIn struct {
	auth.Principal
	csrf string
	hash []byte
}

func sessionOf(ec echo.Context) signedIn {
	s, _ := ec.Request().Context().Value(sessionKey{}).(signedIn)
	return s
}

// session loads the request's session, or sends the browser to sign in. A session ends with
// its key: revoked, expired, or used from outside its networks.
func (c *Console) session(next echo.HandlerFunc) echo.HandlerFunc {
	return func(ec echo.Context) error {
		cookie, err := ec.Cookie(c.cookieName())
		if err != nil || cookie.Value == "" {
			return c.signIn(ec)
		}
		h := sha256.Sum256([]byte(cookie.Value))
		var row db.ConsoleSessionGetRow
		err = c.d.Store.Do(ec.Request().Context(), func(q *db.Queries) (err error) {
			row, err = q.ConsoleSessionGet(ec.Request().Context(), db.ConsoleSessionGetParams{SessionHash: h[:], ExpiresAt: c.d.Now()})
			return err
		})
		if errors.Is(err, apperr.ErrNoRows) {
			return c.signIn(ec)
		} else if err != nil {
			return err
		}
		p := auth.Principal{AccountID: row.AccountID, KeyID: row.KeyID, KeyName: row.Name, KeyPrefix: row.Prefix,
			Scopes: row.Scopes, ExpiresAt: row.KeyExpiresAt, Networks: row.AllowedNetworks, Live: row.Live}
		if p.ExpiresAt != nil && !c.d.Now().Before(*p.ExpiresAt) {
			return c.signIn(ec)
		}
		if addr, err := netip.ParseAddr(ec.RealIP()); err != nil || !p.From(addr) {
			return c.fail(ec, http.StatusForbidden, "This key may not be used from your network.")
		}
		ctx := context.WithValue(ec.Request().Context(), sessionKey{}, signedIn{Principal: p, csrf: row.CsrfToken, hash: h[:]})
		ctx = auth.WithPrincipal(ctx, p)
		ec.SetRequest(ec.Request().WithContext(ctx))
		return next(ec)
	}
}

func (c *Console) signIn(ec echo.Context) error {
	if ec.Request().Method != http.MethodGet {
		return c.fail(ec, http.StatusForbidden, "Your session has ended: sign in again.")
	}
	return ec.Redirect(http.StatusSeeOther, "/console/login")
}

// csrf refuses a form whose token is not the session's.
func (c *Console) csrf(next echo.HandlerFunc) echo.HandlerFunc {
	return func(ec echo.Context) error {
		want := sessionOf(ec).csrf
		if got := ec.FormValue("csrf"); want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			return c.fail(ec, http.StatusForbidden, "This form has expired or was not sent by the console: reload the page and try again.")
		}
		return next(ec)
	}
}

// scope refuses a page or action the key's scopes do not allow, as the API would.
func (c *Console) scope(need string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(ec echo.Context) error {
			if !sessionOf(ec).Has(need) {
				return c.fail(ec, http.StatusForbidden, "This key lacks the scope "+need+".")
			}
			return next(ec)
		}
	}
}

func (c *Console) loginPage(ec echo.Context) error {
	return c.render(ec, http.StatusOK, "login", map[string]any{"Title": "Sign in"})
}

// login exchanges an API key for a session: the key is checked as the API checks it, and only
// its id is kept with the session.
func (c *Console) login(ec echo.Context) error {
	ctx := ec.Request().Context()
	client, _ := netip.ParseAddr(ec.RealIP())
	p, err := c.d.Auth.Authenticate(ctx, strings.TrimSpace(ec.FormValue("key")), client)
	if err == nil && !p.From(client) {
		err = errors.New("not from here")
	}
	if err != nil {
		return c.render(ec, http.StatusUnauthorized, "login", map[string]any{"Title": "Sign in",
			"Error": "That key was not accepted: it is unknown, revoked or expired, or may not be used from here."})
	}
	session := token.Base62(32)
	h := sha256.Sum256([]byte(session))
	now := c.d.Now()
	err = c.d.Store.Do(ctx, func(q *db.Queries) error {
		return q.ConsoleSessionInsert(ctx, db.ConsoleSessionInsertParams{SessionHash: h[:], AccountID: p.AccountID,
			KeyID: p.KeyID, CsrfToken: token.Base62(24), CreatedAt: now, ExpiresAt: now.Add(SessionTTL)})
	})
	if err != nil {
		return err
	}
	ec.SetCookie(c.sessionCookie(session, int(SessionTTL.Seconds())))
	return ec.Redirect(http.StatusSeeOther, "/console/contacts")
}

func (c *Console) cookieName() string {
	if c.secure {
		return secureCookieName
	}
	return cookieName
}

func (c *Console) sessionCookie(value string, maxAge int) *http.Cookie {
	path := "/console"
	if c.secure {
		path = "/" // the __Host- prefix requires it
	}
	return &http.Cookie{Name: c.cookieName(), Value: value, Path: path, HttpOnly: true, Secure: c.secure,
		SameSite: http.SameSiteStrictMode, MaxAge: maxAge}
}

func (c *Console) logout(ec echo.Context) error {
	ctx := ec.Request().Context()
	if err := c.d.Store.Do(ctx, func(q *db.Queries) error { return q.ConsoleSessionDelete(ctx, sessionOf(ec).hash) }); err != nil {
		return err
	}
	ec.SetCookie(c.sessionCookie("", -1))
	return ec.Redirect(http.StatusSeeOther, "/console/login")
}

// render writes a page; data gets the session's account, key and form token.
func (c *Console) render(ec echo.Context, status int, page string, data map[string]any) error {
	s := sessionOf(ec)
	if s.KeyPrefix != "" {
		data["Key"] = s.KeyName + " (" + s.KeyPrefix + "…)"
		data["Live"] = s.Live
		data["CSRF"] = s.csrf
	}
	data["Page"] = page
	ec.Response().Header().Set(echo.HeaderContentType, "text/html; charset=utf-8")
	ec.Response().WriteHeader(status)
	return c.pages[page].Execute(ec.Response(), data)
}

func (c *Console) fail(ec echo.Context, status int, msg string) error {
	return c.render(ec, status, "error", map[string]any{"Title": http.StatusText(status), "Message": msg})
}

// failed renders a service error as the API would word it.
func (c *Console) failed(ec echo.Context, err error) error {
	e := apperr.As(err)
	switch e.Kind {
	case apperr.KindNotFound:
		return c.fail(ec, http.StatusNotFound, e.Message)
	case apperr.KindInvalid:
		return c.fail(ec, http.StatusBadRequest, e.Message)
	}
	return err
}

// PruneTask deletes ended sessions every hour.
func (c *Console) PruneTask() queue.Task {
	return queue.Task{Name: "console_sessions_prune", Every: time.Hour, Run: func(ctx context.Context) error {
		return c.d.Store.Do(ctx, func(q *db.Queries) error {
			_, err := q.ConsoleSessionPrune(ctx, c.d.Now())
			return err
		})
	}}
}

func parseID(raw string) (uuid.UUID, bool) {
	id, err := uuid.Parse(raw)
	return id, err == nil
}
