package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/internal/testkit"
)

// A history of single-contact operations sent through HAProxy while the cluster loses nodes,
// checked for linearizability per contact with porcupine: every operation must take effect
// at one instant between its call and its return, in an order that a single copy of the
// contact explains. A write is retried with its Idempotency-Key until it is answered, so it
// is one operation from its first attempt to its answer; a read that failed did nothing, and
// is one operation from the attempt that was answered. A write never answered (the history
// stopped first) may have taken effect or not.

type historyOp int

const (
	opCreate historyOp = iota
	opGet
	opRename
	opTag
	opErase
)

var historyOpNames = []string{"create", "get", "rename", "tag", "erase"}

type historyInput struct {
	contact int // the history's own number of the contact: a partition
	op      historyOp
	value   string // a create's or rename's name, a tag
}

type historyOutput struct {
	unknown bool // a write never answered
	found   bool // 404: false
	name    string
	tags    string // in order, joined by ","
}

type historyState struct {
	created, erased bool
	name, tags      string
}

func (s historyState) live() bool { return s.created && !s.erased }

// historyModel is one contact as a single copy would hold it.
var historyModel = porcupine.NondeterministicModel{
	Partition: func(ops []porcupine.Operation) [][]porcupine.Operation {
		by := map[int][]porcupine.Operation{}
		for _, op := range ops {
			c := op.Input.(historyInput).contact
			by[c] = append(by[c], op)
		}
		out := make([][]porcupine.Operation, 0, len(by))
		for _, p := range by {
			out = append(out, p)
		}
		return out
	},
	Init: func() []any { return []any{historyState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(historyState), input.(historyInput), output.(historyOutput)
		next := s
		switch in.op {
		case opCreate:
			if s.created {
				return nil // a contact is created once
			}
			next.created, next.name = true, in.value
		case opGet:
			if out.found != s.live() || (out.found && (out.name != s.name || out.tags != s.tags)) {
				return nil
			}
			return []any{s}
		case opRename:
			next.name = in.value
		case opTag:
			next.tags = strings.Trim(s.tags+","+in.value, ",")
		case opErase:
			next.erased = true
		}
		if in.op != opCreate && !s.live() {
			next = s // a write of a contact that is not there changes nothing, and answers 404
		}
		switch {
		case out.unknown:
			return []any{s, next}
		case in.op == opCreate:
			return []any{next}
		case out.found != s.live():
			return nil
		case in.op == opRename && out.found && (out.name != next.name || out.tags != next.tags):
			return nil
		case in.op == opTag && out.found && out.tags != next.tags:
			return nil
		}
		return []any{next}
	},
	Equal: func(a, b any) bool { return a.(historyState) == b.(historyState) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(historyInput), output.(historyOutput)
		switch {
		case out.unknown:
			return fmt.Sprintf("%s(%s) -> unknown", historyOpNames[in.op], in.value)
		case !out.found:
			return fmt.Sprintf("%s(%s) -> 404", historyOpNames[in.op], in.value)
		}
		return fmt.Sprintf("%s(%s) -> %q [%s]", historyOpNames[in.op], in.value, out.name, out.tags)
	},
	DescribeState: func(state any) string {
		s := state.(historyState)
		return fmt.Sprintf("created %v erased %v %q [%s]", s.created, s.erased, s.name, s.tags)
	},
}

// history runs workers that send single-contact operations until stopped, and records them.
type history struct {
	t        *testing.T
	cl       *client
	url, key string
	start    time.Time
	stopped  atomic.Bool
	wg       sync.WaitGroup

	mu       sync.Mutex
	ops      []porcupine.Operation
	contacts []string // by the history's number: the contact's id once created
	retries  int
	refused  int // 401s for the valid key
}

// startHistory starts workers sending operations through url with key.
func startHistory(t *testing.T, cl *client, url, key string, workers int, seed uint64) *history {
	h := &history{t: t, cl: cl, url: url, key: key, start: time.Now()}
	for w := range workers {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		h.wg.Go(func() { h.work(w, rng) })
	}
	return h
}

func (h *history) now() int64 { return int64(time.Since(h.start)) }

func (h *history) record(worker int, in historyInput, out historyOutput, call, ret int64) {
	h.mu.Lock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: worker, Input: in, Call: call, Output: out, Return: ret})
	h.mu.Unlock()
}

func (h *history) work(worker int, rng *rand.Rand) {
	for n := 0; !h.stopped.Load(); n++ {
		if os.Getenv("CONTACTD_HISTORY_WORKERS") == "" {
			time.Sleep(50 * time.Millisecond) // make test's short history: a few thousand operations, not a load of its own
		}
		h.mu.Lock()
		created := len(h.contacts)
		h.mu.Unlock()
		roll := rng.IntN(100)
		if created < 4 || roll < 4 {
			h.create(worker, n)
			continue
		}
		c := rng.IntN(created)
		h.mu.Lock()
		id := h.contacts[c]
		h.mu.Unlock()
		if id == "" {
			continue // its create is not answered yet
		}
		switch {
		case roll < 7:
			h.send(worker, historyInput{contact: c, op: opErase}, "POST", "/public/v1/contact/"+id+"/erase", nil)
		case roll < 50:
			h.send(worker, historyInput{contact: c, op: opGet}, "GET", "/public/v1/contact?contactId="+id, nil)
		case roll < 75:
			name := fmt.Sprintf("n%d-%d", worker, n)
			h.send(worker, historyInput{contact: c, op: opRename, value: name}, "PATCH", "/public/v1/contact/"+id, map[string]any{"name": name})
		default:
			tag := fmt.Sprintf("t%d-%d", worker, n)
			h.send(worker, historyInput{contact: c, op: opTag, value: tag}, "POST", "/public/v1/contact/"+id+"/tags", map[string]any{"tags": []string{tag}})
		}
	}
}

func (h *history) create(worker, n int) {
	h.mu.Lock()
	c := len(h.contacts)
	h.contacts = append(h.contacts, "")
	h.mu.Unlock()
	name := fmt.Sprintf("c%d-%d", worker, n)
	in := historyInput{contact: c, op: opCreate, value: name}
	out, id := h.send(worker, in, "POST", "/public/v1/contact", map[string]any{"email": fmt.Sprintf("h%d-%d-%s@history.example", worker, n, uuid.NewString()[:8]), "name": name})
	if out.found {
		h.mu.Lock()
		h.contacts[c] = id
		h.mu.Unlock()
	}
}

// send makes one operation: attempts until one is answered (a write's with one
// Idempotency-Key), recorded from its call to that answer; a write still unanswered when the
// history stops is recorded as unknown, returning at the end.
func (h *history) send(worker int, in historyInput, method, path string, body any) (historyOutput, string) {
	var headers []string
	if method != "GET" {
		headers = []string{"Idempotency-Key", uuid.NewString()}
	}
	call := h.now()
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			h.mu.Lock()
			h.retries++
			h.mu.Unlock()
			if h.stopped.Load() {
				if method != "GET" {
					h.record(worker, in, historyOutput{unknown: true}, call, 1<<62)
				}
				return historyOutput{unknown: true}, ""
			}
			time.Sleep(20 * time.Millisecond)
		}
		if method == "GET" {
			call = h.now() // a read that failed did nothing
		}
		st, b, _ := h.cl.do(method, h.url+path, h.key, body, headers...)
		ret := h.now()
		if st == http.StatusUnauthorized {
			h.mu.Lock()
			h.refused++
			h.mu.Unlock()
			continue
		}
		if st == http.StatusTooManyRequests {
			time.Sleep(200 * time.Millisecond) // the key's reads per 10 s (the cluster test's)
			continue
		}
		if st == 0 || st >= 500 || st == http.StatusConflict {
			continue // not answered, or refused before it ran
		}
		out, id, err := historyAnswer(in.op, st, b)
		if err != nil {
			h.t.Errorf("%s %s: %v", method, path, err)
			return historyOutput{unknown: true}, ""
		}
		h.record(worker, in, out, call, ret)
		return out, id
	}
}

// historyAnswer reads an answer into the model's output (and a create's contact id).
func historyAnswer(op historyOp, status int, body []byte) (historyOutput, string, error) {
	if status == http.StatusNotFound && op != opCreate {
		return historyOutput{}, "", nil
	}
	if status != http.StatusOK {
		return historyOutput{}, "", fmt.Errorf("%d %s", status, tail(body, 300))
	}
	var c struct {
		ContactID string   `json:"contactId"`
		Name      *string  `json:"name"`
		Tags      []string `json:"tags"`
		Contact   *struct {
			ContactID string `json:"contactId"`
		} `json:"contact"`
	}
	if err := json.Unmarshal(body, &c); err != nil {
		return historyOutput{}, "", err
	}
	out := historyOutput{found: true, tags: strings.Join(c.Tags, ",")}
	if c.Name != nil {
		out.name = *c.Name
	}
	if op == opCreate {
		if c.Contact == nil {
			return historyOutput{}, "", fmt.Errorf("a create's answer without its contact: %s", tail(body, 300))
		}
		return out, c.Contact.ContactID, nil
	}
	return out, "", nil
}

// stop ends the workers and checks the history: it fails the test when no single copy of
// each contact explains it (the visualization is written beside the test's logs), and
// returns what it saw.
func (h *history) stop() historyReport {
	h.stopped.Store(true)
	h.wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	r := historyReport{ops: len(h.ops), contacts: len(h.contacts), retries: h.retries, refused: h.refused, byOp: map[string]int{}}
	for _, op := range h.ops {
		r.byOp[historyOpNames[op.Input.(historyInput).op]]++
		if op.Output.(historyOutput).unknown {
			r.unknown++
		}
	}
	start := time.Now()
	result, info := porcupine.CheckOperationsVerbose(historyModel.ToModel(), h.ops, 2*time.Minute)
	r.checked, r.result = time.Since(start), result
	switch result {
	case porcupine.Illegal:
		path := filepath.Join(os.TempDir(), fmt.Sprintf("contactd-history-%d.html", time.Now().UnixNano()))
		err := porcupine.VisualizePath(historyModel.ToModel(), info, path)
		h.t.Errorf("the history of %d operations on %d contacts is not linearizable: a client saw what no single copy of a contact explains (visualization: %s, %v)",
			r.ops, r.contacts, path, err)
	case porcupine.Unknown:
		h.t.Errorf("the linearizability check of %d operations did not finish in 2 minutes", r.ops)
	}
	if r.refused > 0 {
		h.t.Errorf("%d attempts of the history with the valid key were answered 401", r.refused)
	}
	return r
}

type historyReport struct {
	ops, contacts, retries, refused, unknown int
	byOp                                     map[string]int
	checked                                  time.Duration
	result                                   porcupine.CheckResult
}

func (r historyReport) String() string {
	var kinds []string
	for _, name := range historyOpNames {
		kinds = append(kinds, fmt.Sprintf("%d %s", r.byOp[name], name))
	}
	verdict := map[porcupine.CheckResult]string{porcupine.Ok: "linearizable", porcupine.Illegal: "NOT linearizable", porcupine.Unknown: "undecided"}[r.result]
	return fmt.Sprintf("%d operations on %d contacts (%s), %d retried attempts, %d writes unanswered at the end: %s (checked in %s)",
		r.ops, r.contacts, strings.Join(kinds, ", "), r.retries, r.unknown, verdict, r.checked.Round(time.Millisecond))
}

// checkLedger holds the webhook ledger once every event was received: each event of the
// subscribed type has one delivery per subscription; each delivery is delivered, pending
// or given up, and in the end delivered (the receiver was up); the receiver got each event
// (duplicates are at-least-once's, counted). It returns the ledger's line.
func checkLedger(t *testing.T, conn *pgx.Conn, rc *receiver, events map[string]bool) string {
	t.Helper()
	ctx := context.Background()
	var published, deliveries, succeeded, pending, failed int
	ledger := func() error {
		return conn.QueryRow(ctx, `SELECT
				(SELECT count(*) FROM webhook_events WHERE event_type = 'TagsAdded'),
				count(*), count(*) FILTER (WHERE d.status = 'Succeeded'), count(*) FILTER (WHERE d.status = 'Pending'),
				count(*) FILTER (WHERE d.status = 'Failed')
			FROM webhook_deliveries d JOIN webhook_events e USING (account_id, event_id) WHERE e.event_type = 'TagsAdded'`).
			Scan(&published, &deliveries, &succeeded, &pending, &failed)
	}
	testkit.Eventually(t, "every received delivery recorded as delivered", func() bool {
		if err := ledger(); err != nil {
			t.Fatal(err)
		}
		return pending == 0
	})
	if deliveries != published || succeeded+pending+failed != deliveries || succeeded != published || published != len(events) {
		t.Errorf("the ledger: %d events published, %d deliveries (one subscription): %d delivered + %d pending + %d given up",
			published, deliveries, succeeded, pending, failed)
	}
	requests, dups, _ := rc.summary()
	return fmt.Sprintf("%d events published = %d delivered + %d pending + %d given up; the receiver had %d requests, %d of them a second delivery of an event",
		published, succeeded, pending, failed, requests, dups)
}

// historyWorkers is how many workers send a history: workers by default, more for make
// reliability (CONTACTD_HISTORY_WORKERS).
func historyWorkers(workers int) int {
	if n, err := strconv.Atoi(os.Getenv("CONTACTD_HISTORY_WORKERS")); err == nil && n > 0 {
		return n
	}
	return workers
}

// reportReliability writes the test's figures as a section of docs/reliability.md when make
// reliability runs it (CONTACTD_RELIABILITY_DIR): one line a figure.
func reportReliability(t *testing.T, title string, lines ...string) {
	dir := os.Getenv("CONTACTD_RELIABILITY_DIR")
	if dir == "" {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", title)
	for _, l := range lines {
		fmt.Fprintf(&b, "- %s\n", l)
	}
	b.WriteString("\n")
	if err := os.WriteFile(filepath.Join(dir, t.Name()+".md"), []byte(b.String()), 0o644); err != nil {
		t.Error(err)
	}
}
