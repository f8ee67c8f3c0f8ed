// Package costtest is the cost model's test: every operation of openapi.yaml has its most
// expensive legal request, built from the spec's and the configuration's limits, and a budget
// of what that request may cost the database in buffers (8 KiB pages its statements touch,
// counted by pg_stat_statements). A package of its own: its PostgreSQL loads the extension.
package costtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/config"
	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/field"
	"github.com/contactd/contactd/internal/platform/seal"
	"github.com/contactd/contactd/internal/segment"
	"github.com/contactd/contactd/internal/testkit"
)

// TestMain starts PostgreSQL with the statements' counters, room for every case's statements
// (a case's counters evicted while it is measured would lose its cost), and no autovacuum: a
// vacuum that ran, or not, before a request changes what the request's scans touch. Each case
// is measured after a VACUUM (FREEZE, ANALYZE) of its own (freeze).
func TestMain(m *testing.M) {
	testkit.MainWith(m, "shared_preload_libraries=pg_stat_statements", "pg_stat_statements.max=20000", "autovacuum=off")
}

// template is the prepared database every worst case starts from, as a copy of its own: the
// main account (accountContacts contacts, every event type subscribed three times, 199 fields,
// 99 segments), uniqueAccount and searchAccount. A case adds what it needs, so that no case
// depends on another's having run, or on the order they run in.
type template struct {
	name   string // the database
	secret string // the key its secrets are sealed with: a case's process unseals them
	env    env
	warm   env // the account a case's process warms its connections in (warmUp)
}

// sealed is the option of a process that reads the template's secrets.
func (tm *template) sealed(c *config.Config) { c.SecretKey = tm.secret }

// prepareTemplate builds the template in a process of its own, stops that process, and
// freezes the database: every case starts from the same pages, frozen and analyzed.
func prepareTemplate(t *testing.T) *template {
	t.Helper()
	dbURL := testkit.NewDatabase(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	tm := &template{name: strings.TrimPrefix(u.Path, "/"), secret: seal.NewKey()}
	built := t.Run("template", func(t *testing.T) {
		a := testkit.NewAPIOn(t, dbURL, tm.sealed)
		a.SeededMemberships("the worst cases' contacts are put in every segment by hand")
		account, key := a.Account("costs")
		e := &env{t: t, a: a, account: account, key: key}
		e.subscribeAll()
		e.seeded[0] = time.Now().Add(-time.Millisecond)
		e.contacts(accountContacts, func(i int) map[string]any {
			c := map[string]any{"email": fmt.Sprintf("c%05d@example.com", i), "name": fmt.Sprintf("Contact %d", i),
				"phone": fmt.Sprintf("555-01%d-%04d", i%10, i%2000), "tags": []string{"common"}}
			if i%200 == 0 {
				c["tags"] = []string{"common", "rare"}
			}
			return c
		})
		e.seeded[1] = time.Now().Add(time.Millisecond)
		e.defineFields(field.MaxPerAccount - 1)
		e.defineSegments(segment.MaxPerAccount - 1)
		e.uniqueAccount()
		e.searchAccount()
		a.Backfill(t)
		w := &env{t: t, a: a}
		w.account, w.key = a.Account("costs-warm")
		for _, typ := range []string{"TagsAdded", "TagsRemoved", "ContactDetailsUpdated", "ContactUnsubscribed", "FormSubmission"} {
			w.do("POST", "/public/v1/webhooks", map[string]any{"url": "https://hooks.example.com/warm/" + typ, "eventType": typ,
				"filter": testkit.HeaviestFilter(typ)}, 200)
		}
		w.do("POST", "/public/v1/segments", map[string]any{"name": "warm", "filter": marketingFilter(0)}, 200)
		a.Backfill(t)
		e.settle()
		tm.env, tm.warm = *e, *w
	})
	if !built {
		t.FailNow()
	}
	// the template's process is stopped: only what it left running may still be connected
	admin, err := pgx.Connect(context.Background(), testkit.Cluster().URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, tm.name); err != nil {
		t.Fatal(err)
	}
	freeze(t, dbURL)
	testkit.Eventually(t, "the template's connections closing", func() bool {
		var n int
		err := admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE datname = $1`, tm.name).Scan(&n)
		return err == nil && n == 0
	})
	return tm
}

// warmUp sends, in the template's warm account, one of each common write and read: a case's
// process starts with connections whose caches (plans, relations, functions, partitions) no
// request has filled, and a request that is the first of its kind on its connection pays for
// filling them, a price of the connection and not of the request. After it, what the measured
// request costs is what its statements do.
func (tm *template) warmUp(t *testing.T, a *testkit.API) {
	t.Helper()
	w := tm.warm.on(t, a)
	var created api.CreateContactResult
	w.do("POST", "/public/v1/contact", map[string]any{"email": "warm@example.com", "name": "Warm", "phone": "+1 (555) 010-0001",
		"tags": []string{"a", "b"}, "address": "123 N Main St Apt 4, Springfield, IL 62704"}, 200).JSON(t, &created)
	id := created.Contact.ContactId
	w.do("POST", "/public/v1/contact/"+id+"/tags", map[string]any{"tags": []string{"c"}}, 200)
	w.do("PUT", "/public/v1/contact/"+id+"/tags", map[string]any{"tags": []string{"c", "d"}}, 200)
	w.do("DELETE", "/public/v1/contact/"+id+"/tags", map[string]any{"tags": []string{"d"}}, 200)
	w.do("POST", "/public/v1/contact/"+id+"/activity", map[string]any{"type": "FormSubmission", "details": map[string]any{"n": 1}}, 200)
	w.do("POST", "/public/v1/contact/"+id+"/property", map[string]any{"address": "9 Elm St, Springfield, IL 62704"}, 200)
	w.do("PATCH", "/public/v1/contact/"+id, map[string]any{"name": "Warmer", "recordStatus": "NonMarketing"}, 200)
	w.do("GET", "/public/v1/contact?contactId="+id, nil, 200)
	w.do("GET", "/public/v1/contact?emailId=WARM@example.com", nil, 200)
	var list api.WebhookList
	w.do("GET", "/public/v1/webhooks", nil, 200).JSON(t, &list)
	w.do("POST", "/public/v1/webhooks/"+list.Webhooks[0].SubscriptionId+"/test", nil, 200)
}

// feedShowsAll waits until the events feed shows every event of the account: a feed read
// returns only events of transactions below its snapshot's xmin, and the other cases'
// databases share that horizon (xids are the cluster's), so what a page reads would otherwise
// depend on what they were doing.
func (e *env) feedShowsAll() {
	e.t.Helper()
	testkit.Eventually(e.t, "the feed showing the account's events", func() bool {
		return e.a.Count(e.t, `SELECT count(*) FROM webhook_events WHERE account_id = $1 AND NOT test
			AND xid >= pg_snapshot_xmin(pg_current_snapshot())`, e.account) == 0
	})
}

// freeze vacuums (FREEZE, ANALYZE) the database at dbURL: no dead row or unset hint bit is
// left for a measured request to walk past or set, whatever ran before it.
func freeze(t *testing.T, dbURL string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "VACUUM (FREEZE, ANALYZE)"); err != nil {
		t.Fatal(err)
	}
}

// cost is what one request cost the database: the buffers its top-level statements touched
// (shared hits and reads: each page counted each time it is touched) and how many statements.
type cost struct {
	buffers, statements int64
	elapsed             time.Duration // reported only: a figure of one run, never a budget
	each                []statementCost
	// goCPU is the test process's CPU while the request ran (rusage): the server's Go work,
	// and the client's small part of it (its body, unvalidated). pgExec is PostgreSQL's time
	// in the request's statements (pg_stat_statements), longestTx the longest any
	// transaction of the request's database stayed open (pg_stat_activity, sampled every
	// 5 ms). Times of one run: a budget of CPU is a generous ceiling (maxGoCPU).
	goCPU, pgExec, longestTx time.Duration
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var (
	extension    sync.Once
	extensionErr error
)

// meter reads a database's statement counters from another database of the cluster, so that
// its own statements are not counted.
type meter struct {
	conn *pgx.Conn
	dbid uint32
}

func newMeter(t *testing.T, a *testkit.API) *meter {
	t.Helper()
	ctx := context.Background()
	var name string
	if err := a.Store.Pool.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, testkit.Cluster().URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	// once: CREATE EXTENSION IF NOT EXISTS is no guard against another case's at the same time
	extension.Do(func() { _, extensionErr = conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements") })
	if extensionErr != nil {
		t.Fatal(extensionErr)
	}
	m := &meter{conn: conn}
	if err := conn.QueryRow(ctx, "SELECT oid FROM pg_database WHERE datname = $1", name).Scan(&m.dbid); err != nil {
		t.Fatal(err)
	}
	return m
}

// measure is what send costs the database.
func (m *meter) measure(t *testing.T, send func()) cost {
	t.Helper()
	ctx := context.Background()
	if _, err := m.conn.Exec(ctx, "SELECT pg_stat_statements_reset(0, $1, 0)", m.dbid); err != nil {
		t.Fatal(err)
	}
	done := make(chan time.Duration)
	go m.sampleTransactions(t, done)
	cpu, start := processCPU(t), time.Now()
	send()
	c := cost{elapsed: time.Since(start), goCPU: processCPU(t) - cpu}
	done <- 0
	c.longestTx = <-done
	rows, err := m.conn.Query(ctx, `SELECT (shared_blks_hit + shared_blks_read)::bigint, calls::bigint, total_exec_time, left(query, 60)
		FROM pg_stat_statements WHERE dbid = $1 AND toplevel ORDER BY 1 DESC`, m.dbid)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s statementCost
		var ms float64
		if err := rows.Scan(&s.buffers, &s.calls, &ms, &s.query); err != nil {
			t.Fatal(err)
		}
		c.buffers, c.statements, c.each = c.buffers+s.buffers, c.statements+s.calls, append(c.each, s)
		c.pgExec += time.Duration(ms * float64(time.Millisecond))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return c
}

// sampleTransactions reads, every 5 ms until told on done, how long the oldest open
// transaction of the measured database has been open, and answers the longest on done.
func (m *meter) sampleTransactions(t *testing.T, done chan time.Duration) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testkit.Cluster().URL("postgres"))
	if err != nil {
		t.Error(err)
		<-done
		done <- 0
		return
	}
	defer conn.Close(ctx)
	var longest time.Duration
	for {
		select {
		case <-done:
			done <- longest
			return
		case <-time.After(5 * time.Millisecond):
		}
		var open time.Duration
		if err := conn.QueryRow(ctx, `SELECT coalesce(max(clock_timestamp() - xact_start), '0')
			FROM pg_stat_activity WHERE datid = $1 AND xact_start IS NOT NULL AND pid <> pg_backend_pid()`, m.dbid).Scan(&open); err != nil {
			t.Error(err)
		}
		longest = max(longest, open)
	}
}

// statementCost is one statement's part of a cost: a request over its budget lists them.
type statementCost struct {
	buffers, calls int64
	query          string
}

// on is a copy of the environment for a case's test and process: what the template made,
// with the counters of what it holds.
func (e env) on(t *testing.T, a *testkit.API) *env {
	e.t, e.a = t, a
	if e.unique != nil {
		e.unique = e.unique.on(t, a)
	}
	if e.search != nil {
		e.search = e.search.on(t, a)
	}
	return &e
}

// env is the account the worst cases are built in: its key, and what every case may use.
type env struct {
	t       *testing.T
	a       *testkit.API
	account uuid.UUID
	key     string
	// seeded is when the account's contacts were made: a window of their 10,000 TagsAdded.
	seeded [2]time.Time
	phones int
	fields int // the account's fields, each an enum of the most options
	// segments is the account's segments, each of the costliest filter (defineSegments)
	segments int
	// unique is the account whose 200 fields are all unique text (uniqueAccount), once made.
	unique *env
	// search is the account whose contacts hold as many custom field values as a contact
	// can (searchAccount), once made.
	search *env
}

// searchContacts is how many contacts searchAccount has: a page filtered by custom fields
// walks at most 2,000. The oldest searchCommon of them hold one value of t_31: more than the
// custom fields' index returns for a page (1,000), none among the first 800 a page of 200 walks.
const (
	searchContacts = 2000
	searchCommon   = 1200
)

// searchAccount is an account of its own whose searchContacts contacts each hold 32 text
// values of 960 characters that do not compress (about 31 KB, as much as a contact holds):
// what a search by custom fields reads of every contact it walks or its index finds.
func (e *env) searchAccount() *env {
	e.t.Helper()
	if e.search == nil {
		u := &env{t: e.t, a: e.a}
		u.account, u.key = e.a.Account("costs-search")
		for k := range 32 {
			u.do("POST", "/public/v1/fields", map[string]any{"key": fmt.Sprintf("t_%02d", k), "label": "Text", "type": "text"}, 200)
		}
		const perBatch = 100 // 100 items of 31 KB in a batch's 4 MiB
		for from := 0; from < searchContacts; from += perBatch {
			items := make([]any, perBatch)
			for i := range items {
				values := map[string]any{}
				for k := range 32 {
					values[fmt.Sprintf("t_%02d", k)] = incompressible(from+i, k, 960)
				}
				if from+i < searchCommon {
					values["t_31"] = "common"
				}
				items[i] = map[string]any{"email": fmt.Sprintf("s%05d@example.com", from+i), "customFields": values}
			}
			u.do("POST", "/public/v1/contacts/batch", map[string]any{"mode": "create", "contacts": items}, 200)
		}
		e.search = u
	}
	e.search.t = e.t
	return e.search
}

// incompressible is n characters that PostgreSQL's compression finds no repeats in.
func incompressible(i, k, n int) string {
	rng := rand.New(rand.NewPCG(uint64(i), uint64(k)))
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	for j := range b {
		b[j] = letters[rng.IntN(len(letters))]
	}
	return string(b)
}

// uniqueFields is how many unique text fields uniqueAccount has: the most an account has.
const uniqueFields = field.MaxPerAccount

// uniqueHolders contacts of uniqueAccount hold uniquePerHolder values each: the 20,000 values
// the account holds, the most one batch carries (and batchContacts's upsert replaces).
const (
	uniqueHolders   = 1000
	uniquePerHolder = contact.MaxBatchFieldValues / uniqueHolders
)

// uniqueAccount is an account of its own whose every field (200) is unique text: a write of
// all their values claims 200 values. An account of its own, so that the main account's
// field limit stays the field operations' to reach; subscribed, as the main one is, to what
// a create and a PATCH emit (3 subscriptions with the heaviest filter each).
func (e *env) uniqueAccount() *env {
	e.t.Helper()
	if e.unique == nil {
		u := &env{t: e.t, a: e.a}
		u.account, u.key = e.a.Account("costs-unique")
		for _, typ := range []string{"TagsAdded", "ContactDetailsUpdated", "ContactUnsubscribed"} {
			for i := range 3 {
				u.do("POST", "/public/v1/webhooks", map[string]any{"url": fmt.Sprintf("https://hooks.example.com/unique/%s/%d", typ, i),
					"eventType": typ, "filter": testkit.HeaviestFilter(typ)}, 200)
			}
		}
		for i := range uniqueFields {
			u.do("POST", "/public/v1/fields", map[string]any{"key": fmt.Sprintf("u_%03d", i), "label": "Unique", "type": "text", "unique": true}, 200)
		}
		for i := range segment.MaxPerAccount {
			u.do("POST", "/public/v1/segments", map[string]any{"name": fmt.Sprintf("marketing %03d", i), "filter": marketingFilter(i)}, 200)
		}
		e.a.Backfill(e.t)
		seed := make([]any, uniqueHolders)
		for i := range seed {
			seed[i] = map[string]any{"email": fmt.Sprintf("u%05d@example.com", i), "customFields": itemValues(i, uniquePerHolder, "before")}
		}
		perBatch := segment.MaxChangesPerWrite / segment.MaxPerAccount // each contact enters every segment
		for from := 0; from < len(seed); from += perBatch {
			u.do("POST", "/public/v1/contacts/batch", map[string]any{"mode": "create", "contacts": seed[from:min(len(seed), from+perBatch)]}, 200)
		}
		e.unique = u
	}
	e.unique.t = e.t
	return e.unique
}

// uniqueValues are a value for each of uniqueAccount's fields, of length characters, all
// starting with prefix: a contact's values take at most field.MaxValuesBytes as JSON, which
// 200 values of 140 characters come close to.
func uniqueValues(prefix string, length int) map[string]any {
	out := make(map[string]any, uniqueFields)
	for i := range uniqueFields {
		v := fmt.Sprintf("%s%03d", prefix, i)
		out[fmt.Sprintf("u_%03d", i)] = v + strings.Repeat("v", length-len(v))
	}
	return out
}

// defineFields gives the account n fields (or keeps the more it has), each an enum of
// field.MaxOptions options of 100 characters: the largest definitions there can be.
func (e *env) defineFields(n int) {
	e.t.Helper()
	for ; e.fields < n; e.fields++ {
		e.do("POST", "/public/v1/fields", map[string]any{"key": fmt.Sprintf("f_%03d", e.fields), "label": strings.Repeat("l", 100),
			"description": strings.Repeat("d", 1000), "type": "enum", "options": fieldOptions("o", field.MaxOptions)}, 200)
	}
}

// fieldOptions are n options of 100 characters.
func fieldOptions(prefix string, n int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		v := fmt.Sprintf("%s%03d", prefix, i)
		v += strings.Repeat("x", 100-len(v))
		out[i] = map[string]any{"value": v, "label": v}
	}
	return out
}

// do sends a request, failing the test unless it answers want.
func (e *env) do(method, path string, body any, want int) *testkit.Response {
	e.t.Helper()
	r := e.a.Do(method, path, e.key, body)
	if r.Status != want {
		e.t.Fatalf("%s %s: %d %s, want %d", method, path, r.Status, truncate(string(r.Body)), want)
	}
	return r
}

func truncate(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// contacts creates n contacts in batches of 1,000, the i-th made by item(i), and returns their ids.
func (e *env) contacts(n int, item func(i int) map[string]any) []string {
	e.t.Helper()
	var ids []string
	for from := 0; from < n; from += 1000 {
		var items []any
		for i := from; i < min(n, from+1000); i++ {
			items = append(items, item(i))
		}
		var out struct {
			Results []struct {
				ContactId *string `json:"contactId"`
			} `json:"results"`
		}
		e.do("POST", "/public/v1/contacts/batch", map[string]any{"contacts": items}, 200).JSON(e.t, &out)
		for _, r := range out.Results {
			if r.ContactId == nil {
				e.t.Fatal("a batch item was not created")
			}
			ids = append(ids, *r.ContactId)
		}
	}
	return ids
}

// tags are n tags of 32 characters, the longest a tag may be, starting with prefix.
func tags(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		s := fmt.Sprintf("%s-%d-", prefix, i)
		out[i] = s + strings.Repeat("t", 32-len(s))
	}
	return out
}

// itemValues are n values of uniqueAccount's fields for a batch's item i, each of 120
// characters (the most that 1,000 items of 20 fit in a batch's 4 MiB), all unique to the item.
func itemValues(i, n int, prefix string) map[string]any {
	out := make(map[string]any, n)
	for k := range n {
		v := fmt.Sprintf("%s-%d-%d-", prefix, i, k)
		out[fmt.Sprintf("u_%03d", k)] = v + strings.Repeat("v", 120-len(v))
	}
	return out
}

// defineSegments makes the account's segments up to n, each with segmentFilter(i), whose
// custom field (the i-th) the account must have.
func (e *env) defineSegments(n int) {
	e.t.Helper()
	for ; e.segments < n; e.segments++ {
		e.do("POST", "/public/v1/segments", map[string]any{"name": fmt.Sprintf("segment %03d %s", e.segments, strings.Repeat("n", 100)),
			"filter": segmentFilter(e.segments)}, 200)
	}
}

// segmentFilter is a segment's costliest filter: the most conditions (5 groups of 5), one on a
// custom field (so the account's definitions are read) and each other an in of two names of
// 1,200 characters that do not compress, which fills a 64 KiB body.
func segmentFilter(seed int) map[string]any {
	var groups []any
	for g := range segment.MaxGroups {
		var conds []any
		for c := range segment.MaxConditions / segment.MaxGroups {
			if g == 0 && c == 0 {
				conds = append(conds, map[string]any{"attribute": fmt.Sprintf("customFields.f_%03d", seed%field.MaxPerAccount),
					"operator": "in", "values": []any{fieldOptions("o", 1)[0]["value"]}})
				continue
			}
			conds = append(conds, map[string]any{"attribute": "name", "operator": "in",
				"values": []any{incompressible(seed, g*10+c, 1200), incompressible(seed, g*10+c+100, 1200)}})
		}
		groups = append(groups, map[string]any{"conditions": conds})
	}
	return map[string]any{"groups": groups}
}

// marketingFilter is a segment's costliest filter that every Marketing contact meets: its first
// group is recordStatus eq Marketing, and each other condition an in of two names of 1,200
// characters that do not compress. In uniqueAccount, a create enters 100 such segments, and
// an unsubscribe leaves them.
func marketingFilter(seed int) map[string]any {
	groups := []any{map[string]any{"conditions": []any{map[string]any{"attribute": "recordStatus", "operator": "eq", "value": "Marketing"}}}}
	for g := 1; g < segment.MaxGroups; g++ {
		var conds []any
		for c := range (segment.MaxConditions - 1) / (segment.MaxGroups - 1) {
			conds = append(conds, map[string]any{"attribute": "name", "operator": "in",
				"values": []any{incompressible(seed, g*10+c, 1200), incompressible(seed, g*10+c+100, 1200)}})
		}
		groups = append(groups, map[string]any{"conditions": conds})
	}
	return map[string]any{"groups": groups}
}

// memberSegment is a new ready snapshot segment of searchAccount whose members are all its
// contacts, and one of them that is not a member.
func (e *env) memberSegment(name string) (segmentID, outsider string) {
	e.t.Helper()
	s := e.searchAccount()
	var sg struct {
		SegmentID string `json:"segmentId"`
	}
	s.do("POST", "/public/v1/segments", map[string]any{"name": name, "kind": "snapshot", "filter": map[string]any{"groups": []any{
		map[string]any{"conditions": []any{map[string]any{"attribute": "name", "operator": "eq", "value": "nobody"}}}}}}, 200).JSON(e.t, &sg)
	e.a.Backfill(e.t)
	err := e.a.Store.Pool.QueryRow(context.Background(), `WITH m AS (
		INSERT INTO segment_members (account_id, segment_id, contact_id, added_at)
		SELECT account_id, $2::uuid, contact_id, now() FROM contacts WHERE account_id = $1 AND email <> 's00000@example.com')
		SELECT contact_id::text FROM contacts WHERE account_id = $1 AND email = 's00000@example.com'`, s.account, sg.SegmentID).Scan(&outsider)
	if err != nil {
		e.t.Fatal(err)
	}
	return sg.SegmentID, outsider
}

// segmentID is the id of the account's i-th segment.
func (e *env) segmentID(i int) string {
	e.t.Helper()
	var id string
	if err := e.a.Store.Pool.QueryRow(context.Background(), `SELECT segment_id::text FROM segments WHERE account_id = $1
		ORDER BY created_at, segment_id OFFSET $2 LIMIT 1`, e.account, i).Scan(&id); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// coldDefinitions changes one of the account's field definitions, so that the next request
// reads them all again (a process reads them after each change).
func (e *env) coldDefinitions() {
	e.t.Helper()
	e.do("PATCH", "/public/v1/fields/f_005", map[string]any{"label": fmt.Sprintf("relabelled %d", e.segments)}, 200)
}

// dynamicSegments makes the account's segments n, all dynamic, and changes one (its name), so
// that a process reads them all again.
func (e *env) dynamicSegments(n int) {
	e.t.Helper()
	e.defineSegments(n)
	if _, err := e.a.Store.Pool.Exec(context.Background(), `UPDATE segments SET kind = 'dynamic' WHERE account_id = $1`, e.account); err != nil {
		e.t.Fatal(err)
	}
	var sg struct {
		Segments []struct {
			SegmentID string `json:"segmentId"`
		} `json:"segments"`
	}
	e.do("GET", "/public/v1/segments", nil, 200).JSON(e.t, &sg)
	e.do("PATCH", "/public/v1/segments/"+sg.Segments[0].SegmentID, map[string]any{"name": fmt.Sprintf("renamed %d", time.Now().UnixNano())}, 200)
}
