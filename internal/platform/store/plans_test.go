package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/delivery"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/testkit"
)

// capture is a db.DBTX that records the statement a generated query would send, instead of
// sending it: the plans test explains exactly what contactd runs.
type capture struct {
	sql  *string
	args *[]any
}

var errCaptured = errors.New("captured")

func (c capture) keep(sql string, args []any) { *c.sql, *c.args = sql, args }
func (c capture) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c.keep(sql, args)
	return pgconn.CommandTag{}, errCaptured
}
func (c capture) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	c.keep(sql, args)
	return nil, errCaptured
}
func (c capture) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	c.keep(sql, args)
	return failedRow{}
}
func (c capture) SendBatch(_ context.Context, b *pgx.Batch) pgx.BatchResults {
	last := b.QueuedQueries[len(b.QueuedQueries)-1]
	c.keep(last.SQL, last.Arguments)
	return capturedBatch{}
}

// capturedBatch is a batch that was captured, not sent: each statement of it fails.
type capturedBatch struct{ pgx.BatchResults }

func (capturedBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, errCaptured }
func (capturedBatch) Query() (pgx.Rows, error)         { return nil, errCaptured }
func (capturedBatch) QueryRow() pgx.Row                { return failedRow{} }
func (capturedBatch) Close() error                     { return errCaptured }

type failedRow struct{}

func (failedRow) Scan(...any) error { return errCaptured }

// plan is the node types of a statement's plan, and the relations each scans.
func plan(t *testing.T, conn *pgx.Conn, call func(q *db.Queries)) []string {
	t.Helper()
	var sql string
	var args []any
	call(db.New(capture{&sql, &args}))
	var out []byte
	// planned per call with its values, as the store sends searches (QueryExecModeCacheDescribe)
	if err := conn.QueryRow(context.Background(), "EXPLAIN (FORMAT JSON) "+sql,
		append([]any{pgx.QueryExecModeCacheDescribe}, args...)...).Scan(&out); err != nil {
		t.Fatalf("explain: %v\n%s", err, sql)
	}
	return nodesOf(t, out)
}

// nodesOf is an EXPLAIN (FORMAT JSON)'s nodes, each as its type, relation and index.
func nodesOf(t *testing.T, out []byte) []string {
	t.Helper()
	var root []struct{ Plan node }
	if err := json.Unmarshal(out, &root); err != nil {
		t.Fatal(err)
	}
	var nodes []string
	var walk func(n node)
	walk = func(n node) {
		nodes = append(nodes, n.Type+" "+n.Relation+" "+n.Index)
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(root[0].Plan)
	return nodes
}

// keptPlan is plan's for the plan a prepared statement keeps for every call, on conn's
// settings (force_generic_plan, for a claim after its lock): its generic plan, and how many
// functions JIT would compile for each call of it.
func keptPlan(t *testing.T, conn *pgx.Conn, call func(q *db.Queries)) (nodes []string, jitFunctions int) {
	t.Helper()
	var sql string
	var args []any
	call(db.New(capture{&sql, &args}))
	var mode string
	if err := conn.QueryRow(context.Background(), "SHOW plan_cache_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "force_generic_plan" {
		t.Fatalf("plan_cache_mode is %s: PostgreSQL may plan each call anew, with its values", mode)
	}
	_, out, err := genericPlan(conn, "kept_plan", sql, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, sql)
	}
	if _, err := conn.Exec(context.Background(), "DEALLOCATE kept_plan"); err != nil {
		t.Fatal(err)
	}
	var root []struct {
		JIT struct{ Functions int }
	}
	if err := json.Unmarshal(out, &root); err != nil {
		t.Fatal(err)
	}
	return nodesOf(t, out), root[0].JIT.Functions
}

type node struct {
	Type     string `json:"Node Type"`
	Relation string `json:"Relation Name"`
	Index    string `json:"Index Name"`
	Plans    []node `json:"Plans"`
}

// Every query of the data-out endpoints reads through an index on a seeded account, the
// filters and cursors of the API included: none scans a whole table.
func TestDataOutQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.NewStore(t)
	pool := testkit.Pool(st)
	account, other := uuid.New(), uuid.New()
	if _, err := st.EnsureEventPartitions(ctx, time.Now().Add(-31*24*time.Hour), time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO accounts VALUES ($1, 'a', now()), ($2, 'b', now())`,
		`INSERT INTO contacts (account_id, contact_id, email, email_key, name, tags, consent_token, created_at, updated_at,
			consent_api_key_name, consent_api_key_prefix, consent_source_ip, consent_user_agent, consent_fields, email_status, lead_score)
		 SELECT CASE WHEN n % 10 = 0 THEN $2::uuid ELSE $1::uuid END, gen_random_uuid(), 'c' || n || '@example.com', 'c' || n || '@example.com',
			(ARRAY['Jane','John','Ann','Bob','Maria','Wei'])[1 + n % 6] || ' Doe' || n,
			ARRAY['t' || (n % 50), 'u' || (n % 7)], 'cs_' || n, now() - n * interval '1 second', now() - n * interval '1 second',
			'k', 'ck_k', '127.0.0.1', 'ua', '{}', (ARRAY['Pending','Valid','Invalid'])[1 + n % 3], n % 100
		 FROM generate_series(1, 30000) n`,
		`UPDATE contacts SET phone = '555-01' || lpad((hashtext(email) % 9000 + 1000)::text, 4, '0') WHERE email_key LIKE '%3@example.com' AND account_id IN ($1, $2)`,
		`INSERT INTO properties (account_id, property_id, contact_id, raw_address, apt_or_unit_number, street_address,
			city, county, state, zip, normalized, created_at)
		 SELECT account_id, gen_random_uuid(), contact_id, 'x', '', 'x', 'x', '', 'IL', '62701',
			(hashtext(email_key) % 20000)::text || ' main st||springfield|il|62701', now()
		 FROM contacts WHERE account_id IN ($1, $2)`,
		// three days of events in their days' partitions (and some in the default one), among
		// a month of partitions
		`INSERT INTO webhook_events (account_id, event_id, event_type, contact_id, payload, occurred_at)
		 SELECT CASE WHEN n % 10 = 0 THEN $2::uuid ELSE $1::uuid END, CASE WHEN n % 100 = 0 THEN gen_random_uuid() ELSE uuid_v7(at) END,
			(ARRAY['TagsAdded','TagsRemoved','ContactEnriched','FormSubmission'])[1 + n % 4], NULL, '{}', at
		 FROM generate_series(1, 30000) n, LATERAL (SELECT now() - interval '3 days' + n * interval '8640 milliseconds' AS at) t`,
		`INSERT INTO webhook_deliveries (account_id, delivery_id, subscription_id, event_id, status, next_attempt_at, created_at, updated_at)
		 SELECT account_id, gen_random_uuid(), CASE WHEN account_id = $1 THEN $1::uuid ELSE $2::uuid END, event_id, CASE WHEN random() < 0.01 THEN 'Pending' ELSE 'Succeeded' END,
			occurred_at, occurred_at, occurred_at
		 FROM webhook_events`,
	} {
		if _, err := pool.Exec(ctx, q, account, other); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `ANALYZE contacts, webhook_events, webhook_deliveries, properties`); err != nil {
		t.Fatal(err)
	}
	// a partition of a few pages is read whole, as PostgreSQL should: the claim is about the
	// partitions that hold thousands of events
	rows, err := pool.Query(ctx, `SELECT relname::text FROM pg_class WHERE relname LIKE 'webhook\_events\_%' AND relkind = 'r' AND reltuples >= 5000`)
	if err != nil {
		t.Fatal(err)
	}
	big, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(big) < 2 {
		t.Fatalf("partitions of 5,000 events or more: %v (%v), want two whole days' at least", big, err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	str := func(s string) *string { return &s }
	at := time.Now().Add(-time.Hour)
	someone := uuid.New()
	cases := map[string]func(q *db.Queries){
		"first page": func(q *db.Queries) {
			q.ContactsByCreated(ctx, db.ContactsByCreatedParams{AccountID: account, RowLimit: 50})
		},
		"deep page": func(q *db.Queries) {
			q.ContactsByCreated(ctx, db.ContactsByCreatedParams{AccountID: account, RowLimit: 50, HasCursor: true, AfterAt: at.Add(-8 * time.Hour), AfterID: someone})
		},
		"two tags": func(q *db.Queries) {
			q.ContactsByCreated(ctx, db.ContactsByCreatedParams{AccountID: account, RowLimit: 50, Tags: []string{"t7", "u0"}})
		},
		"q prefix": func(q *db.Queries) {
			q.ContactsByCreated(ctx, db.ContactsByCreatedParams{AccountID: account, RowLimit: 50, QPrefix: str("mar%"), QWords: str("mar:*")})
		},
		"email prefix": func(q *db.Queries) {
			q.ContactsByCreated(ctx, db.ContactsByCreatedParams{AccountID: account, RowLimit: 50, QPrefix: str("c1234%")})
		},
		"status and score": func(q *db.Queries) {
			min := int32(90)
			q.ContactsByCreated(ctx, db.ContactsByCreatedParams{AccountID: account, RowLimit: 50, EmailStatus: str("Valid"), MinStoredScore: &min})
		},
		"by updated": func(q *db.Queries) {
			q.ContactsByUpdated(ctx, db.ContactsByUpdatedParams{AccountID: account, RowLimit: 50, UpdatedAfter: &at})
		},
		"export's walk with two tags, deep": func(q *db.Queries) {
			q.ContactsWalkByCreated(ctx, db.ContactsWalkByCreatedParams{AccountID: account, WalkLimit: 10000, Tags: []string{"t7", "u0"},
				HasCursor: true, AfterAt: at.Add(-8 * time.Hour), AfterID: someone})
		},
		"page walk with two tags": func(q *db.Queries) {
			q.ContactsPageWalkByCreated(ctx, db.ContactsPageWalkByCreatedParams{AccountID: account, WalkLimit: 8000, RowLimit: 50, Tags: []string{"t7", "u0"}})
		},
		"page walk by updated, q, deep": func(q *db.Queries) {
			q.ContactsPageWalkByUpdated(ctx, db.ContactsPageWalkByUpdatedParams{AccountID: account, WalkLimit: 8000, RowLimit: 50, HasCursor: true,
				AfterAt: at.Add(-8 * time.Hour), AfterID: someone, QPrefix: str("c1%"), QWords: str("c1:*")})
		},
		"by ids": func(q *db.Queries) {
			q.ContactsByIDs(ctx, db.ContactsByIDsParams{AccountID: account, Ids: []uuid.UUID{someone, uuid.New()}})
		},
		"feed": func(q *db.Queries) {
			q.EventsFeed(ctx, db.EventsFeedParams{AccountID: account, AfterXid: "0", RowLimit: 1000, MaxBytes: 1 << 20})
		},
		"feed of a type": func(q *db.Queries) {
			q.EventsFeed(ctx, db.EventsFeedParams{AccountID: account, EventType: str("TagsRemoved"), AfterXid: "0", RowLimit: 1000, MaxBytes: 1 << 20})
		},
		"event": func(q *db.Queries) {
			q.EventGet(ctx, db.EventGetParams{AccountID: account, EventID: event.NewEventID(time.Now().Add(-time.Hour))})
		},
		"replay's page": func(q *db.Queries) {
			q.EventsForReplay(ctx, db.EventsForReplayParams{AccountID: account, EventType: "TagsAdded", Since: at.Add(-24 * time.Hour), Until: at,
				SinceID: store.EventIDFloor(at.Add(-24 * time.Hour)), UntilID: store.EventIDFloor(at), AfterXid: "0", WithPayloads: true, RowLimit: 1000})
		},
		"duplicates by phone": func(q *db.Queries) {
			q.DuplicatesByPhone(ctx, db.DuplicatesByPhoneParams{AccountID: account, After: "5550150", PageLimit: 26})
		},
		"duplicates by email": func(q *db.Queries) {
			q.DuplicatesByEmail(ctx, db.DuplicatesByEmailParams{AccountID: account, PageLimit: 26})
		},
		"duplicates, shared addresses": func(q *db.Queries) {
			q.SharedAddresses(ctx, db.SharedAddressesParams{AccountID: account, FromAddress: "1", PageLimit: 104})
		},
		"prune": func(q *db.Queries) {
			q.EventsPrune(ctx, db.EventsPruneParams{Before: time.Now().Add(-29 * 24 * time.Hour), Batch: 5000})
		},
		"deliveries' prune": func(q *db.Queries) {
			q.DeliveriesPrune(ctx, db.DeliveriesPruneParams{Before: time.Now().Add(-29 * 24 * time.Hour), Batch: 5000})
		},
		"orphaned deliveries": func(q *db.Queries) { q.DeliveriesOrphanedFail(ctx, time.Now()) },
		"a delivery and its event": func(q *db.Queries) {
			q.DeliveryGet(ctx, db.DeliveryGetParams{AccountID: account, SubscriptionID: someone, DeliveryID: someone})
		},
	}
	// the pages in the list's order read its index (backward: the order indexes ascend)
	orderIndex := map[string]string{"first page": "contacts_by_created", "deep page": "contacts_by_created",
		"page walk with two tags": "contacts_by_created", "page walk by updated, q, deep": "contacts_by_updated",
		"export's walk with two tags, deep": "contacts_by_created",
		"duplicates by phone":               "contacts_phone_key", "duplicates by email": "contacts_email_canon",
		"duplicates, shared addresses": "properties_active_address"}
	onePartition := map[string]string{"event": "webhook_events_p" + time.Now().Add(-time.Hour).UTC().Format("20060102")}
	for name, call := range cases {
		nodes := plan(t, conn.Conn(), call)
		for _, n := range nodes {
			f := strings.Fields(n)
			if strings.HasPrefix(n, "Seq Scan contacts") || strings.HasPrefix(n, "Seq Scan properties") ||
				strings.HasPrefix(n, "Seq Scan webhook_deliveries") || strings.HasPrefix(n, "Seq Scan") && slices.Contains(big, f[len(f)-1]) {
				t.Errorf("%s scans a whole table: %v", name, nodes)
			}
		}
		// a lookup by an event's id reads the partition of the id's day alone
		if partitions := onePartition[name]; partitions != "" {
			var read []string
			for _, n := range nodes {
				if f := strings.Fields(n); len(f) > 2 && strings.HasPrefix(f[len(f)-2], "webhook_events") {
					read = append(read, f[len(f)-2])
				}
			}
			if len(read) != 1 || read[0] != partitions {
				t.Errorf("%s reads %v, want %s alone: %v", name, read, partitions, nodes)
			}
		}
		if want := orderIndex[name]; want != "" && !slices.ContainsFunc(nodes, func(n string) bool { return strings.HasSuffix(n, " "+want) }) {
			t.Errorf("%s does not walk %s: %v", name, want, nodes)
		}
	}
}

// The statements of the commonest searches (tags alone, q alone) are planned once per
// connection: after PostgreSQL's five custom plans, it keeps a generic one.
func TestCommonSearchesArePlannedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.NewStore(t)
	pool := testkit.Pool(st)
	account := uuid.New()
	for _, q := range []string{
		`INSERT INTO accounts VALUES ($1, 'a', now())`,
		`INSERT INTO contacts (account_id, contact_id, email, email_key, name, tags, consent_token, created_at, updated_at,
			consent_api_key_name, consent_api_key_prefix, consent_source_ip, consent_user_agent, consent_fields)
		 SELECT $1::uuid, gen_random_uuid(), 'c' || n || '@example.com', 'c' || n || '@example.com', 'Jane Doe' || n,
			ARRAY['t' || (n % 50), 'u' || (n % 7)], 'cs_' || n, now() - n * interval '1 second', now() - n * interval '1 second',
			'k', 'ck_k', '127.0.0.1', 'ua', '{}'
		 FROM generate_series(1, 5000) n`,
	} {
		if _, err := pool.Exec(ctx, q, account); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `ANALYZE contacts`); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	q := db.New(conn)
	end := time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	for i := range 8 {
		tagged, err := q.ContactsTaggedPage(ctx, db.ContactsTaggedPageParams{AccountID: account, Tags: []string{"t" + strconv.Itoa(i), "u1"},
			AfterAt: end, AfterID: uuid.Max})
		if err != nil || len(tagged) == 0 {
			t.Fatalf("tagged page %d: %d contacts, %v", i, len(tagged), err)
		}
		found, err := q.ContactsSearchPage(ctx, db.ContactsSearchPageParams{AccountID: account, QPrefix: "c" + strconv.Itoa(i+1) + "%",
			QWords: "jane:*", AfterAt: end, AfterID: uuid.Max})
		if err != nil || len(found) != 50 {
			t.Fatalf("search page %d: %d contacts, %v", i, len(found), err)
		}
	}
	rows, err := conn.Query(ctx, `SELECT substring(statement from '-- name: (\w+)'), generic_plans, custom_plans
		FROM pg_prepared_statements WHERE statement ~ '-- name: Contacts(Tagged|Search)Page '`)
	if err != nil {
		t.Fatal(err)
	}
	plans := map[string][2]int64{}
	for rows.Next() {
		var name string
		var generic, custom int64
		if err := rows.Scan(&name, &generic, &custom); err != nil {
			t.Fatal(err)
		}
		plans[name] = [2]int64{generic, custom}
	}
	for _, name := range []string{"ContactsTaggedPage", "ContactsSearchPage"} {
		if p, ok := plans[name]; !ok || p[0] < 3 || p[1] > 5 {
			t.Errorf("%s: generic, custom plans %v (of 8 calls), want the generic plan kept after at most 5 custom ones", name, p)
		}
	}
}

// The claims count a receiver's leases (its room) through the leases alone: a plan that found
// them by reading each of the receiver's subscriptions' deliveries read their whole history on
// every claim (migration 00036), and one made while webhook_deliveries was small read the
// whole table once it was not (a prepared statement keeps its generic plan; a bench run read
// 46,463 rows for 7 leases). Three receivers' subscriptions have 30 deliveries, then 60,000,
// a few pending and a few leased, on the statistics of the 30 (a backlog builds faster than
// autovacuum's analyze follows). Each claim is planned after its lock statement, in its
// transaction, as the queue sends it.
func TestClaimsReadTheLeasesNotTheHistory(t *testing.T) {
	t.Parallel()
	pool, account := claimsDB(t)
	exec := func(qs ...string) { t.Helper(); execForAccount(t, pool, account, qs...) }
	// n deliveries to each subscription, of the events after the first skip
	deliveries := func(skip, n int) string {
		return fmt.Sprintf(`INSERT INTO webhook_deliveries (account_id, delivery_id, subscription_id, event_id, status, attempts, next_attempt_at, leased_until, created_at, updated_at)
		 SELECT e.account_id, gen_random_uuid(), s.subscription_id, e.event_id,
			CASE WHEN n %% 1000 < 990 THEN 'Succeeded' ELSE 'Pending' END, 1,
			CASE WHEN n %% 1000 < 990 THEN NULL WHEN n %% 1000 < 995 THEN now() + interval '1 minute' ELSE e.occurred_at END,
			CASE WHEN n %% 1000 BETWEEN 990 AND 994 THEN now() + interval '1 minute' END,
			e.occurred_at, e.occurred_at
		 FROM (SELECT *, row_number() OVER (ORDER BY event_id) AS n FROM webhook_events ORDER BY event_id OFFSET %d LIMIT %d) e, webhook_subscriptions s`, skip, n)
	}
	exec(`INSERT INTO accounts VALUES ($1, 'a', now())`,
		`INSERT INTO webhook_subscriptions (account_id, subscription_id, url, event_type, secret, last_success_at, created_at, updated_at)
		 SELECT $1, gen_random_uuid(), 'https://hooks.example.com/' || n, 'TagsAdded', 's', now(), now(), now() FROM generate_series(1, 3) n`,
		`INSERT INTO webhook_events (account_id, event_id, event_type, payload, occurred_at)
		 SELECT $1, uuid_v7(now() - n * interval '1 millisecond'), 'TagsAdded', '{}', now() - n * interval '1 millisecond'
		 FROM generate_series(1, 20000) n`,
		deliveries(0, 10), `ANALYZE webhook_subscriptions, webhook_deliveries`)
	check := claimPlansCheck(t, pool, account)
	check("30 deliveries")
	exec(deliveries(10, 20000))
	check("60,000 deliveries on the statistics of 30")
}

// A queue that has just sent a backlog: the pending index's pages held every delivery made
// and are now dead or deleted by a vacuum, with a few Pending entries left in them, and
// webhook_deliveries has no column statistics yet (autovacuum had not analyzed it). Each
// live entry then looked pages dear to the planner, and a subscription's rows a few:
// both claims took a subscription's oldest due deliveries from its whole history through
// webhook_deliveries_subscription, sorted. In the bench, after the rows-create workload's
// deliveries and a vacuum, a dispatcher's claim read 24,417 buffers in 72 ms, 19,214 of them
// to take its candidates, and deliveries paced at 1,200 a second arrived at 426 a second,
// 7.2 s after their commit (p50).
func TestClaimsTakeTheQueueAfterABacklog(t *testing.T) {
	t.Parallel()
	pool, account := claimsDB(t)
	execForAccount(t, pool, account,
		// the statistics are the vacuum's alone
		`ALTER TABLE webhook_deliveries SET (autovacuum_enabled = off)`,
		`INSERT INTO accounts VALUES ($1, 'a', now())`,
		`INSERT INTO webhook_subscriptions (account_id, subscription_id, url, event_type, secret, last_success_at, created_at, updated_at)
		 SELECT $1, gen_random_uuid(), 'https://hooks.example.com/' || n, 'TagsAdded', 's', now(), now(), now() FROM generate_series(1, 4) n`,
		`INSERT INTO webhook_events (account_id, event_id, event_type, payload, occurred_at)
		 SELECT $1, uuid_v7(now() - n * interval '1 millisecond'), 'TagsAdded', '{}', now() - n * interval '1 millisecond'
		 FROM generate_series(1, 15000) n`,
		`INSERT INTO webhook_deliveries (account_id, delivery_id, subscription_id, event_id, status, attempts, next_attempt_at, created_at, updated_at)
		 SELECT e.account_id, gen_random_uuid(), s.subscription_id, e.event_id, 'Pending', 0, e.occurred_at, e.occurred_at, e.occurred_at
		 FROM webhook_events e JOIN webhook_subscriptions s USING (account_id) WHERE e.account_id = $1`,
		// all sent but each subscription's newest 30
		`UPDATE webhook_deliveries d SET status = 'Succeeded', attempts = 1, next_attempt_at = NULL
		 FROM (SELECT delivery_id, row_number() OVER (PARTITION BY subscription_id ORDER BY created_at DESC) AS n
		       FROM webhook_deliveries WHERE account_id = $1) r
		 WHERE d.account_id = $1 AND d.delivery_id = r.delivery_id AND r.n > 30`,
		`VACUUM webhook_deliveries`)
	claimPlansCheck(t, pool, account)("60,000 deliveries sent, 120 left, vacuumed, never analyzed")
}

// claimsDB is a new database with today's and yesterday's events partitions, and the id of
// the account a claims test makes there.
func claimsDB(t *testing.T) (*pgxpool.Pool, uuid.UUID) {
	t.Helper()
	st := testkit.NewStore(t)
	if _, err := st.EnsureEventPartitions(context.Background(), time.Now().Add(-24*time.Hour), time.Now()); err != nil {
		t.Fatal(err)
	}
	return testkit.Pool(st), uuid.New()
}

// execForAccount runs each statement in turn, with account as $1 where it has one.
func execForAccount(t *testing.T, pool *pgxpool.Pool, account uuid.UUID, qs ...string) {
	t.Helper()
	for _, q := range qs {
		args := []any{account}
		if !strings.Contains(q, "$1") {
			args = nil
		}
		if _, err := pool.Exec(context.Background(), q, args...); err != nil {
			t.Fatalf("%v: %s", err, q)
		}
	}
}

// claimPlansCheck returns a check of both claims' kept plans, as the queue sends them for
// account's first subscription, on the database's statistics as they stand: neither reads
// webhook_deliveries whole or a subscription's history (webhook_deliveries_subscription),
// both count the leases by their index and take the event through delivery_event, and
// neither is compiled by JIT.
func claimPlansCheck(t *testing.T, pool *pgxpool.Pool, account uuid.UUID) func(when string) {
	t.Helper()
	ctx := context.Background()
	var sub uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT subscription_id FROM webhook_subscriptions WHERE account_id = $1 ORDER BY subscription_id LIMIT 1`,
		account).Scan(&sub); err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	now := time.Now()
	cases := map[string]func(q *db.Queries){
		"the dispatcher's claim": func(q *db.Queries) {
			settingsFirst(t, conn.Conn())
			q.DeliveryClaim(ctx, db.DeliveryClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Max: 64, MaxInFlight: 16, ThrottleShare: 0.25})
		},
		"a worker's claim": func(q *db.Queries) {
			settingsFirst(t, conn.Conn())
			testkit.DeliverySucceed(ctx, q, delivery.Success{AccountID: account, SubscriptionID: sub, DeliveryID: uuid.New(), Attempt: 1,
				Now: now, ClaimNext: true, URL: "https://hooks.example.com/", LeaseUntil: now.Add(time.Minute)})
		},
	}
	return func(when string) {
		t.Helper()
		for name, call := range cases {
			nodes, jit := keptPlan(t, conn.Conn(), call)
			if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
				t.Fatal(err)
			}
			// the paths the claims rule out cost a plan 10^10 each, far past jit_above_cost:
			// JIT compiled a dispatcher's claim on every call, 1.1 s each, and the queue stalled
			if jit > 0 {
				t.Errorf("%s, %s, is compiled by JIT on every call (%d functions)", name, when, jit)
			}
			for _, n := range nodes {
				if strings.HasPrefix(n, "Seq Scan webhook_deliveries") || strings.HasSuffix(n, " webhook_deliveries_subscription") {
					t.Errorf("%s, %s, reads deliveries that are not leased: %s in %v", name, when, n, nodes)
				}
			}
			// a worker's claim swaps its lease for one and counts none
			if counts := slices.ContainsFunc(nodes, func(n string) bool { return strings.HasSuffix(n, " webhook_deliveries_leases") }); counts != (name == "the dispatcher's claim") {
				t.Errorf("%s, %s, counts the leases by their index: %v (%v)", name, when, counts, nodes)
			}
			// the event comes through delivery_event (TestAClaimReadsOneDayOfEvents)
			if i := slices.IndexFunc(nodes, func(n string) bool { return strings.Contains(n, " webhook_events") }); i >= 0 {
				t.Errorf("%s, %s, reads the events partitions itself: %s", name, when, nodes[i])
			}
		}
	}
}

// The claims are planned once per connection, not on every call. Left to choose, PostgreSQL
// made custom plans, for each call's values, at 2-3 ms of its CPU a plan: 2,219 plans of
// 19,219 worker claims in 15 s of the full bench's webhook phase, which then delivered
// 830-1,105 a second instead of 1,850-1,975 in a run of its own. The settings statement sets
// force_generic_plan for the claim's transaction, as the queue sends it.
func TestClaimsArePlannedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.NewStore(t)
	account, sub := uuid.New(), uuid.New()
	if _, err := testkit.Pool(st).Exec(ctx, `WITH a AS (INSERT INTO accounts VALUES ($1, 'a', now()))
		INSERT INTO webhook_subscriptions (account_id, subscription_id, url, event_type, secret, created_at, updated_at)
		VALUES ($1, $2, 'https://hooks.example.com/', 'TagsAdded', 's', now(), now())`, account, sub); err != nil {
		t.Fatal(err)
	}
	conn, err := testkit.Pool(st).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	const calls = 8 // PostgreSQL's own choice makes the first five plans custom ones
	for range calls {
		now := time.Now()
		q := db.New(store.PipelinedOnConn(conn.Conn()))
		if err := q.DeliveryClaimSettings(ctx); err != nil {
			t.Fatal(err)
		}
		if err := q.DeliveryClaimLock(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := q.DeliveryClaim(ctx, db.DeliveryClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Max: 64,
			MaxInFlight: 16, ThrottleShare: 0.25}); err != nil {
			t.Fatal(err)
		}
		if err := q.DeliveryClaimSettings(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := testkit.DeliverySucceed(ctx, q, delivery.Success{AccountID: account, SubscriptionID: sub, DeliveryID: uuid.New(),
			Attempt: 1, Now: now, ClaimNext: true, URL: "https://hooks.example.com/", LeaseUntil: now.Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"DeliveryClaim", "DeliverySucceedMany"} {
		var generic, custom int64
		if err := conn.QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements
			WHERE statement LIKE '-- name: ' || $1 || ' :%'`, name).Scan(&generic, &custom); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if custom != 0 || generic != calls {
			t.Errorf("%s: %d custom and %d generic plans in %d calls, want the one generic plan for all", name, custom, generic, calls)
		}
	}
}

// settingsFirst opens a transaction on conn and makes the claims' settings in it, as the queue
// sends them before a claim (plan, called by the capture, then explains the claim in it).
func settingsFirst(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if err := db.New(conn).DeliveryClaimSettings(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A claim reads its delivery's event through delivery_event, whose statement has the event's
// id as a parameter: PostgreSQL prunes the partitions of webhook_events before it starts the
// kept (generic) plan. The claims joined the events by the id they had just found, a join
// key, and their generic plans started a scan of every day of events kept (30 by default) to
// prune all but one per row: in the bench, 30 more days cost a delivery 0.24 ms more of
// PostgreSQL's CPU.
func TestAClaimReadsOneDayOfEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.NewStore(t)
	if _, err := st.EnsureEventPartitions(ctx, time.Now().Add(-31*24*time.Hour), time.Now()); err != nil {
		t.Fatal(err)
	}
	days, err := st.EventPartitionDays(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := testkit.Pool(st).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var src string
	if err := conn.QueryRow(ctx, `SELECT prosrc FROM pg_proc WHERE proname = 'delivery_event'`).Scan(&src); err != nil {
		t.Fatal(err)
	}
	statements, _, err := plpgsqlStatements(src)
	if err != nil || len(statements) != 1 {
		t.Fatalf("delivery_event's statements: %q (%v)", statements, err)
	}
	statement := strings.NewReplacer("RETURN QUERY", "", "p_account", "$1", "p_event", "$2").Replace(statements[0])
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	_, out, err := genericPlan(conn.Conn(), "delivery_event_plan", statement, []string{"uuid", "uuid"})
	if err != nil {
		t.Fatalf("%v\n%s", err, statement)
	}
	if _, err := conn.Exec(ctx, "DEALLOCATE delivery_event_plan; RESET plan_cache_mode"); err != nil {
		t.Fatal(err)
	}
	removed := regexp.MustCompile(`"Subplans Removed": (\d+)`).FindSubmatch(out)
	if removed == nil || string(removed[1]) != strconv.Itoa(len(days)+1) { // the days, and the default partition
		t.Errorf("delivery_event's kept plan leaves %s of %d partitions out before it starts, want all (the parameters are NULL here)\n%s",
			removed, len(days)+1, out)
	}
}
