package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestEnrichmentJobsBecomeDueContacts: upgrading a database that still queues enrichment as
// River jobs turns the unfinished ones into due contacts and removes them all.
func TestEnrichmentJobsBecomeDueContacts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.NewStore(t)
	pool := testkit.Pool(st)
	// back to the schema before the enrichment queue, as an older contactd left it.
	if err := store.MigrateDownTo(ctx, st, 1); err != nil {
		t.Fatal(err)
	}
	createRiverJobs(t, pool)
	account, queued, finished := uuid.New(), uuid.New(), uuid.New()
	if _, err := pool.Exec(ctx, `INSERT INTO accounts VALUES ($1, 'old', now())`, account); err != nil {
		t.Fatal(err)
	}
	for i, id := range []uuid.UUID{queued, finished} {
		if _, err := pool.Exec(ctx, `INSERT INTO contacts (account_id, contact_id, email, email_key, consent_token, created_at, updated_at)
			VALUES ($1, $2, $3, $3, $3, now(), now())`, account, id, []string{"q@example.com", "f@example.com"}[i]); err != nil {
			t.Fatal(err)
		}
		state := []string{"retryable", "completed"}[i]
		if _, err := pool.Exec(ctx, `INSERT INTO river_job (args, kind, max_attempts, state, finalized_at)
			VALUES (jsonb_build_object('account_id', $1::uuid, 'contact_id', $2::uuid), 'contact_enrich', 10, $3::river_job_state,
			        CASE WHEN $3 = 'completed' THEN now() END)`, account, id, state); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	due := map[uuid.UUID]*time.Time{}
	rows, err := pool.Query(ctx, `SELECT contact_id, enrich_due_at FROM contacts`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id uuid.UUID
		var at *time.Time
		if err := rows.Scan(&id, &at); err != nil {
			t.Fatal(err)
		}
		due[id] = at
	}
	if due[queued] == nil || due[finished] != nil {
		t.Errorf("due after the upgrade: queued job's contact %v, finished job's contact %v", due[queued], due[finished])
	}
	requireNoRiver(t, pool)
}

// createRiverJobs gives the database the part of River's schema that migrations 00002 and
// 00004 read and write, as a contactd of that time had it (River created it at start).
func createRiverJobs(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `
		CREATE TYPE river_job_state AS ENUM ('available', 'cancelled', 'completed', 'discarded', 'pending', 'retryable', 'running', 'scheduled');
		CREATE TABLE river_job (
			id bigserial PRIMARY KEY, state river_job_state NOT NULL DEFAULT 'available', attempt smallint NOT NULL DEFAULT 0,
			max_attempts smallint NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), finalized_at timestamptz,
			scheduled_at timestamptz NOT NULL DEFAULT now(), priority smallint NOT NULL DEFAULT 1, args jsonb NOT NULL,
			kind text NOT NULL, queue text NOT NULL DEFAULT 'default');
		CREATE TABLE river_migration (version bigint PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
}

// requireNoRiver: once migrated, nothing of River's schema is left (00009).
func requireNoRiver(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	var left []string
	if err := pool.QueryRow(context.Background(), `SELECT coalesce(array_agg(relname::text), '{}') FROM pg_class
		WHERE relname LIKE 'river%' AND relkind IN ('r', 'u', 'S')`).Scan(&left); err != nil || len(left) != 0 {
		t.Errorf("River tables left after migrating: %v (%v)", left, err)
	}
}

// TestDeliveryQueueMigratesBothWays: going back before the delivery queue gives every Pending
// delivery a River job for its next attempt, as the older contactd expects; coming back
// removes those jobs, the deliveries holding their next attempt themselves.
func TestDeliveryQueueMigratesBothWays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.NewStore(t)
	pool := testkit.Pool(st)
	account, sub, event, pending, done := uuid.New(), uuid.New(), uuid.New(), uuid.New(), uuid.New()
	for _, stmt := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO accounts VALUES ($1, 'old', now())`, []any{account}},
		{`INSERT INTO webhook_subscriptions (account_id, subscription_id, url, event_type, secret, created_at, updated_at)
			VALUES ($1, $2, 'https://example.com/hook', 'TagsAdded', 'whsec_x', now(), now())`, []any{account, sub}},
		{`INSERT INTO webhook_events VALUES ($1, $2, 'TagsAdded', NULL, '{}', now())`, []any{account, event}},
		{`INSERT INTO webhook_deliveries (account_id, delivery_id, subscription_id, event_id, status, attempts, next_attempt_at, created_at, updated_at)
			VALUES ($1, $4, $2, $3, 'Pending', 2, now() + interval '5 minutes', now(), now()),
			       ($1, $5, $2, $3, 'Succeeded', 1, NULL, now(), now())`, []any{account, sub, event, pending, done}},
	} {
		if _, err := pool.Exec(ctx, stmt.sql, stmt.args...); err != nil {
			t.Fatal(err)
		}
	}
	createRiverJobs(t, pool) // an older contactd's River, which 00004 hands the Pending deliveries back to
	if err := store.MigrateDownTo(ctx, st, 3); err != nil {
		t.Fatal(err)
	}
	var delivery uuid.UUID
	var attempt int
	var state string
	if err := pool.QueryRow(ctx, `SELECT (args->>'delivery_id')::uuid, (args->>'attempt')::int, state::text FROM river_job
		WHERE kind = 'webhook_delivery' AND queue = 'webhooks'`).Scan(&delivery, &attempt, &state); err != nil {
		t.Fatalf("the Pending delivery's job after going back: %v", err)
	}
	if delivery != pending || attempt != 3 || state != "scheduled" {
		t.Errorf("job for %s, attempt %d, %s; want %s, attempt 3, scheduled", delivery, attempt, state, pending)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var indexed bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('webhook_deliveries_pending') IS NOT NULL`).Scan(&indexed); err != nil || !indexed {
		t.Errorf("after coming back: pending index %v (%v)", indexed, err)
	}
	requireNoRiver(t, pool)
}

// TestActivePropertiesBackfilled: upgrading gives every existing contact the copy of its
// active properties that reads now use, archived ones left out.
func TestActivePropertiesBackfilled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.NewStore(t)
	pool := testkit.Pool(st)
	if err := store.MigrateDownTo(ctx, st, 4); err != nil {
		t.Fatal(err)
	}
	account, with, without := uuid.New(), uuid.New(), uuid.New()
	if _, err := pool.Exec(ctx, `INSERT INTO accounts VALUES ($1, 'old', now())`, account); err != nil {
		t.Fatal(err)
	}
	for i, id := range []uuid.UUID{with, without} {
		if _, err := pool.Exec(ctx, `INSERT INTO contacts (account_id, contact_id, email, email_key, consent_token, created_at, updated_at)
			VALUES ($1, $2, $3, $3, $3, now(), now())`, account, id, []string{"w@example.com", "n@example.com"}[i]); err != nil {
			t.Fatal(err)
		}
	}
	for i, street := range []string{"1 Main St", "2 Main St", "3 Main St"} {
		if _, err := pool.Exec(ctx, `INSERT INTO properties (account_id, property_id, contact_id, raw_address, apt_or_unit_number,
			street_address, city, county, state, zip, normalized, archived_at, created_at)
			VALUES ($1, $2, $3, $4, '', $4, 'Springfield', 'Sangamon County', 'IL', '62704', $4, CASE WHEN $5 THEN now() END, now())`,
			account, uuid.Must(uuid.NewV7()), with, street, i == 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var streets, none string
	if err := pool.QueryRow(ctx, `SELECT (SELECT jsonb_path_query_array(active_properties, '$[*].streetAddress')::text FROM contacts WHERE contact_id = $1),
		(SELECT active_properties::text FROM contacts WHERE contact_id = $2)`, with, without).Scan(&streets, &none); err != nil {
		t.Fatal(err)
	}
	if streets != `["1 Main St", "3 Main St"]` || none != "[]" {
		t.Errorf("after the upgrade: %s and %s, want the active two in order and []", streets, none)
	}
	testkit.CheckInvariants(t, st)
}

// TestDeletingAnAccountDeletesItsData: without foreign keys from contacts and events to
// accounts, the trigger of migration 6 still removes everything an account owns, and
// nothing of another account's; going back before it restores the foreign keys.
func TestDeletingAnAccountDeletesItsData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.NewStore(t)
	pool := testkit.Pool(st)
	gone, kept := uuid.New(), uuid.New()
	for i, account := range []uuid.UUID{gone, kept} {
		contact, sub, event := uuid.New(), uuid.New(), uuid.New()
		for _, stmt := range []string{
			`INSERT INTO accounts VALUES (@account, 'a' || @n, now())`,
			`INSERT INTO api_keys VALUES (@account, @contact, 'k', 'ck_' || @n, decode(md5(@n), 'hex'), now(), NULL, NULL)`,
			`INSERT INTO contacts (account_id, contact_id, email, email_key, consent_token, consent_api_key_name,
				consent_api_key_prefix, consent_source_ip, consent_user_agent, consent_fields, created_at, updated_at)
				VALUES (@account, @contact, 'x@example.com', 'x@example.com', 'cs_' || @n, 'k', 'ck_', '127.0.0.1', 'test', '{}', now(), now())`,
			`INSERT INTO properties (account_id, property_id, contact_id, raw_address, apt_or_unit_number, street_address,
				city, county, state, zip, normalized, created_at)
				VALUES (@account, @sub, @contact, '1 Main St', '', '1 Main St', 'Springfield', 'Sangamon County', 'IL', '62704', '1 main st', now())`,
			`INSERT INTO activities VALUES (@account, @contact, 'a1', 'EmailOpen', now(), NULL, now())`,
			`INSERT INTO webhook_subscriptions (account_id, subscription_id, url, event_type, secret, created_at, updated_at)
				VALUES (@account, @sub, 'https://example.com/hook', 'TagsAdded', 'whsec_x', now(), now())`,
			`INSERT INTO webhook_events VALUES (@account, @event, 'TagsAdded', @contact, '{}', now())`,
			`INSERT INTO webhook_deliveries (account_id, delivery_id, subscription_id, event_id, created_at, updated_at)
				VALUES (@account, @event, @sub, @event, now(), now())`,
			`INSERT INTO idempotency_keys (account_id, key, fingerprint, method, path, status, headers, body, created_at, expires_at)
				VALUES (@account, 'k' || @n, '\x00', 'POST', '/public/v1/contact', 200, '{}', '\x00', now(), now() + interval '1 day')`,
		} {
			args := pgx.NamedArgs{"account": account, "contact": contact, "sub": sub, "event": event, "n": fmt.Sprint(i)}
			if _, err := pool.Exec(ctx, stmt, args); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
	}
	if _, err := pool.Exec(ctx, `DELETE FROM accounts WHERE account_id = $1`, gone); err != nil {
		t.Fatal(err)
	}
	tables := []string{"api_keys", "contacts", "properties", "activities", "webhook_subscriptions", "webhook_events", "webhook_deliveries",
		"idempotency_keys"}
	for _, table := range tables {
		var ofGone, ofKept int
		if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE account_id = $1), count(*) FILTER (WHERE account_id = $2) FROM `+table,
			gone, kept).Scan(&ofGone, &ofKept); err != nil {
			t.Fatal(err)
		}
		if ofGone != 0 || ofKept != 1 {
			t.Errorf("%s: %d rows of the deleted account, %d of the other; want 0 and 1", table, ofGone, ofKept)
		}
	}

	// an orphan, as an insert racing the deletion can leave: going back drops it to restore the keys.
	if _, err := pool.Exec(ctx, `INSERT INTO contacts (account_id, contact_id, email, email_key, consent_token, consent_api_key_name,
		consent_api_key_prefix, consent_source_ip, consent_user_agent, consent_fields, created_at, updated_at)
		VALUES ($1, $2, 'o@example.com', 'o@example.com', 'cs_o', 'k', 'ck_', '127.0.0.1', 'test', '{}', now(), now())`, gone, uuid.New()); err != nil {
		t.Fatal(err)
	}
	if err := store.MigrateDownTo(ctx, st, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO contacts (account_id, contact_id, email, email_key, consent_token, created_at, updated_at)
		VALUES ($1, $2, 'o@example.com', 'o@example.com', 'cs_o', now(), now())`, gone, uuid.New()); err == nil {
		t.Error("before migration 6, a contact of no account was accepted")
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestConsentRecordsMoveOntoContacts: migration 7 moves each consent record onto its
// contact's row, keeps tokens unique there, and going back restores the records as they were.
func TestConsentRecordsMoveOntoContacts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.NewStore(t)
	pool := testkit.Pool(st)
	if err := store.MigrateDownTo(ctx, st, 6); err != nil {
		t.Fatal(err)
	}
	account, contact := uuid.New(), uuid.New()
	for _, stmt := range []string{
		`INSERT INTO accounts VALUES (@account, 'old', now())`,
		`INSERT INTO contacts (account_id, contact_id, email, email_key, consent_token, created_at, updated_at)
			VALUES (@account, @contact, 'x@example.com', 'x@example.com', 'cs_1', '2026-01-02T03:04:05Z', now())`,
		`INSERT INTO consents VALUES (@account, @contact, 'cs_1', '2026-01-02T03:04:05Z', 'crm sync', 'ck_abcdefgh',
			'203.0.113.9', 'curl/8', '{"email": "x@example.com"}')`,
	} {
		if _, err := pool.Exec(ctx, stmt, pgx.NamedArgs{"account": account, "contact": contact}); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	const record = `SELECT consent_token, created_at, consent_api_key_name, consent_api_key_prefix,
		consent_source_ip, consent_user_agent, consent_fields::text FROM contacts`
	want := []any{"cs_1", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "crm sync", "ck_abcdefgh", "203.0.113.9", "curl/8", `{"email": "x@example.com"}`}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	checkRow(t, pool, record, want)
	if _, err := pool.Exec(ctx, `INSERT INTO contacts (account_id, contact_id, email, email_key, consent_token, consent_api_key_name,
		consent_api_key_prefix, consent_source_ip, consent_user_agent, consent_fields, created_at, updated_at)
		VALUES ($1, $2, 'y@example.com', 'y@example.com', 'cs_1', 'k', 'ck_', '127.0.0.1', 'test', '{}', now(), now())`,
		account, uuid.New()); err == nil {
		t.Error("a second contact with the same consent token was accepted")
	}

	if err := store.MigrateDownTo(ctx, st, 6); err != nil {
		t.Fatal(err)
	}
	checkRow(t, pool, `SELECT token, created_at, api_key_name, api_key_prefix, source_ip, user_agent, fields::text FROM consents`, want)
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	checkRow(t, pool, record, want)
}

// checkRow fails the test unless query returns exactly one row equal to want.
func checkRow(t *testing.T, pool *pgxpool.Pool, query string, want []any) {
	t.Helper()
	rows, err := pool.Query(context.Background(), query)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || fmt.Sprint(normalized(got[0])) != fmt.Sprint(want) {
		t.Errorf("%s:\n got %v\nwant [%v]", query, got, want)
	}
}

// normalized makes times comparable by value.
func normalized(row []any) []any {
	for i, v := range row {
		if tm, ok := v.(time.Time); ok {
			row[i] = tm.UTC()
		}
	}
	return row
}

// Upgrading past 00032 parks the previous release's retention task for good: its DELETE by
// ctid, run by an older process during a rolling upgrade, would delete rows of other
// partitions. An older process registering its tasks afterwards leaves it parked; going back
// makes it due again.
func TestOldRetentionTaskParkedByPartitioning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.NewStore(t)
	pool := testkit.Pool(st)
	if err := store.MigrateDownTo(ctx, st, 31); err != nil {
		t.Fatal(err)
	}
	register := `INSERT INTO periodic_tasks (name, due_at) VALUES ('events_prune', now()) ON CONFLICT (name) DO NOTHING`
	if _, err := pool.Exec(ctx, register); err != nil { // the older release's workers
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, register); err != nil { // an older process started mid-rollout
		t.Fatal(err)
	}
	due := func() string {
		t.Helper()
		var at string
		if err := pool.QueryRow(ctx, `SELECT due_at::text FROM periodic_tasks WHERE name = 'events_prune'`).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	if at := due(); at != "infinity" {
		t.Errorf("the older release's retention task is due at %s after 00032, want never (infinity)", at)
	}
	if err := store.MigrateDownTo(ctx, st, 31); err != nil {
		t.Fatal(err)
	}
	if at := due(); at == "infinity" {
		t.Errorf("the older release's retention task still parked after going back before 00032")
	}
}

// An attempt the previous release records (while a rolling upgrade runs both) names neither
// its delivery's subscription nor its event; the trigger of migration 00043 fills both from
// the delivery, so the attempts' pages and erasures find it. This release's attempts name both.
func TestAttemptsOfThePreviousReleaseGetTheirDelivery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testkit.Pool(testkit.NewStore(t))
	account, delivery, sub, event := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	if _, err := pool.Exec(ctx, `INSERT INTO webhook_deliveries (account_id, delivery_id, subscription_id, event_id, created_at, updated_at)
		VALUES ($1, $2, $3, $4, now(), now())`, account, delivery, sub, event); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO webhook_attempts (account_id, delivery_id, attempt, attempted_at, latency_ms, response_excerpt)
		VALUES ($1, $2, 1, now(), 5, 'ok')`, account, delivery); err != nil {
		t.Fatal(err)
	}
	var gotSub, gotEvent uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT subscription_id, event_id FROM webhook_attempts WHERE delivery_id = $1`, delivery).Scan(&gotSub, &gotEvent); err != nil {
		t.Fatal(err)
	}
	if gotSub != sub || gotEvent != event {
		t.Errorf("the attempt names subscription %s and event %s, want %s and %s", gotSub, gotEvent, sub, event)
	}
}
