package enrich_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/enrich"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/testkit"
)

// clock is a settable time for workers whose retries must pass quickly.
type clock struct{ ns atomic.Int64 }

func newClock() *clock                   { c := &clock{}; c.ns.Store(time.Now().UnixNano()); return c }
func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }
func worker(a *testkit.API, opt enrich.Options) *enrich.Service {
	if opt.Resolver == nil {
		opt.Resolver = a.DNS
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return enrich.New(a.Store, event.NewEmitter(nil, a.Svc.Subscribers, nil), opt)
}

func createContact(t *testing.T, a *testkit.API, key, email string) uuid.UUID {
	t.Helper()
	r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": email})
	if r.Status != 200 {
		t.Fatalf("create %s: %d %s", email, r.Status, r.Body)
	}
	var out struct {
		Contact struct {
			ContactID uuid.UUID `json:"contactId"`
		} `json:"contact"`
	}
	r.JSON(t, &out)
	return out.Contact.ContactID
}

type enrichState struct {
	status   string
	dueAt    *time.Time
	attempts int
}

func stateOf(t *testing.T, a *testkit.API, id uuid.UUID) enrichState {
	t.Helper()
	var s enrichState
	if err := a.Store.Pool.QueryRow(context.Background(),
		`SELECT email_status, enrich_due_at, enrich_attempts FROM contacts WHERE contact_id = $1`, id).Scan(&s.status, &s.dueAt, &s.attempts); err != nil {
		t.Fatal(err)
	}
	return s
}

// claim leases every due contact until lease, as a worker does before checking them with
// DNS, and returns them.
func claim(t *testing.T, a *testkit.API, lease time.Time) []db.EnrichLockDueRow {
	t.Helper()
	ctx := context.Background()
	var due []db.EnrichLockDueRow
	err := a.Store.InTx(ctx, func(tx store.Tx) (err error) {
		if due, err = tx.EnrichLockDue(ctx, db.EnrichLockDueParams{Now: time.Now(), Max: 10}); err != nil || len(due) == 0 {
			return err
		}
		p := db.EnrichLeaseParams{LeaseUntil: lease}
		for _, c := range due {
			p.AccountIds, p.ContactIds = append(p.AccountIds, c.AccountID), append(p.ContactIds, c.ContactID)
		}
		return tx.EnrichLease(ctx, p)
	})
	if err != nil {
		t.Fatal(err)
	}
	return due
}

func runBatch(t *testing.T, w *enrich.Service) int {
	t.Helper()
	n, err := w.RunBatch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWorkersShareTheQueue: workers in two processes drain the due contacts side by side,
// and each contact is enriched exactly once.
func TestWorkersShareTheQueue(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("shared")
	if r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": "https://hooks.example.com/e", "eventType": "ContactEnriched"}); r.Status != 200 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	const n = 40
	ids := make([]uuid.UUID, n)
	for i := range ids { // a domain each: one lookup per contact enriched
		a.DNS.SetMX(fmt.Sprintf("d%d.example", i), "mx.example")
		ids[i] = createContact(t, a, key, fmt.Sprintf("c@d%d.example", i))
	}
	// Both hold a claim at once, whatever the scheduler does: each worker's first lookup waits
	// for the other's (a worker looks up only what it has leased), so neither drains the
	// queue alone.
	var looking sync.WaitGroup
	looking.Add(2)
	both := make(chan struct{})
	go func() { looking.Wait(); close(both) }()
	meet := func(opt enrich.Options) *enrich.Service {
		opt.Resolver = &meeting{Resolver: a.DNS, arrived: looking.Done, both: both}
		return worker(a, opt)
	}
	var wg sync.WaitGroup
	claimed := make([]int, 2)
	for i, w := range []*enrich.Service{meet(enrich.Options{Batch: 3}), meet(enrich.Options{Batch: 5})} {
		wg.Go(func() {
			for {
				k, err := w.RunBatch(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if k == 0 {
					return
				}
				claimed[i] += k
			}
		})
	}
	wg.Wait()
	if claimed[0]+claimed[1] != n || claimed[0] == 0 || claimed[1] == 0 {
		t.Errorf("claimed %v, want %d in all, by both workers", claimed, n)
	}
	for i := range n {
		if calls := a.DNS.Calls(fmt.Sprintf("d%d.example", i)); calls != 1 {
			t.Errorf("d%d.example: %d MX lookups, want 1", i, calls)
		}
	}
	for _, id := range ids {
		if s := stateOf(t, a, id); s.status != "Valid" || s.dueAt != nil || s.attempts != 0 {
			t.Errorf("%s: %+v, want Valid and no longer due", id, s)
		}
	}
	var events, contacts int
	if err := a.Store.Pool.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT contact_id) FROM webhook_events
		WHERE event_type = 'ContactEnriched'`).Scan(&events, &contacts); err != nil {
		t.Fatal(err)
	}
	if events != n || contacts != n {
		t.Errorf("%d ContactEnriched events about %d contacts, want one each for %d", events, contacts, n)
	}
}

// meeting is a resolver whose first lookup waits until the other worker's meeting has had
// its first lookup too.
type meeting struct {
	enrich.Resolver
	once    sync.Once
	arrived func()
	both    <-chan struct{}
}

func (m *meeting) LookupMX(ctx context.Context, name string) ([]*net.MX, error) {
	m.once.Do(func() {
		m.arrived()
		select {
		case <-m.both:
		case <-ctx.Done():
		}
	})
	return m.Resolver.LookupMX(ctx, name)
}

// TestLeaseOutlivesItsWorker: a contact claimed by a worker that died is due again when the
// lease ends, and the dead worker's late result is refused.
func TestLeaseOutlivesItsWorker(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	ctx := context.Background()
	_, key := a.Account("lease")
	a.DNS.SetMX("good.example", "mx.good.example")
	id := createContact(t, a, key, "lease@good.example")

	q := db.New(a.Store.Pool)
	lease := time.Now().Add(time.Minute).Truncate(time.Microsecond)
	dead := claim(t, a, lease)
	if len(dead) != 1 || dead[0].ContactID != id {
		t.Fatalf("the doomed worker's claim: %+v", dead)
	}
	clock := newClock()
	w := worker(a, enrich.Options{Now: clock.Now})
	if k := runBatch(t, w); k != 0 {
		t.Fatalf("claimed %d contacts still leased to another worker", k)
	}
	clock.Advance(lease.Sub(clock.Now()) + time.Millisecond) // the worker's clock past the lease
	if k := runBatch(t, w); k != 1 {
		t.Fatalf("after the lease: claimed %d, want 1", k)
	}
	if s := stateOf(t, a, id); s.status != "Valid" || s.dueAt != nil {
		t.Errorf("after the second worker: %+v", s)
	}
	n, err := q.EnrichFinish(ctx, db.EnrichFinishParams{AccountID: dead[0].AccountID, ContactID: id,
		HeldDueAt: lease, Verdict: "Invalid", Now: time.Now()})
	if err != nil || n != 0 {
		t.Errorf("the dead worker's late finish: %d rows, %v; want none", n, err)
	}
	if s := stateOf(t, a, id); s.status != "Valid" {
		t.Errorf("a lost lease's verdict was applied: %+v", s)
	}
}

// TestEmailChangedWhileClaimed: the verdict on an email the contact no longer has is dropped,
// and the new email is checked.
func TestEmailChangedWhileClaimed(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	ctx := context.Background()
	_, key := a.Account("moving")
	a.DNS.SetMX("good.example", "mx.good.example")
	id := createContact(t, a, key, "old@good.example")

	q := db.New(a.Store.Pool)
	lease := time.Now().Add(time.Minute).Truncate(time.Microsecond)
	claimed := claim(t, a, lease)
	if len(claimed) != 1 {
		t.Fatalf("claim: %+v", claimed)
	}
	if r := a.Do("PATCH", "/public/v1/contact/"+id.String(), key, `{"email": "new@mailinator.com"}`); r.Status != 200 {
		t.Fatalf("PATCH: %d %s", r.Status, r.Body)
	}
	n, err := q.EnrichFinish(ctx, db.EnrichFinishParams{AccountID: claimed[0].AccountID, ContactID: id,
		HeldDueAt: lease, Verdict: "Valid", Now: time.Now()})
	if err != nil || n != 0 {
		t.Fatalf("finishing with the old email's verdict: %d rows, %v; want none", n, err)
	}
	if k := runBatch(t, worker(a, enrich.Options{})); k != 1 {
		t.Fatalf("the changed contact is not due: claimed %d", k)
	}
	if s := stateOf(t, a, id); s.status != "Invalid" || s.dueAt != nil {
		t.Errorf("after checking the new (disposable) email: %+v", s)
	}
}

// TestGivesUpAfterMaxAttempts: DNS that keeps failing is retried with growing delays, then the
// status stays Pending and the contact leaves the queue.
func TestGivesUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("flaky")
	a.DNS.SetMX("down.example", "mx.down.example")
	a.DNS.FailTimes("down.example", 1000)
	id := createContact(t, a, key, "x@down.example")
	c := newClock()
	w := worker(a, enrich.Options{Now: c.Now, RetryBase: time.Second})
	for attempt := 1; attempt <= enrich.MaxAttempts; attempt++ {
		if k := runBatch(t, w); k != 1 {
			t.Fatalf("attempt %d: claimed %d", attempt, k)
		}
		s := stateOf(t, a, id)
		if attempt == enrich.MaxAttempts {
			if s.dueAt != nil || s.status != "Pending" {
				t.Errorf("after the last attempt: %+v, want Pending and no longer due", s)
			}
			break
		}
		wantDue := c.Now().Add(enrich.RetryDelay(time.Second, attempt))
		if s.dueAt == nil || s.dueAt.Sub(wantDue).Abs() > time.Millisecond || s.attempts != attempt {
			t.Fatalf("after attempt %d: %+v, want due at %v", attempt, s, wantDue)
		}
		if k := runBatch(t, w); k != 0 {
			t.Fatalf("claimed before its retry time")
		}
		c.Advance(enrich.RetryDelay(time.Second, attempt))
	}
	if calls := a.DNS.Calls("down.example"); calls != enrich.MaxAttempts {
		t.Errorf("%d MX lookups, want %d", calls, enrich.MaxAttempts)
	}
}

// TestOneLookupPerDomain: a bulk import on one domain costs one DNS lookup, not one per
// contact; a verdict is reused for DomainVerdictTTL, then asked again.
func TestOneLookupPerDomain(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("bulk")
	a.DNS.SetMX("bulk.example", "mx.bulk.example")
	for i := range 40 {
		createContact(t, a, key, fmt.Sprintf("c%d@bulk.example", i))
	}
	c := newClock()
	w := worker(a, enrich.Options{Now: c.Now, Batch: 16})
	for runBatch(t, w) > 0 {
	}
	if calls := a.DNS.Calls("bulk.example"); calls != 1 {
		t.Errorf("%d MX lookups for 40 contacts on one domain, want 1", calls)
	}
	c.Advance(enrich.DomainVerdictTTL + time.Second)
	createContact(t, a, key, "late@bulk.example")
	if k := runBatch(t, w); k != 1 {
		t.Fatalf("claimed %d", k)
	}
	if calls := a.DNS.Calls("bulk.example"); calls != 2 {
		t.Errorf("after the verdict expired: %d MX lookups, want 2", calls)
	}
}

// TestRememberedVerdictIsOneWrite: a contact whose domain's verdict is remembered is
// enriched in the transaction that locked it, one write; a domain seen first is leased,
// looked up outside any transaction, then finished.
func TestRememberedVerdictIsOneWrite(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	ctx := context.Background()
	_, key := a.Account("warm")
	a.DNS.SetMX("warm.example", "mx.warm.example")
	first := createContact(t, a, key, "first@warm.example")
	// every write of a contact, in order.
	if _, err := a.Store.Pool.Exec(ctx, `
		CREATE TABLE contact_writes (n serial, contact_id uuid, status text, due_at timestamptz);
		CREATE FUNCTION log_contact_write() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN INSERT INTO contact_writes (contact_id, status, due_at) VALUES (NEW.contact_id, NEW.email_status, NEW.enrich_due_at); RETURN NEW; END $$;
		CREATE TRIGGER log_contact_write AFTER UPDATE ON contacts FOR EACH ROW EXECUTE FUNCTION log_contact_write();`); err != nil {
		t.Fatal(err)
	}
	w := worker(a, enrich.Options{})
	// without the subscriptions cache every verdict may have ContactEnriched subscribers.
	testkit.Eventually(t, "the subscriptions cache listening", a.Svc.Subscribers.Caching)
	writes := func(id uuid.UUID) []string {
		t.Helper()
		rows, err := a.Store.Pool.Query(ctx, `SELECT status || CASE WHEN due_at IS NULL THEN '' ELSE ' leased' END
			FROM contact_writes WHERE contact_id = $1 ORDER BY n`, id)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if k := runBatch(t, w); k != 1 {
		t.Fatalf("claimed %d", k)
	}
	if got := writes(first); !slices.Equal(got, []string{"Pending leased", "Valid"}) {
		t.Errorf("the domain's first contact was written %v, want leased, then Valid", got)
	}
	second := createContact(t, a, key, "second@warm.example")
	if k := runBatch(t, w); k != 1 {
		t.Fatalf("claimed %d", k)
	}
	if got := writes(second); !slices.Equal(got, []string{"Valid"}) {
		t.Errorf("the second contact was written %v, want Valid at once", got)
	}
	if calls := a.DNS.Calls("warm.example"); calls != 1 {
		t.Errorf("%d MX lookups, want 1", calls)
	}
	// nobody is subscribed: the quiet statement recorded each verdict's event, for the feed
	for _, id := range []uuid.UUID{first, second} {
		var n int
		if err := a.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM webhook_events
			WHERE contact_id = $1 AND event_type = 'ContactEnriched' AND payload->'data'->'contactEnrichedInfo'->>'emailStatus' = 'Valid'`,
			id).Scan(&n); err != nil || n != 1 {
			t.Errorf("%d ContactEnriched events of %s (%v), want 1", n, id, err)
		}
	}
}

// An enrichment whose event the fan-out found nobody for is recorded in the quiet statement
// only while the account's subscriptions are still at the version it planned with: a
// ContactEnriched subscription added meanwhile (unheard by this process's cache) sends the
// contact through the path that plans again, and gets the event.
func TestQuietEnrichmentPlansAgainWhenItsAudienceMoved(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	ctx := context.Background()
	testkit.Eventually(t, "the subscriptions cache listening", a.Svc.Subscribers.Caching)
	account, key := a.Account("acme")
	var template struct {
		SubscriptionId string `json:"subscriptionId"`
	}
	a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": "https://hooks.example.com/t", "eventType": "FormSubmission"}).JSON(t, &template)
	a.DNS.SetMX("quiet.example", "mx.quiet.example")
	id := createContact(t, a, key, "someone@quiet.example") // its create remembered the audience
	sub := a.SubscribeUnheard(t, account, template.SubscriptionId, "ContactEnriched")
	w := worker(a, enrich.Options{})
	if _, err := w.RunBatch(ctx); err != nil {
		t.Fatal(err)
	}
	if s := stateOf(t, a, id); s.status != "Valid" || s.dueAt != nil {
		t.Errorf("after the pass: %+v", s)
	}
	var n int
	if err := a.Store.Pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries d JOIN webhook_events e USING (account_id, event_id)
		WHERE d.subscription_id = $1::uuid AND e.event_type = 'ContactEnriched' AND e.contact_id = $2`, sub, id).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d deliveries of the contact's ContactEnriched to the new subscription (%v), want 1", n, err)
	}
}
