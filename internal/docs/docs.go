// Package docs serves the API's own description: openapi.yaml as written, the same as JSON,
// and a reference page rendered from it in the browser by Redoc, bundled into the binary (see
// REDOC.md) so that the page needs nothing from any other host.
package docs

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"
)

var (
	//go:embed index.html
	indexHTML []byte
	//go:embed redoc.standalone.js.gz
	redocGzip []byte
)

// Paths are where the description and the page are served.
const (
	SpecYAMLPath = "/public/v1/openapi.yaml"
	SpecJSONPath = "/public/v1/openapi.json"
	PagePath     = "/docs"
	RedocPath    = "/docs/redoc.standalone.js"
)

// contentSecurityPolicy keeps the page on this host: Redoc's own script, the spec from here,
// the inline styles it generates; no fonts, images or beacons from anywhere else.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; connect-src 'self'; " +
	"style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; " +
	"worker-src 'self' blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is a response body prepared once, with its validator.
type asset struct {
	contentType string
	body        []byte
	gzipped     []byte // the body gzip-encoded, when it is worth sending so
	etag        string
}

func newAsset(contentType string, body, gzipped []byte) asset {
	sum := sha256.Sum256(body)
	return asset{contentType: contentType, body: body, gzipped: gzipped,
		etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
}

// Docs holds the prepared assets.
type Docs struct {
	yaml, json, page, redoc asset
}

// New prepares the assets from the spec's YAML text.
func New(specYAML []byte) (*Docs, error) {
	doc, err := openapi3.NewLoader().LoadFromData(specYAML)
	if err != nil {
		return nil, fmt.Errorf("load openapi.yaml: %w", err)
	}
	specJSON, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("openapi.yaml as JSON: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(redocGzip))
	if err != nil {
		return nil, fmt.Errorf("redoc bundle: %w", err)
	}
	redoc, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("redoc bundle: %w", err)
	}
	return &Docs{
		yaml:  newAsset("application/yaml", specYAML, nil),
		json:  newAsset("application/json", specJSON, nil),
		page:  newAsset("text/html; charset=utf-8", indexHTML, nil),
		redoc: newAsset("text/javascript; charset=utf-8", redoc, redocGzip),
	}, nil
}

// Register adds the routes (GET and HEAD) to e; they need no API key.
func (d *Docs) Register(e *echo.Echo) {
	for path, a := range map[string]asset{SpecYAMLPath: d.yaml, SpecJSONPath: d.json, PagePath: d.page, RedocPath: d.redoc} {
		h := a.handler(path == PagePath)
		e.GET(path, h)
		e.HEAD(path, h)
	}
}

func (a asset) handler(isPage bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Type", a.contentType)
		h.Set("ETag", a.etag)
		h.Set("Cache-Control", "no-cache") // revalidate: a new binary may serve a new spec
		h.Set("X-Content-Type-Options", "nosniff")
		if isPage {
			h.Set("Content-Security-Policy", contentSecurityPolicy)
			h.Set("Referrer-Policy", "no-referrer")
		}
		if a.gzipped != nil {
			h.Add("Vary", "Accept-Encoding")
		}
		if c.Request().Header.Get("If-None-Match") == a.etag {
			return c.NoContent(http.StatusNotModified)
		}
		body := a.body
		if a.gzipped != nil && acceptsGzip(c.Request()) {
			h.Set("Content-Encoding", "gzip")
			body = a.gzipped
		}
		h.Set("Content-Length", strconv.Itoa(len(body)))
		return c.Blob(http.StatusOK, a.contentType, body)
	}
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.ReplaceAll(q, " ", "") != "q=0" {
			return true
		}
	}
	return false
}
