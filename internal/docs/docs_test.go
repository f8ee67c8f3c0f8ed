package docs_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"testing"

	"github.com/labstack/echo/v4"

	contactd "github.com/contactd/contactd"
	"github.com/contactd/contactd/internal/docs"
)

func serve(t *testing.T) *httptest.Server {
	t.Helper()
	d, err := docs.New(contactd.OpenAPIYAML)
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	d.Register(e)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	// a bare transport: no transparent gzip, so the test sees what was sent.
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func TestSpecServedAsWritten(t *testing.T) {
	srv := serve(t)
	want, err := os.ReadFile("../../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	resp, body := get(t, srv.URL+docs.SpecYAMLPath)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/yaml" || !bytes.Equal(body, want) {
		t.Fatalf("yaml: %d %q, %d bytes (file has %d)", resp.StatusCode, resp.Header.Get("Content-Type"), len(body), len(want))
	}
	etag := resp.Header.Get("ETag")
	if resp, body := get(t, srv.URL+docs.SpecYAMLPath, "If-None-Match", etag); resp.StatusCode != http.StatusNotModified || len(body) != 0 {
		t.Errorf("revalidation: %d, %d bytes", resp.StatusCode, len(body))
	}

	resp, body = get(t, srv.URL+docs.SpecJSONPath)
	var spec struct {
		OpenAPI  string                    `json:"openapi"`
		Paths    map[string]map[string]any `json:"paths"`
		Webhooks map[string]any            `json:"x-webhooks"`
	}
	if err := json.Unmarshal(body, &spec); err != nil || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("json: %v %q", err, resp.Header.Get("Content-Type"))
	}
	if spec.OpenAPI != "3.0.3" || len(spec.Paths) != 31 || spec.Webhooks["contactEvent"] == nil {
		t.Errorf("json spec: openapi %q, %d paths, webhooks %v", spec.OpenAPI, len(spec.Paths), spec.Webhooks)
	}
}

func TestPageAndBundle(t *testing.T) {
	srv := serve(t)
	resp, page := get(t, srv.URL+docs.PagePath)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("page: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !regexp.MustCompile(`script-src 'self';`).MatchString(csp) ||
		!regexp.MustCompile(`default-src 'none'`).MatchString(csp) {
		t.Errorf("CSP %q", csp)
	}
	// everything the page loads comes from this host.
	for _, m := range regexp.MustCompile(`(?:src|spec-url|href)="([^"]*)"`).FindAllSubmatch(page, -1) {
		if !bytes.HasPrefix(m[1], []byte("/")) {
			t.Errorf("page loads %s from elsewhere", m[1])
		}
	}

	resp, zipped := get(t, srv.URL+docs.RedocPath, "Accept-Encoding", "br, gzip")
	if resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("bundle with gzip accepted: encoding %q vary %q", resp.Header.Get("Content-Encoding"), resp.Header.Get("Vary"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, _ := io.ReadAll(zr)
	resp, plain := get(t, srv.URL+docs.RedocPath)
	if resp.Header.Get("Content-Encoding") != "" || !bytes.Equal(plain, unzipped) {
		t.Fatalf("bundle without gzip: encoding %q, same bytes %v", resp.Header.Get("Content-Encoding"), bytes.Equal(plain, unzipped))
	}
	// the embedded bundle is the one REDOC.md names.
	notes, err := os.ReadFile("REDOC.md")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(plain)
	if !bytes.Contains(notes, []byte("sha256 of redoc.standalone.js: "+hex.EncodeToString(sum[:]))) {
		t.Errorf("embedded bundle's sha256 %x is not the one REDOC.md records", sum)
	}
}
