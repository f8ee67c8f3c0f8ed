package consumer_test

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/testkit"
)

// chromiumFlags run Debian's Chromium headless as root on a machine without a network: no
// sandbox (root), no GPU, and none of the background traffic that would go unanswered.
func chromiumFlags(t *testing.T) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir(),
		// Redoc fetches the spec and renders after load; virtual time lets it finish first.
		"--virtual-time-budget=30000"}
}

// TestDocsPage opens /docs in headless Chromium: the bundled Redoc renders openapi.yaml, as
// served by the binary, with every operation of the spec (x-webhooks too) on the page. Then it
// takes a screenshot; CONTACTD_SCREENSHOT_DIR keeps it for a person to look at
// (make docs-screenshot).
func TestDocsPage(t *testing.T) {
	chromium := needTool(t, "chromium", "make browser-deps")
	a := testkit.NewAPI(t)

	dom := run(t, 2*time.Minute, nil, chromium, append(chromiumFlags(t), "--dump-dom", a.URL+"/docs")...)
	spec, err := api.GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			ops = append(ops, op.OperationID)
		}
	}
	ops = append(ops, "receiveContactEvent") // x-webhooks, which kin-openapi keeps as an extension
	if len(ops) != 44 {
		t.Fatalf("the spec has %d operations, the test expects 44: update it", len(ops))
	}
	for _, id := range ops {
		if !strings.Contains(dom, `id="operation/`+id+`"`) {
			t.Errorf("operation %s is not on the rendered page", id)
		}
	}
	for _, op := range []string{"Create a contact", "Subscribe to an event type", "Report an activity of a contact"} {
		if !strings.Contains(dom, op) {
			t.Errorf("summary %q is not on the page", op)
		}
	}
	if t.Failed() {
		t.Logf("rendered page (%d bytes), first 2 KiB:\n%.2048s", len(dom), dom)
	}

	dir := os.Getenv("CONTACTD_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	shot, err := filepath.Abs(filepath.Join(dir, "docs.png"))
	if err != nil {
		t.Fatal(err)
	}
	run(t, 2*time.Minute, nil, chromium, append(chromiumFlags(t), "--hide-scrollbars", "--window-size=1400,1000",
		"--screenshot="+shot, a.URL+"/docs")...)
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if img.Bounds().Dx() != 1400 || img.Bounds().Dy() != 1000 || colours(img) < 16 {
		t.Errorf("screenshot %v with %d colours: an empty page?", img.Bounds(), colours(img))
	}
	t.Logf("screenshot: %s", shot)
}

// colours counts the distinct colours of a sample of the image's pixels.
func colours(img image.Image) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
		}
	}
	return len(seen)
}
