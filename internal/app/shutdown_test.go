package app_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/internal/testkit"
)

// SIGTERM during a burst of slow requests loses none of them: the server stops accepting,
// finishes what it has, and exits cleanly.
func TestSIGTERMFinishesInFlightRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and signals a server process")
	}
	t.Parallel()
	ctx := context.Background()
	srv, base, key, db, logs := startServeProcess(t)
	call := func(method, path, body string) (int, error) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-api-key", key)
		resp, err := (&http.Client{Transport: testkit.ValidatingTransport(t)}).Do(req) // answers checked against openapi.yaml
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if s, err := call("POST", "/public/v1/contact", `{"email":"slow@example.com"}`); s != 200 {
		t.Fatalf("create: %d %v", s, err)
	}
	// hold the contact's row so every activity report waits on it, each in its own session: a
	// burst of slow requests. (Not tag changes: those queue in the server for a few sessions.)
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var id string
	if err := tx.QueryRow(ctx, "SELECT contact_id::text FROM contacts FOR UPDATE").Scan(&id); err != nil {
		t.Fatal(err)
	}
	const burst = 20
	var wg sync.WaitGroup
	statuses := make([]int, burst)
	errs := make([]error, burst)
	for i := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i], errs[i] = call("POST", "/public/v1/contact/"+id+"/activity", `{"type":"EmailClick"}`)
		}()
	}
	waitFor(t, func() bool { return waiting(t, ctx, db) >= burst }, "the burst to reach the database")

	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// the held requests cannot finish before the rollback: a server that did not wait for them
	// would have failed them by exiting
	waitFor(t, func() bool { _, err := call("GET", "/public/v1/webhooks", ""); return err != nil }, "the listener to close")
	if err := tx.Rollback(ctx); err != nil { // let the held requests through
		t.Fatal(err)
	}
	wg.Wait()
	for i := range burst {
		if statuses[i] != 200 || errs[i] != nil {
			t.Errorf("request %d: %d %v", i, statuses[i], errs[i])
		}
	}
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve exited with %v after SIGTERM\n%s", err, logs.String())
		}
	case <-time.After(testkit.Patience):
		t.Fatal("serve did not exit after SIGTERM")
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT num_email_clicks FROM contacts").Scan(&n); err != nil || n != burst {
		t.Errorf("the contact counts %d email clicks, want all %d (%v)", n, burst, err)
	}
	// the JSON access log names each request and its account, and never the key.
	log := logs.String()
	for _, want := range []string{`"msg":"request"`, `"operation_id":"recordContactActivity"`, `"status":200`, `"account_id":"`, `"request_id":"`, `"latency":`} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %s", want)
		}
	}
	if strings.Contains(log, key) || strings.Contains(log, key[11:]) {
		t.Errorf("the log contains the API key")
	}
}

// waiting counts the sessions blocked on a lock, seen from a connection of its own (the
// one holding the lock is inside its transaction).
func waiting(t *testing.T, ctx context.Context, db string) int {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	testkit.Eventually(t, what, cond)
}

// With CONTACTD_SHUTDOWN_DRAIN, a SIGTERM first makes /readyz answer 503 while requests are
// still served, each answer closing its connection, and closes no connection under a balancer
// that may be sending on it: a request on a connection the balancer kept alive from before the
// SIGTERM is answered (closing idle connections at the SIGTERM lost such a request, its client
// saw EOF). The drain ends when /readyz has answered --shutdown-drain-checks checks with 503,
// the balancer having acted on the ones before, not after its hour.
func TestSIGTERMDrainsBehindABalancer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and signals a server process")
	}
	t.Parallel()
	srv, base, key, _, _ := startServeProcess(t, "--shutdown-drain", "1h", "--shutdown-drain-checks", "3")
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	// the balancer's side: one connection, kept alive between requests as HAProxy keeps its
	// idle ones to a server, and never a second
	var dials atomic.Int32
	kept := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) > 1 {
			return nil, errors.New("a second connection: the kept-alive one was closed under its user")
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	balancer := &http.Client{Transport: testkit.ValidatingTransportOver(t, kept)}
	fresh := &http.Client{Transport: testkit.ValidatingTransportOver(t, &http.Transport{DisableKeepAlives: true})}
	do := func(c *http.Client, method, path, body string) (*http.Response, error) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-api-key", key)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}
	create := func(c *http.Client, email string) (*http.Response, error) {
		return do(c, "POST", "/public/v1/contact", `{"email":"`+email+`"}`)
	}
	readyz := func() int {
		resp, err := do(fresh, "GET", "/readyz", "")
		if err != nil {
			t.Fatalf("/readyz while draining: %v", err)
		}
		return resp.StatusCode
	}
	if resp, err := create(balancer, "before@example.com"); err != nil || resp.StatusCode != 200 || resp.Close {
		t.Fatalf("before the SIGTERM: %v %v; want 200 on a connection kept alive", resp, err)
	}
	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "/readyz answering 503 after the SIGTERM", func() bool { // the first failed check
		resp, err := do(fresh, "GET", "/readyz", "")
		return err == nil && resp.StatusCode == http.StatusServiceUnavailable
	})
	if resp, err := create(balancer, "kept@example.com"); err != nil || resp.StatusCode != 200 || !resp.Close {
		t.Errorf("a request on the connection kept alive from before the SIGTERM: %v %v; want 200 and the connection closed after it", resp, err)
	}
	if st := readyz(); st != http.StatusServiceUnavailable { // the second
		t.Errorf("/readyz while draining: %d, want 503", st)
	}
	if resp, err := create(fresh, "new@example.com"); err != nil || resp.StatusCode != 200 || !resp.Close {
		t.Errorf("a request on a new connection while draining: %v %v; want 200 and the connection closed after it", resp, err)
	}
	select {
	case err := <-exited:
		t.Fatalf("the process exited after two checks answered 503 of the three that end its drain: %v", err)
	default:
	}
	if st := readyz(); st != http.StatusServiceUnavailable { // the third: the drain is over
		t.Errorf("/readyz while draining: %d, want 503", st)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the process ended its drain after three failed checks with %v, want exit 0", err)
		}
	case <-time.After(testkit.Patience):
		t.Errorf("the process still runs %v after the third check it answered 503: the drain did not end on it", testkit.Patience)
	}
}

// startServeProcess builds contactd and runs `contactd serve` (with extra flags) as a process
// of its own on a fresh database with an account and a key, until the test ends; it returns
// once the server answers. logs is what it writes to stderr.
func startServeProcess(t *testing.T, extra ...string) (srv *exec.Cmd, base, key, db string, logs *listening) {
	t.Helper()
	ctx := context.Background()
	db = testkit.NewDatabase(t)
	if code, _, errOut := contactd(t, ctx, db, "accounts", "create", "--name", "acme"); code != 0 {
		t.Fatal(errOut)
	}
	_, out, _ := contactd(t, ctx, db, "keys", "create", "--account", "acme")
	key = strings.TrimSpace(out)
	bin := filepath.Join(t.TempDir(), "contactd")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/contactd/contactd/cmd/contactd").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	logs = newListening()
	srv = exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--database-url", db,
		"--secret-key-file", keyFile(t, db), "--rate-writes-per-10s", "0"}, extra...)...)
	srv.Stderr = logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill() })
	base = "http://" + logs.Addr(t)
	waitHealthy(t, base)
	return srv, base, key, db, logs
}
