package app_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contactd/contactd/internal/app"
	"github.com/contactd/contactd/internal/platform/seal"
	"github.com/contactd/contactd/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func contactd(t *testing.T, ctx context.Context, dbURL string, args ...string) (int, string, string) {
	t.Helper()
	return contactdWithKey(t, ctx, dbURL, keyFile(t, dbURL), args...)
}

// contactdWithKey runs a command with the sealing key in the file keyPath.
func contactdWithKey(t *testing.T, ctx context.Context, dbURL, keyPath string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runContactd(ctx, dbURL, keyPath, &stdout, &stderr, args...)
	return code, stdout.String(), stderr.String()
}

// runContactd runs a command of contactd in this process, on the database at dbURL.
func runContactd(ctx context.Context, dbURL, keyPath string, stdout, stderr io.Writer, args ...string) int {
	args = append(args[:1:1], append([]string{}, args[1:]...)...)
	db := []string{"--database-url", dbURL, "--secret-key-file", keyPath}
	full := append(args, db...)
	if args[0] == "accounts" || args[0] == "keys" || args[0] == "secrets" || args[0] == "suppressions" {
		// flags must follow the subcommand's own words
		full = append(append([]string{args[0], args[1]}, db...), args[2:]...)
	}
	return app.Main(ctx, full, stdout, stderr)
}

var keyFiles sync.Map // database URL -> the file of its sealing key

// keyFile is the file holding the sealing key of the test database at dbURL.
func keyFile(t *testing.T, dbURL string) string {
	if path, ok := keyFiles.Load(dbURL); ok {
		return path.(string)
	}
	path := filepath.Join(t.TempDir(), "secret-key")
	if err := os.WriteFile(path, []byte(seal.NewKey()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keyFiles.Store(dbURL, path)
	return path
}

func TestCommandLine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testkit.NewDatabase(t)
	if code, _, errOut := contactd(t, ctx, db, "migrate"); code != 0 {
		t.Fatalf("migrate: %d %s", code, errOut)
	}
	if code, _, errOut := contactd(t, ctx, db, "accounts", "create", "--name", "acme"); code != 0 {
		t.Fatalf("accounts create: %d %s", code, errOut)
	}
	if code, _, _ := contactd(t, ctx, db, "accounts", "create", "--name", "acme"); code != 1 {
		t.Errorf("duplicate account name: exit %d, want 1", code)
	}
	code, out, errOut := contactd(t, ctx, db, "keys", "create", "--account", "acme")
	if code != 0 || !regexp.MustCompile(`^ck_[0-9A-Za-z]{43}\n$`).MatchString(out) {
		t.Fatalf("keys create: %d %q %s", code, out, errOut)
	}
	key := strings.TrimSpace(out)
	prefix := key[:11]
	if code, out, _ := contactd(t, ctx, db, "keys", "list", "--account", "acme"); code != 0 || !strings.Contains(out, prefix) || strings.Contains(out, key) {
		t.Errorf("keys list: %d %q", code, out)
	}
	if code, _, _ := contactd(t, ctx, db, "keys", "create", "--account", "nobody"); code != 1 {
		t.Errorf("keys create for an unknown account: exit %d, want 1", code)
	}

	sctx, stop := context.WithCancel(ctx)
	done := make(chan int, 1)
	logs := newListening()
	go func() {
		done <- runContactd(sctx, db, keyFile(t, db), io.Discard, logs, "serve", "--addr", "127.0.0.1:0")
	}()
	base := "http://" + logs.Addr(t)
	waitHealthy(t, base)
	post := func() int {
		req, _ := http.NewRequest("POST", base+"/public/v1/contact", strings.NewReader(`{"email":"cli@example.com"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-api-key", key)
		resp, err := (&http.Client{Transport: testkit.ValidatingTransport(t)}).Do(req) // answers checked against openapi.yaml
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := post(); s != 200 {
		t.Errorf("create through serve: %d", s)
	}
	ts := `\d{4}-\d\d-\d\dT\S+Z`
	if code, out, _ := contactd(t, ctx, db, "keys", "list", "--account", "acme"); code != 0 ||
		!regexp.MustCompile(prefix+`\s+\S+\s+live\s+all\s+-\s+anywhere\s+`+ts+`\s+`+ts+`\s+-\s*$`).MatchString(strings.TrimSpace(out)) {
		t.Errorf("keys list after use: %q, want a last-used time", out)
	}
	if code, _, errOut := contactd(t, ctx, db, "keys", "revoke", prefix); code != 0 {
		t.Errorf("keys revoke: %d %s", code, errOut)
	}
	// the revoking transaction NOTIFYs serve, whose key cache forgets the key when it hears it
	// (TestKeyCache proves it is the notification); the CLI returns before serve has heard.
	waitFor(t, func() bool { return post() == 401 }, "the revoked key refused")
	if code, out, _ := contactd(t, ctx, db, "keys", "list", "--account", "acme"); code != 0 || !regexp.MustCompile(prefix+`.*\d{4}-\d\d-\d\dT[^ ]+Z\s*$`).MatchString(strings.TrimSpace(out)) {
		t.Errorf("keys list after revoke: %q", out)
	}
	stop()
	select {
	case c := <-done:
		if c != 0 {
			t.Errorf("serve exited %d after a graceful stop", c)
		}
	case <-time.After(testkit.Patience):
		t.Fatal("serve did not stop")
	}
}

func TestBadConfigurationIsExplained(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := app.Main(context.Background(), []string{"serve", "--addr", "nope", "--webhook-allowed-networks", "10.0.0.0/99",
		"--nats-subject-prefix", "contactd.*"}, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "CONTACTD_ADDR") || !strings.Contains(errOut.String(), "CONTACTD_WEBHOOK_ALLOWED_NETWORKS") ||
		!strings.Contains(errOut.String(), "CONTACTD_NATS_SUBJECT_PREFIX") {
		t.Errorf("exit %d: %s", code, errOut.String())
	}
	if code := app.Main(context.Background(), []string{"frobnicate"}, &out, &errOut); code != 2 {
		t.Errorf("unknown command: exit %d", code)
	}
}

// listening collects a server's log and finds in it the address the server says it listens
// on: tests start servers on --addr 127.0.0.1:0, because a port chosen free beforehand can be
// bound by another process first, and another server then answers the readiness check.
type listening struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	addr chan string
	once sync.Once
}

func newListening() *listening { return &listening{addr: make(chan string, 1)} }

// listeningLine is the "contactd listening" line, in the text or the JSON log format.
var listeningLine = regexp.MustCompile(`contactd listening"?,?\s*"?addr"?[=:]"?([^"\s,]+)`)

func (l *listening) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if m := listeningLine.FindSubmatch(l.buf.Bytes()); m != nil {
		l.once.Do(func() { l.addr <- string(m[1]) })
	}
	return len(p), nil
}

func (l *listening) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Addr waits for the server to say where it listens.
func (l *listening) Addr(t *testing.T) string {
	t.Helper()
	select {
	case a := <-l.addr:
		return a
	case <-time.After(testkit.Patience):
		t.Fatalf("the server never said where it listens; its log:\n%s", l)
		return ""
	}
}

func waitHealthy(t *testing.T, base string) {
	t.Helper()
	waitFor(t, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}, base+" ready")
}
