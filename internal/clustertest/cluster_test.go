// Package clustertest runs contactd the way scripts/cluster.sh (make cluster) deploys it —
// HAProxy in front of two API processes, two worker processes, PostgreSQL and Redis — and
// kills nodes under load. It runs with CONTACTD_CLUSTER_TEST=1 (make test-cluster, part of
// make test) and needs bin/contactd built.
package clustertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/internal/testkit"
)

const readsPer10s = 60

// cluster is one scripts/cluster.sh deployment in a temporary directory.
type cluster struct {
	t    *testing.T
	root string // the repository
	dir  string // CLUSTER_DIR
	base int    // CLUSTER_PORT
	env  []string
	vars map[string]string // cluster.env
	key  string            // the demo account's key
}

func startCluster(t *testing.T) *cluster {
	if os.Getenv("CONTACTD_CLUSTER_TEST") == "" {
		t.Skip("the cluster test runs with CONTACTD_CLUSTER_TEST=1: make test-cluster")
	}
	return upCluster(t, "CLUSTER_HA=0") // one PostgreSQL: the contactd nodes are what is lost
}

// upCluster starts scripts/cluster.sh in a temporary directory with the extra environment
// variables env (CLUSTER_HA=0 or 1).
func upCluster(t *testing.T, env ...string) *cluster {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "bin/contactd")); err != nil {
		t.Fatalf("bin/contactd is missing (make build): %v", err)
	}
	// not t.TempDir(): its parent is private to us, and PostgreSQL runs as the postgres user
	dir, err := os.MkdirTemp("", "contactd-cluster-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) }) // after down: cleanups run last first
	c := &cluster{t: t, root: root, dir: dir, base: freePortRange(t, 16)}
	// env after the defaults: the last of a name wins
	c.env = append(append(os.Environ(), "CLUSTER_DIR="+dir, fmt.Sprintf("CLUSTER_PORT=%d", c.base),
		"CONTACTD_RATE_WRITES_PER_10S=1000000", fmt.Sprintf("CONTACTD_RATE_READS_PER_10S=%d", readsPer10s),
		"CONTACTD_RATE_ACCOUNT_PER_DAY=0",
		// the shared budget is checked exactly: a busy machine's slow Redis is not a fallback
		"CONTACTD_REDIS_TIMEOUT=1m",
		// an attempt whose worker was killed is made again when its lease ends
		"CONTACTD_WEBHOOK_TIMEOUT=1s", "CONTACTD_WEBHOOK_RESCUE_AFTER=12s"), env...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("cluster.sh status:\n%s", c.script("status"))
			for _, name := range []string{"setup", "serve1", "serve2", "worker1", "worker2", "haproxy", "monitor", "pg1", "pg2", "pg3"} {
				if b, err := os.ReadFile(filepath.Join(dir, name+".log")); err == nil {
					t.Logf("%s.log (end):\n%s", name, tail(b, 3000))
				}
			}
		}
		c.script("down")
	})
	c.script("up")
	c.vars = readEnv(t, filepath.Join(dir, "cluster.env"))
	b, err := os.ReadFile(filepath.Join(dir, "api-key"))
	if err != nil {
		t.Fatal(err)
	}
	c.key = strings.TrimSpace(string(b))
	return c
}

// script runs scripts/cluster.sh with args.
func (c *cluster) script(args ...string) string {
	c.t.Helper()
	out, err := c.tryScript(args...)
	if err != nil {
		c.t.Fatalf("cluster.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// tryScript runs scripts/cluster.sh with args, for a question a node may not answer yet.
func (c *cluster) tryScript(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(c.root, "scripts/cluster.sh"), args...)
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// contactd runs a contactd command against the cluster's database and returns its stdout.
func (c *cluster) contactd(args ...string) string {
	c.t.Helper()
	cmd := exec.Command(filepath.Join(c.root, "bin/contactd"), args...)
	cmd.Env = c.env
	for k, v := range c.vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("contactd %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return strings.TrimSpace(string(out))
}

func (c *cluster) db(ctx context.Context) *pgx.Conn {
	c.t.Helper()
	conn, err := pgx.Connect(ctx, c.vars["DATABASE_URL"])
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// failure is a request that got no answer from contactd: a transport error or HAProxy's own
// 5xx (no X-Request-Id), or contactd's own 5xx.
type failure struct {
	sent, at time.Time // when the request was sent, when it failed
	what     string
}

// client sends requests and validates every answer contactd gave against openapi.yaml.
type client struct {
	t        *testing.T
	http     *http.Client
	mu       sync.Mutex
	failures []failure
}

func newClient(t *testing.T) *client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return &client{t: t, http: &http.Client{Transport: tr, Timeout: 15 * time.Second}}
}

// do returns the status and body, or 0 when the request failed before contactd answered.
func (cl *client) do(method, url, key string, body any, headers ...string) (int, []byte, http.Header) {
	var rd io.Reader
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, url, rd)
	// Go's transport resends by itself a request with an Idempotency-Key whose connection
	// dropped, when it can rewind the body: this client retries in the open instead, so the
	// test sees every failure at the kill.
	req.GetBody = nil
	req.Header.Set("x-api-key", key)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	sent := time.Now()
	resp, err := cl.http.Do(req)
	if err != nil {
		cl.fail(sent, fmt.Sprintf("%s %s: %v", method, req.URL.Path, err))
		return 0, nil, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		cl.fail(sent, fmt.Sprintf("%s %s: reading the answer: %v", method, req.URL.Path, err))
		return 0, nil, nil
	}
	if resp.StatusCode >= 500 {
		cl.fail(sent, fmt.Sprintf("%s %s: %d %q (X-Request-Id %q)", method, req.URL.Path, resp.StatusCode, tail(b, 200), resp.Header.Get("X-Request-Id")))
		if resp.Header.Get("X-Request-Id") == "" {
			return 0, nil, nil // HAProxy's page, not contactd's answer
		}
	}
	if body != nil {
		req.Body = io.NopCloser(bytes.NewReader(raw)) // the validator reads the request too
	}
	testkit.ValidateResponse(cl.t, req, &testkit.Response{Status: resp.StatusCode, Header: resp.Header, Body: b})
	return resp.StatusCode, b, resp.Header
}

func (cl *client) fail(sent time.Time, what string) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.failures = append(cl.failures, failure{sent, time.Now(), what})
}

// subscribed is a receiver subscribed to the demo account's TagsAdded events, a client, and
// the cluster's URL (HAProxy).
func (c *cluster) subscribed(t *testing.T) (*receiver, *client, string) {
	t.Helper()
	rc, cl, url := newReceiver(t), newClient(t), c.vars["CLUSTER_URL"]
	if st, b, _ := cl.do("POST", url+"/public/v1/webhooks", c.key, map[string]any{"url": rc.url, "eventType": "TagsAdded"}); st != 200 {
		t.Fatalf("subscribe: %d %s", st, b)
	}
	return rc, cl, url
}

// tagsAddedEvents are the ids of every TagsAdded event stored.
func tagsAddedEvents(t *testing.T, conn *pgx.Conn) map[string]bool {
	t.Helper()
	events := map[string]bool{}
	rows, _ := conn.Query(context.Background(), "SELECT event_id::text FROM webhook_events WHERE event_type = 'TagsAdded'")
	var id string
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error { events[id] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	return events
}

// createdID is the contact id of a create's answer.
func createdID(t *testing.T, body []byte) (string, bool) {
	var created struct {
		Contact struct {
			ContactId string `json:"contactId"`
		} `json:"contact"`
	}
	if err := json.Unmarshal(body, &created); err != nil || created.Contact.ContactId == "" {
		t.Errorf("create answer %s: %v", body, err)
		return "", false
	}
	return created.Contact.ContactId, true
}

// written is what the load was told was stored: contact id -> tags.
type written struct {
	mu   sync.Mutex
	tags map[string][]string
	acks int
}

func (w *written) ack(id string, tags ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tags[id] = append(w.tags[id], tags...)
	w.acks++
}

func (w *written) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acks
}

// TestClusterSurvivesKilledNodes puts write load through HAProxy while an API process and a
// worker are killed with SIGKILL and restarted, then checks that nothing acknowledged was
// lost, every event reached the receiver, failures happened only at the kill, and that key
// revocation and rate limits hold across both API processes.
//
// Every phase waits for an event, never for a time: the kill comes after enough acknowledged
// writes, the restart after HAProxy has taken the dead node out, the load ends after enough
// writes with the node back in. "Only at the kill" is measured from what this process observes
// exactly: a failed request must have been sent before HAProxy reported the node DOWN and have
// failed after this process sent the SIGKILL, that is, it was in flight to the dead node.
func TestClusterSurvivesKilledNodes(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	rc, cl, url := c.subscribed(t)

	const (
		writers    = 8
		beforeKill = 300 // acknowledged writes before the kill
		afterBack  = 300 // and after the restarted node is back in HAProxy
	)
	w := &written{tags: map[string][]string{}}
	// beside the writes, single-contact operations whose history is checked for
	// linearizability through the kills
	hist := startHistory(t, cl, url, c.key, historyWorkers(1), uint64(time.Now().UnixNano()))
	start := time.Now()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var sent atomic.Int64
	var replayed, retried atomic.Int64
	// write sends a write with an Idempotency-Key and retries it with the same key when no
	// answer came (the node died) or the first attempt still runs: as a careful client would.
	write := func(path string, body any) (int, []byte) {
		key := uuid.NewString()
		for try := 0; try < 50; try++ {
			if try > 0 {
				retried.Add(1)
				time.Sleep(100 * time.Millisecond)
			}
			sent.Add(1)
			st, b, h := cl.do("POST", url+path, c.key, body, "Idempotency-Key", key)
			if st == 0 || st == http.StatusConflict {
				continue
			}
			if h.Get("Idempotent-Replayed") == "true" {
				replayed.Add(1)
			}
			return st, b
		}
		return 0, nil
	}
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				email := fmt.Sprintf("w%d-%d@cluster.example", g, i)
				st, b := write("/public/v1/contact", map[string]any{"email": email, "tags": []string{"created"}})
				if st != 200 { // a DuplicateContact here would be a retry that wrote twice
					t.Errorf("create %s: %d %s", email, st, b)
					return
				}
				id, ok := createdID(t, b)
				if !ok {
					return
				}
				w.ack(id, "created")
				tag := fmt.Sprintf("n%d", i)
				if st, b := write("/public/v1/contact/"+id+"/tags", map[string]any{"tags": []string{tag}}); st != 200 {
					t.Errorf("add tag: %d %s", st, b)
					return
				}
				w.ack(id, tag)
			}
		}()
	}

	testkit.Eventually(t, fmt.Sprintf("%d acknowledged writes before the kill", beforeKill), func() bool { return w.count() >= beforeKill })
	if c.backendStatus("serve1") != "UP" || c.backendStatus("serve2") != "UP" {
		t.Fatalf("HAProxy does not have both API processes UP before the kill")
	}
	pid := c.pid("serve1")
	signalled := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "serve1's end", func() bool { return !running(pid) })
	exited := time.Now()
	testkit.Eventually(t, "HAProxy reporting serve1 DOWN", func() bool { return strings.HasPrefix(c.backendStatus("serve1"), "DOWN") })
	downSeen := time.Now()
	c.script("kill", "worker1")
	c.script("start", "serve1") // returns once its /readyz answers
	c.script("start", "worker1")
	testkit.Eventually(t, "HAProxy reporting serve1 UP again", func() bool { return c.backendStatus("serve1") == "UP" })
	backAt, acksBack := time.Now(), w.count()
	testkit.Eventually(t, fmt.Sprintf("%d acknowledged writes with serve1 back", afterBack), func() bool { return w.count() >= acksBack+afterBack })
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	report := hist.stop()
	t.Logf("history: %s", report)

	// Failures only at the kill: requests in flight to serve1 when it died, or sent to it
	// before HAProxy took it out.
	var late []string
	for _, f := range cl.failures {
		if f.sent.After(downSeen) || f.at.Before(signalled) {
			late = append(late, fmt.Sprintf("sent %s, failed %s after the SIGKILL: %s", f.sent.Sub(signalled).Round(time.Millisecond),
				f.at.Sub(signalled).Round(time.Millisecond), f.what))
		}
	}
	if len(late) > 0 {
		t.Errorf("%d failed requests not in flight at the kill (SIGKILL at 0, serve1 gone at %s, DOWN in HAProxy by %s):\n%s",
			len(late), exited.Sub(signalled).Round(time.Millisecond), downSeen.Sub(signalled).Round(time.Millisecond), strings.Join(late, "\n"))
	}
	t.Logf("load: %d requests in %s through HAProxy (%d acknowledged writes, %.0f/s); serve1 SIGKILLed at %s, gone %s later, DOWN in HAProxy %s after the signal, UP again at %s; worker1 killed and restarted; %d failed at the kill, %d retried with their Idempotency-Key, %d of those answered by a replay",
		sent.Load(), elapsed.Round(time.Millisecond), w.count(), float64(w.count())/elapsed.Seconds(),
		signalled.Sub(start).Round(time.Millisecond), exited.Sub(signalled).Round(time.Millisecond),
		downSeen.Sub(signalled).Round(time.Millisecond), backAt.Sub(start).Round(time.Millisecond), len(cl.failures),
		retried.Load(), replayed.Load())
	for i, f := range cl.failures {
		if i == 10 {
			t.Logf("  ... %d more", len(cl.failures)-10)
			break
		}
		t.Logf("  sent %s, failed %s after the SIGKILL: %s", f.sent.Sub(signalled).Round(time.Millisecond), f.at.Sub(signalled).Round(time.Millisecond), f.what)
	}

	// Every acknowledged write is in the database.
	conn := c.db(ctx)
	stored := map[string][]string{}
	rows, _ := conn.Query(ctx, "SELECT contact_id::text, tags FROM contacts WHERE email NOT LIKE '%@history.example'")
	var id string
	var tags []string
	if _, err := pgx.ForEachRow(rows, []any{&id, &tags}, func() error { stored[id] = tags; return nil }); err != nil {
		t.Fatal(err)
	}
	lost := 0
	for id, want := range w.tags {
		for _, tag := range want {
			if !slices.Contains(stored[id], tag) {
				lost++
				t.Errorf("acknowledged write lost: contact %s tag %q (stored: %v)", id, tag, stored[id])
			}
		}
	}

	// Every event reaches the receiver at least once, with one webhook-id per event.
	events := tagsAddedEvents(t, conn) // the history's too
	var writeEvents int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM webhook_events e JOIN contacts c USING (account_id, contact_id)
		WHERE e.event_type = 'TagsAdded' AND c.email NOT LIKE '%@history.example'`).Scan(&writeEvents); err != nil {
		t.Fatal(err)
	}
	// each write was retried with its key until answered: each happened exactly once
	if writeEvents != w.count() || len(stored) != len(w.tags) {
		t.Errorf("%d TagsAdded events for %d acknowledged writes, %d contacts for %d acknowledged creates",
			writeEvents, w.count(), len(stored), len(w.tags))
	}
	// a killed worker's attempts wait out their 12 s lease
	rc.waitDelivered(t, conn, events)
	got, dups, mismatched := rc.summary()
	if mismatched > 0 {
		t.Errorf("%d deliveries whose webhook-id is not their event's id: %s", mismatched, strings.Join(rc.mismatches[:min(3, len(rc.mismatches))], "\n"))
	}
	t.Logf("deliveries: %d events, %d requests received, %d duplicates (same webhook-id, redelivered after the killed worker's lease)", len(events), got, dups)
	ledger := checkLedger(t, conn, rc, events)
	t.Logf("ledger: %s", ledger)
	reportReliability(t, "An API process and a delivery worker killed (SIGKILL) and restarted (make test-cluster)",
		fmt.Sprintf("writes acknowledged: %d, lost: %d; %d requests failed, all in flight at the kill; serve1 DOWN in HAProxy %s after the signal",
			w.count(), lost, len(cl.failures), downSeen.Sub(signalled).Round(time.Millisecond)),
		"history: "+report.String()+" (reads at the cluster's 60 per 10 s)",
		"webhooks: "+ledger)

	c.checkRevocationReachesEveryNode(cl)
	c.checkRateLimitIsShared(cl)
}

// checkRevocationReachesEveryNode revokes a key that both API processes have cached and
// waits until each refuses it. Each must have heard the revocation's notification (its
// /metrics count), so the refusal is not its cache entry expiring.
func (c *cluster) checkRevocationReachesEveryNode(cl *client) {
	t := c.t
	nodes := []string{c.vars["CLUSTER_SERVE1"], c.vars["CLUSTER_SERVE2"]}
	// a node whose listener is down (reconnecting after a failover) caches no key: it
	// would refuse the revoked key from the database without hearing the revocation
	for _, n := range nodes {
		testkit.Eventually(t, n+" listening for key revocations", func() bool {
			v, _ := c.metric(n, `contactd_notifications_listening{channel="contactd_key_revoked"}`)
			return v == 1
		})
	}
	key := c.contactd("keys", "create", "--account", "demo", "--name", "to-revoke")
	heard := map[string]float64{}
	for _, n := range nodes {
		if st, b, _ := cl.do("GET", n+"/public/v1/contacts?limit=1", key, nil); st != 200 {
			t.Fatalf("%s with the new key: %d %s", n, st, b)
		}
		heard[n] = c.revocationsHeard(n)
	}
	revoking := time.Now()
	c.contactd("keys", "revoke", key[:11])
	for _, n := range nodes {
		testkit.Eventually(t, n+" refusing the revoked key", func() bool {
			st, b, _ := cl.do("GET", n+"/public/v1/contacts?limit=1", key, nil)
			if st != 200 && st != 401 && st != 429 {
				t.Fatalf("%s: %d %s", n, st, b)
			}
			return st == 401
		})
		if c.revocationsHeard(n) <= heard[n] {
			t.Errorf("%s refused the revoked key without hearing the revocation (its cache entry expired)", n)
		}
	}
	t.Logf("revocation: refused by both API processes %s after `contactd keys revoke` started", time.Since(revoking).Round(time.Millisecond))
}

// revocationsHeard is the node's count of key-revocation notifications heard.
func (c *cluster) revocationsHeard(node string) float64 {
	n, _ := c.metric(node, `contactd_notifications_heard_total{channel="contactd_key_revoked"}`)
	return n // none heard yet: the counter appears with the first
}

// metric is the value of the node's /metrics series (name and labels), and whether it has one.
func (c *cluster) metric(node, series string) (float64, bool) {
	c.t.Helper()
	resp, err := http.Get(node + "/metrics")
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			var n float64
			if _, err := fmt.Sscan(v, &n); err != nil {
				c.t.Fatalf("%s/metrics: %q: %v", node, sc.Text(), err)
			}
			return n, true
		}
	}
	return 0, false
}

// pid is the process id of a node, from its pid file.
func (c *cluster) pid(node string) int {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, node+".pid"))
	if err != nil {
		c.t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil {
		c.t.Fatalf("%s.pid: %v", node, err)
	}
	return pid
}

// running reports whether pid is a live process (not gone, not a zombie waiting to be reaped).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// backendStatus is HAProxy's own view of a server of the contactd backend ("UP", "DOWN",
// "DOWN 1/2", ...), from its stats page as CSV.
func (c *cluster) backendStatus(server string) string {
	c.t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/;csv", c.base+9))
	if err != nil {
		c.t.Fatalf("HAProxy stats: %v", err)
	}
	defer resp.Body.Close()
	rows, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil || len(rows) == 0 {
		c.t.Fatalf("HAProxy stats: %v", err)
	}
	col := slices.Index(rows[0], "status")
	for _, r := range rows[1:] {
		if len(r) > col && r[0] == "contactd" && r[1] == server {
			return r[col]
		}
	}
	c.t.Fatalf("HAProxy stats list no server %s", server)
	return ""
}

// checkRateLimitIsShared sends a fresh key's reads to both API processes in turn: together
// they allow the one budget, not one each.
func (c *cluster) checkRateLimitIsShared(cl *client) {
	t := c.t
	key := c.contactd("keys", "create", "--account", "demo", "--name", "rate")
	nodes := []string{c.vars["CLUSTER_SERVE1"], c.vars["CLUSTER_SERVE2"]}
	ok, limited := 0, 0
	start := time.Now()
	for i := range 2 * readsPer10s {
		st, b, h := cl.do("GET", nodes[i%2]+"/public/v1/contacts?limit=1", key, nil)
		switch st {
		case 200:
			ok++
		case 429:
			limited++
			if h.Get("Retry-After") == "" {
				t.Errorf("a 429 without Retry-After")
			}
		default:
			t.Fatalf("read %d: %d %s", i, st, b)
		}
	}
	elapsed := time.Since(start)
	// the sliding window admits the budget in any 10 s: once if the reads took less, once
	// more for each 10 s they took beyond (a busy machine)
	windows := int(elapsed/(10*time.Second)) + 1
	if ok < readsPer10s || ok > readsPer10s*windows {
		t.Errorf("%d of %d reads sent to two processes in %s were allowed; the budget is %d per 10 s",
			ok, 2*readsPer10s, elapsed.Round(time.Millisecond), readsPer10s)
	}
	t.Logf("rate limit: %d of %d reads alternating between the two API processes allowed in %s (budget %d per 10 s), %d refused",
		ok, 2*readsPer10s, elapsed.Round(time.Millisecond), readsPer10s, limited)
}

// receiver records deliveries by webhook-id.
type receiver struct {
	url        string
	mu         sync.Mutex
	byID       map[string][][]byte
	mismatched int
	mismatches []string // the first few, for the report
	requests   int
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{byID: map[string][][]byte{}}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		testkit.ValidatePayload(t, body)
		var payload struct {
			Events []struct {
				EventId  string `json:"eventId"`
				Redacted bool   `json:"redacted"`
			} `json:"events"`
		}
		_ = json.Unmarshal(body, &payload)
		id := r.Header.Get("webhook-id")
		rc.mu.Lock()
		rc.requests++
		if len(payload.Events) != 1 || payload.Events[0].EventId != id {
			rc.mismatched++
			rc.mismatches = append(rc.mismatches, fmt.Sprintf("webhook-id %s carried %s", id, tail(body, 400)))
		}
		// a second delivery sends what the first did, or the event's tombstone once its
		// contact was erased (docs/webhooks.md)
		tombstone := len(payload.Events) == 1 && payload.Events[0].Redacted
		for _, earlier := range rc.byID[id] {
			if !bytes.Equal(earlier, body) && !tombstone {
				rc.mismatched++
				rc.mismatches = append(rc.mismatches, fmt.Sprintf("webhook-id %s sent again with another body:\n  %s\n  %s", id, tail(earlier, 400), tail(body, 400)))
			}
		}
		rc.byID[id] = append(rc.byID[id], body)
		rc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	rc.url = "http://" + ln.Addr().String() + "/hook"
	return rc
}

func (rc *receiver) missing(events map[string]bool) int { return len(rc.undelivered(events)) }

// undelivered is the events of events the receiver has not received.
func (rc *receiver) undelivered(events map[string]bool) []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for id := range events {
		if len(rc.byID[id]) == 0 {
			out = append(out, id)
		}
	}
	return out
}

// waitDelivered waits until the receiver has every event of events. Past testkit.Patience it
// fails the test with what the database says of the deliveries still missing (their status,
// attempts, lease, next attempt and last error): why they were not sent is the finding.
func (rc *receiver) waitDelivered(t *testing.T, conn *pgx.Conn, events map[string]bool) {
	t.Helper()
	end := time.Now().Add(testkit.Patience)
	for rc.missing(events) > 0 {
		if time.Now().After(end) {
			missing := rc.undelivered(events)
			rows, err := conn.Query(context.Background(), `SELECT d.event_id::text, d.status, d.attempts,
				coalesce(d.leased_until::text, '-'), coalesce(d.next_attempt_at::text, '-'),
				coalesce((SELECT a.error FROM webhook_attempts a WHERE a.delivery_id = d.delivery_id ORDER BY a.attempt DESC LIMIT 1), '-')
				FROM webhook_deliveries d WHERE d.event_id = ANY($1::uuid[]) ORDER BY d.event_id LIMIT 20`, missing)
			var report strings.Builder
			if err == nil {
				var id, status, lease, next, last string
				var attempts int32
				_, err = pgx.ForEachRow(rows, []any{&id, &status, &attempts, &lease, &next, &last}, func() error {
					fmt.Fprintf(&report, "\n  event %s: %s, %d attempts, leased until %s, next %s, last error %s", id, status, attempts, lease, next, last)
					return nil
				})
			}
			t.Fatalf("waited %v and %d of %d events were not delivered (%v); their deliveries:%s", testkit.Patience, len(missing), len(events), err, report.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (rc *receiver) summary() (requests, duplicates, mismatched int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, bodies := range rc.byID {
		duplicates += len(bodies) - 1
	}
	return rc.requests, duplicates, rc.mismatched
}

// freePortRange finds n consecutive free loopback ports below the kernel's range for
// ephemeral ports. A port found free in that range can be taken by any process's outgoing
// connection (or a listener on port 0) before the cluster binds it, or rebinds it when the
// test restarts a node: one run beside a loaded make test failed with serve1's "bind: address
// already in use" on a port picked at 35452.
func freePortRange(t *testing.T, n int) int {
	t.Helper()
	const low = 10000
	high := 32768 // Linux's default first ephemeral port
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if first, err := strconv.Atoi(strings.Fields(string(b))[0]); err == nil && first > low+n {
			high = first
		}
	}
	ranges := (high - low) / n
	for i := range ranges {
		base := low + ((os.Getpid()+i)%ranges)*n
		free := true
		for p := base; p < base+n && free; p++ {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				free = false
				continue
			}
			ln.Close()
		}
		if free {
			return base
		}
	}
	t.Fatal("no free port range")
	return 0
}

func readEnv(t *testing.T, path string) map[string]string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
		if k, v, ok := strings.Cut(line, "="); ok {
			vars[k] = strings.Trim(v, "'") // a multi-host URL is quoted: its & would end the command
		}
	}
	return vars
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
