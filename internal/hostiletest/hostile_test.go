// Package hostiletest runs one account's attacks on a shared contactd beside another
// account's ordinary work. It is a package of its own so that the process it measures (its
// goroutines, its heap) holds this test alone.
package hostiletest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/config"
	"github.com/contactd/contactd/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// The bound of the bystander's reads under attack: a multiple of its slowest quiet read in the
// same run, or the floor when that is larger (a quiet read on an idle machine takes a
// millisecond, and a busy CI machine's scheduling alone costs more than a hundred).
const (
	bystanderMultiple = 100
	bystanderFloor    = time.Second
)

// pastDeadline is send's status for a 503 of a request stopped at its deadline
// (CONTACTD_REQUEST_TIMEOUT): a limit's answer, as a 429 is, not a failure of the server's.
const pastDeadline = -http.StatusServiceUnavailable

// Tenant B attacks with every kind of request that could take what others need: a flood of
// unauthenticated probes, exports it never reads, the biggest feed pages, replays queued to
// receivers that hang, the console as fast as it answers, and what is priced at its price:
// values of the costliest patterns, batches evaluated against the segment budget, searches at
// their budget, a segment edited again and again, bodies with a NUL (costly_test.go). Meanwhile tenant A reads its
// contact and receives its webhooks, with the default limits on. A gets an answer to every
// read (no 5xx, no timeout) and every webhook; the process's heap stays bounded while it
// lasts; and afterwards its goroutines and heap return to where they were.
func TestAHostileTenantCannotHurtAnother(t *testing.T) {
	a := testkit.NewAPI(t, testkit.LocalDelivery, func(c *config.Config) {
		d := config.Default()
		c.RateReadsPer10s, c.RateWritesPer10s, c.RateAccountPerDay = d.RateReadsPer10s, d.RateWritesPer10s, d.RateAccountPerDay
		// fewer workers than B's slow receivers can hold (6 receivers x 4), each freed after a
		// second: who gets a freed worker is what is tested
		c.WebhookWorkers, c.WebhookTimeout, c.WebhookRescueAfter = 16, 2*time.Second, 13*time.Second
		// a stalled export's connection goes at WriteTimeout (here nothing else: the test's
		// server has no write timeout), and a request's work at RequestTimeout: B's batches of
		// 1,000 costly items take minutes on a busy machine, and are cut there, their later
		// pages failed with 503; its replays, which queue the backlog the test needs, fit (A's
		// reads are bounded tighter than this by the test)
		c.WriteTimeout, c.RequestTimeout = 12*time.Second, 10*time.Second
	})
	ctx := context.Background()
	accountB, keyB := a.Account("hostile")
	accountA, keyA := a.Account("ordinary")
	// A's requests give up after 30 s: a generous bound (A's reads take milliseconds beside the
	// attack, even on a busy machine), there so that a starved A fails the test, not hangs it
	client := &http.Client{Transport: testkit.ValidatingTransport(t), Timeout: 30 * time.Second}
	// B's attack checks its first answer of each kind against the spec and sends the rest
	// unchecked: validating megabytes of feed pages would spend the CPU the server under test
	// needs (an attacker's own CPU is elsewhere)
	plain := &http.Client{Timeout: time.Minute}
	send := func(c *http.Client, method, path, key string, body string) (int, error) {
		req, _ := http.NewRequest(method, a.URL+path, strings.NewReader(body))
		if key != "" {
			req.Header.Set("x-api-key", key)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable {
			if b, _ := io.ReadAll(resp.Body); bytes.Contains(b, []byte("ran past its deadline")) {
				return pastDeadline, nil
			}
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	get := func(c *http.Client, path, key string) (int, string, error) {
		req, _ := http.NewRequest("GET", a.URL+path, nil)
		req.Header.Set("x-api-key", key)
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}

	// A: one contact, a receiver for its tag changes
	var created api.CreateContactResult
	if r := a.Do("POST", "/public/v1/contact", keyA, map[string]any{"email": "a@example.com"}); r.Status != 200 {
		t.Fatalf("A's contact: %d %s", r.Status, r.Body)
	} else {
		r.JSON(t, &created)
	}
	contactA := created.Contact.ContactId
	receiverA := testkit.NewReceiver(t)
	if r := a.Do("POST", "/public/v1/webhooks", keyA, map[string]any{"url": receiverA.URL, "eventType": "TagsAdded"}); r.Status != 200 {
		t.Fatalf("A subscribes: %d %s", r.Status, r.Body)
	}

	// B: 5,000 contacts of 2 KiB to export (10 MB: more than the kernel's socket buffers take
	// in, so an export no one reads stalls), 2,000 events of 8 KiB and 2,000 small ones for
	// feed pages and replays, six receivers that each take a second to answer
	crmURL := "https://crm.example.com/" + strings.Repeat("x", 2000)
	for i := range 5 {
		var items []string
		for j := range 1000 {
			items = append(items, fmt.Sprintf(`{"email":"b%d-%d@example.com","name":"B %d","crmFields":{"url":%q}}`, i, j, j, crmURL))
		}
		if r := a.Do("POST", "/public/v1/contacts/batch", keyB, `{"contacts":[`+strings.Join(items, ",")+`]}`); r.Status != 200 {
			t.Fatalf("B's batch: %d %s", r.Status, r.Body)
		}
	}
	// one real handoff of 8 KiB and one tag change, each copied 2,000 times under new ids (the
	// feed shows exactly the stored payload, so the copies are events of the spec too)
	var one api.CreateContactResult
	a.Do("POST", "/public/v1/contact", keyB, map[string]any{"email": "handoff@example.com", "tags": []string{"x"}}).JSON(t, &one)
	if r := a.Do("POST", "/public/v1/contact/"+one.Contact.ContactId+"/activity", keyB, map[string]any{"type": "AIHandoff",
		"details": map[string]any{"transcript": strings.Repeat("x", 8000)}}); r.Status != 200 {
		t.Fatalf("B's handoff: %d %s", r.Status, r.Body)
	}
	if _, err := a.Store.Pool.Exec(ctx, `INSERT INTO webhook_events (account_id, event_id, event_type, payload, occurred_at)
		SELECT account_id, id, event_type, replace(payload::text, event_id::text, id::text)::json, occurred_at - g * interval '1 millisecond'
		FROM (SELECT e.*, g, uuid_v7(e.occurred_at - g * interval '1 millisecond') AS id FROM webhook_events e, generate_series(1, 2000) g
		      WHERE e.account_id = $1 AND e.event_type IN ('FelixAIHandoff', 'TagsAdded')) copies`, accountB); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	var servers []*http.Server
	var hanging []string
	for _, eventType := range []string{"FelixAIHandoff", "TagsAdded"} {
		for i := range 3 {
			hang := http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select { // slow, never failing: a receiver keeps its room of 4 attempts only while it succeeds
				case <-time.After(time.Second):
				case <-release:
				case <-r.Context().Done():
				}
				w.WriteHeader(http.StatusNoContent)
			})}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go hang.Serve(ln)
			servers = append(servers, &hang)
			var sub api.WebhookSubscription
			if r := a.Do("POST", "/public/v1/webhooks", keyB, map[string]any{"url": fmt.Sprintf("http://%s/%s/%d", ln.Addr(), eventType, i),
				"eventType": eventType, "filter": testkit.HeaviestFilter(eventType)}); r.Status != 200 {
				t.Fatalf("B subscribes: %d %s", r.Status, r.Body)
			} else {
				r.JSON(t, &sub)
			}
			hanging = append(hanging, sub.SubscriptionId)
		}
	}
	a.StartWorkers()
	t.Cleanup(func() { // before the workers stop: cleanups run last first
		releaseAll()
		for _, srv := range servers {
			srv.Close()
		}
	})

	// each attack with a key of its own, so that one key's rate limit does not end the others;
	// each used once before the attack, as a tenant's keys are, so that this process knows it
	// when the random keys' lookups are refused from this address
	testkit.Eventually(t, "the key cache", a.Svc.Auth.Caching)
	bKey := func(name string) string {
		k, err := a.Svc.Auth.CreateKey(ctx, accountB, name)
		if err != nil {
			t.Fatal(err)
		}
		if status, err := send(client, "GET", "/public/v1/webhooks", k, ""); err != nil || status != 200 {
			t.Fatalf("B's key %s: %d %v", name, status, err)
		}
		return k
	}
	a.SeededMemberships("B's costly segments over its 5,000 contacts are judged by the segment tests: the oracle's SQL over them takes minutes")
	costs := prepareCostly(t, a, bKey)
	testkit.Eventually(t, "B's costly segments evaluated on its contacts", func() bool {
		return a.Count(t, "SELECT count(*) FROM segments WHERE account_id = $1 AND status <> 'ready'", accountB) == 0
	})
	// a write of B's before the baseline: its segments, compiled, are then held in it (B's
	// rules, not its attack)
	if status, err := send(client, "POST", "/public/v1/contact/"+one.Contact.ContactId+"/tags", bKey("warm"), `{"tags":["warm"]}`); err != nil || status != 200 {
		t.Fatalf("B's first write: %d %v", status, err)
	}
	// A's reads before the attack: the bound of its reads during it is a multiple of these
	var quiet time.Duration
	for range 30 {
		start := time.Now()
		if status, err := send(client, "GET", "/public/v1/contact?contactId="+contactA, keyA, ""); err != nil || status != 200 {
			t.Fatalf("A's quiet read: %d %v", status, err)
		}
		quiet = max(quiet, time.Since(start))
	}
	before := testkit.TakeBaseline()
	before.Heap -= a.Logs.Held() // the test's copy of the logs grows with B's requests: not the service's
	stopAttack := make(chan struct{})
	var attacks sync.WaitGroup
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(func() { close(stopAttack) }); attacks.Wait() }
	t.Cleanup(stop) // a failure before the end stops the attack before the server goes
	var attackErrors, attackRequests atomic.Int64
	attack := func(name string, one func(c *http.Client) error) {
		attacks.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stopAttack:
					return
				default:
				}
				c := plain
				if i == 0 {
					c = client
				}
				attackRequests.Add(1)
				if err := one(c); err != nil {
					attackErrors.Add(1)
					t.Logf("%s: %v", name, err)
				}
			}
		})
	}
	// any answer a limit gives is fine for B; an error of the server's (5xx) or none is not
	answered := func(what string, status int, err error) error {
		if err == nil && status >= 500 {
			err = fmt.Errorf("%s answered %d", what, status)
		}
		return err
	}
	for _, path := range []string{"/readyz", "/healthz"} {
		attack("probe flood", func(c *http.Client) error {
			status, err := send(c, "GET", path, "", "")
			return answered(path, status, err)
		})
	}
	for i := range 20 { // twenty pages at once, each with a key of its own
		feedKey := bKey(fmt.Sprintf("feed %d", i))
		attack("feed pages", func(c *http.Client) error {
			status, err := send(c, "GET", "/public/v1/events?limit=1000&eventType=FelixAIHandoff", feedKey, "")
			return answered("the feed", status, err)
		})
	}
	// filter-test as fast as it answers: the costliest legal filter on an event of the most
	// values one may hold (an evaluation bounded in steps), and on 60 KiB of nested arrays (as
	// lax SQL/JSON unwrapped them, 42.7 s of PostgreSQL's CPU; refused now, unevaluated)
	for i, event := range []string{biggestEvent(), nestedArrays(60 << 10)} {
		filterKey := bKey(fmt.Sprintf("filter-test %d", i))
		body := fmt.Sprintf(`{"filter":%s,"event":%s}`, mustJSON(testkit.HeaviestFilter("FelixAIHandoff")), event)
		attack("filter-test flood", func(c *http.Client) error {
			status, err := send(c, "POST", "/public/v1/webhooks/"+hanging[0]+"/filter-test", filterKey, body)
			return answered("filter-test", status, err)
		})
	}
	// B writes at its limit, each tag change's event evaluated against the heaviest filters of
	// its three subscriptions
	for i := range 3 {
		writeKey := bKey(fmt.Sprintf("writes %d", i))
		attack("tag changes at the limit", func(c *http.Client) error {
			status, err := send(c, "POST", "/public/v1/contact/"+one.Contact.ContactId+"/tags", writeKey,
				fmt.Sprintf(`{"tags":["w%d-%d"]}`, i, time.Now().UnixNano()%1000))
			return answered("a tag change", status, err)
		})
	}
	since, until := time.Now().Add(-2*time.Hour).UTC().Format("2006-01-02T15:04:05.000Z"), time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	replayKey := bKey("replay")
	for _, sub := range hanging {
		attack("replays", func(c *http.Client) error {
			status, err := send(c, "POST", "/public/v1/webhooks/"+sub+"/replay", replayKey, fmt.Sprintf(`{"since":%q,"until":%q}`, since, until))
			return answered("a replay", status, err)
		})
	}
	// more exports than the pool has connections (16), each read to its status line and then
	// never again: the client's buffers fill and the server's writes block
	exportKey := bKey("export")
	stalling := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32, DisableCompression: true, DialContext: (&net.Dialer{
		Control: func(_, _ string, c syscall.RawConn) error { // a small window: the server's writes block sooner
			return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		}}).DialContext}}
	for range 20 {
		attack("stalled exports", func(*http.Client) error {
			req, _ := http.NewRequest("GET", a.URL+"/public/v1/contacts/export", nil)
			req.Header.Set("x-api-key", exportKey)
			resp, err := stalling.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				<-stopAttack // holds it, unread, to the end: the server's write deadline is what ends it
				return nil
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			return answered("an export", resp.StatusCode, nil)
		})
	}
	jar, _ := cookiejar.New(nil)
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	console := map[*http.Client]*http.Client{
		client: {Jar: jar, Transport: testkit.ValidatingTransport(t), Timeout: time.Minute, CheckRedirect: noRedirect},
		plain:  {Jar: jar, Timeout: time.Minute, CheckRedirect: noRedirect},
	}
	if resp, err := console[client].PostForm(a.URL+"/console/login", url.Values{"key": {bKey("console")}}); err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("B signs in to the console: %v %v", resp, err)
	}
	attack("console pages", func(c *http.Client) error {
		status, err := send(console[c], "GET", "/console/contacts", "", "")
		return answered("a console page", status, err)
	})
	attack("console forms", func(c *http.Client) error {
		resp, err := console[c].PostForm(a.URL+"/console/contacts/x/tags", url.Values{"tag": {strings.Repeat("x", 1<<20)}})
		if err != nil {
			return err
		}
		resp.Body.Close()
		return answered("a console form", resp.StatusCode, nil)
	})
	// well-formed random keys, each a key no one has (started last: every key of the attack is
	// made and known by then)
	var randomKeys, refusedKeys atomic.Int64
	lookupsBefore := a.Svc.Auth.Lookups()
	attack("random keys", func(c *http.Client) error {
		n := randomKeys.Add(1)
		status, err := send(c, "GET", "/public/v1/webhooks", fmt.Sprintf("ck_%043d", n), "")
		if status == http.StatusTooManyRequests {
			refusedKeys.Add(1)
		}
		return answered("a random key", status, err)
	})

	costlyAttacks(costs, send, attack, answered)

	// B's deliveries queued by a time and not yet taken by a worker: a row leaves the count when
	// it is claimed, so the count at A's webhook against the count at A's change is how much of
	// B's older backlog went before A's event
	unclaimedB := func(queuedBy time.Time) int {
		return a.Count(t, `SELECT count(*) FROM webhook_deliveries WHERE account_id = $1 AND status = 'Pending'
			AND attempts = 0 AND leased_until IS NULL AND created_at <= $2`, accountB, queuedBy)
	}
	testkit.Eventually(t, "B's replays queue a backlog", func() bool { return unclaimedB(time.Now()) >= 1000 })

	// A's list page, sent while B's feed pages wait for the heavy reads' turns, is given a turn
	// ahead of them (B runs every turn, A none): it waits for one of B's pages to end, not for
	// all of B's queue. (B's queue may empty between the look and A's page, its keys refused
	// for a while by their limits: then A's page is not queued at all, and it is tried again.)
	refusedBefore := a.Store.GroupsRefused()
	aheadOfB := false
	for try := 0; try < 5 && !aheadOfB; try++ {
		testkit.Eventually(t, "B's feed pages waiting for turns", func() bool { return a.Svc.Turns.QueuedOf(accountB) > 0 })
		overtook := a.Svc.Turns.Overtaken()
		if status, err := send(client, "GET", "/public/v1/contacts?limit=50", keyA, ""); err != nil || status != 200 {
			t.Errorf("A's list page during the attack: %d %v", status, err)
		}
		aheadOfB = a.Svc.Turns.Overtaken() > overtook
	}
	if !aheadOfB {
		t.Errorf("A's list page waited behind B's queued feed pages, five times")
	}

	// A, meanwhile: 30 reads and 3 tag changes, each answered, each tag change delivered ahead of
	// B's backlog; no group commit refused (a write that waited on another's filter, or a
	// statement cancelled at its timeout, would be)
	var peakHeap uint64
	var latencies []time.Duration
	var overtaken []string
	var feedDelays []time.Duration
	var segA struct {
		SegmentID string `json:"segmentId"`
	}
	if r := a.Do("POST", "/public/v1/segments", keyA, map[string]any{"name": "A's", "filter": map[string]any{"groups": []any{
		map[string]any{"conditions": []any{map[string]any{"attribute": "tags", "operator": "contains", "value": "t0"}}}}}}); r.Status != 200 {
		t.Fatalf("A's segment: %d %s", r.Status, r.Body)
	} else {
		r.JSON(t, &segA)
	}
	for i := range 30 {
		start := time.Now()
		status, err := send(client, "GET", "/public/v1/contact?contactId="+contactA, keyA, "")
		latencies = append(latencies, time.Since(start))
		if err != nil || status != 200 {
			t.Errorf("A's read %d during the attack: %d %v", i, status, err)
			break
		}
		if i%10 == 0 {
			changed := time.Now()
			backlog := unclaimedB(changed)
			if status, err := send(client, "POST", "/public/v1/contact/"+contactA+"/tags", keyA, fmt.Sprintf(`{"tags":["t%d"]}`, i)); err != nil || status != 200 {
				t.Errorf("A's tag change %d during the attack: %d %v", i, status, err)
			}
			// in A's feed, from its write's answer: shown once no transaction of A's in flight
			// can place an event before it; B's transactions (batch pages, backfills) do not
			// hold it back
			written := time.Now()
			testkit.Eventually(t, "A's event in its feed", func() bool {
				status, body, err := get(client, "/public/v1/events?eventType=TagsAdded&limit=100", keyA)
				return err == nil && status == 200 && strings.Contains(body, fmt.Sprintf(`"t%d"`, i))
			})
			feedDelays = append(feedDelays, time.Since(written))
			receiverA.Next(t)
			// the free workers go to the account holding the fewest: A's event takes the next one,
			// while nearly all of B's older backlog still waits (a worker takes a B delivery a
			// second at most); oldest-first, A's waited for all of it
			left := unclaimedB(changed)
			overtaken = append(overtaken, fmt.Sprintf("%d of %d", left, backlog))
			if left*2 < backlog {
				t.Errorf("A's webhook %d waited behind B's backlog: %d of B's %d older deliveries went first", i/10, backlog-left, backlog)
			}
		}
		peakHeap = max(peakHeap, testkit.TakeBaseline().Heap-a.Logs.Held())
	}
	segmentReady(t, a, accountA, segA.SegmentID)
	stop()
	if n := a.Store.GroupsRefused() - refusedBefore; n != 0 {
		t.Errorf("%d group commits were refused during the attack, and their writes sent again alone", n)
	}
	// past the per-address allowance the random keys are refused, and a refused key costs no
	// lookup (those are the only keys this process had not seen since the attack began)
	sent, refused, looked := randomKeys.Load(), refusedKeys.Load(), int64(a.Svc.Auth.Lookups()-lookupsBefore)
	if refused == 0 || looked > sent-refused {
		t.Errorf("%d random keys, %d refused, cost %d key lookups", sent, refused, looked)
	} else {
		t.Logf("%d random keys, %d refused, cost %d key lookups", sent, refused, looked)
	}
	slices.Sort(latencies)
	t.Logf("A's events in its feed after its writes answered: %v", feedDelays)
	t.Logf("A's reads quiet: max %v; during the attack: p50 %v, max %v; its webhooks overtook %v of B's older deliveries; live heap peaked at %d MB (%d MB before); B sent %d requests, %d got a 5xx or no answer",
		quiet, latencies[len(latencies)/2], latencies[len(latencies)-1], overtaken, peakHeap>>20, before.Heap>>20, attackRequests.Load(), attackErrors.Load())
	if n := attackErrors.Load(); n > 0 {
		t.Errorf("%d of B's requests got a 5xx or no answer", n)
	}
	// a promise, not a timing of the machine: generous (what B's attacks made of A's reads
	// before they were bounded was seconds), and kept
	if worst, bound := slices.Max(feedDelays), max(bystanderMultiple*quiet, bystanderFloor); worst > bound {
		t.Errorf("A's event reached its feed %v after its write was answered, over %v (the bound of its reads)", worst, bound)
	}
	if worst, bound := latencies[len(latencies)-1], max(bystanderMultiple*quiet, bystanderFloor); worst > bound {
		t.Errorf("A's slowest read during the attack took %v, over %v (%d times its slowest of 30 quiet reads, %v, or %v)",
			worst, bound, bystanderMultiple, quiet, bystanderFloor)
	}
	// eight feed pages of about 1 MiB each (held a few times over while they are built and
	// written), two stalled exports' buffers, console pages: 83-104 MB over the baseline in eight
	// runs alone on the 2-core machine (go test -v -run TestAHostileTenantCannotHurtAnother), and
	// 129 once inside make test: near the bound, which is a known flake.
	// Eight pages of 1,000 8-KiB events, as the feed built them before it counted bytes, took
	// it 159 MB over.
	if peakHeap > before.Heap+128<<20 {
		t.Errorf("live heap peaked at %d MB, %d MB over the baseline", peakHeap>>20, (peakHeap-before.Heap)>>20)
	}

	// afterwards: B's subscriptions paused and its receivers let go, the attempts under way
	// end, B's receivers close; then the process holds what it held before the attack
	for _, sub := range hanging {
		if r := a.Do("PATCH", "/public/v1/webhooks/"+sub, keyB, map[string]any{"paused": true}); r.Status != 200 {
			t.Fatalf("pause: %d %s", r.Status, r.Body)
		}
	}
	releaseAll()
	testkit.Eventually(t, "B's attempts under way ending", func() bool {
		return a.Count(t, `SELECT count(*) FROM webhook_deliveries WHERE leased_until IS NOT NULL`) == 0
	})
	for _, srv := range servers { // their connections, idle in the workers' pool, go with them
		srv.Close()
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	stalling.CloseIdleConnections()
	before.Returned(t, 20, 64<<20+a.Logs.Held())
}

// biggestEvent is an event of the most JSON values a filter is evaluated on (2,048): filter-test
// refuses a bigger one before evaluating anything.
func biggestEvent() string {
	values := make([]int, 2048-4) // the event, eventType, data and data.a count four
	return mustJSON(map[string]any{"eventType": "FelixAIHandoff", "data": map[string]any{"a": values}})
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// nestedArrays is an event of about size bytes whose data holds arrays of arrays of numbers,
// none longer than the body's 1,000 items.
func nestedArrays(size int) string {
	var b strings.Builder
	b.WriteString(`{"eventType":"FelixAIHandoff","data":{"a":[`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("[[1,2,3,4,5,6,7,8],[1,2,3,4,5,6,7,8],[1,2,3,4,5,6,7,8]]")
		if i == 900 {
			break
		}
	}
	b.WriteString("]}}")
	return b.String()
}
