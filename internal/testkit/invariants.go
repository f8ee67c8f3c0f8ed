package testkit

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/internal/platform/store"
)

// invariants are rules of the stored data that no single response shows, each a query that
// lists what breaks it (three text columns: what, and two details).
var invariants = []struct{ rule, query string }{
	// every statement that changes a contact's properties rewrites the contact's copy of its
	// active ones (contacts.active_properties) in its transaction
	{"a contact's copy of its active properties is its properties", `
SELECT contact_id::text, active_properties::text, active_properties_of(account_id, contact_id)::text
FROM contacts
WHERE active_properties <> active_properties_of(account_id, contact_id)`},
	// a unique value is claimed by a contact that holds a value of that field: a claim left
	// behind by a delete, an erasure, a merge or a change of the value would refuse the value
	// to every other contact for ever
	{"every unique value's claim belongs to a live contact holding the field", `
SELECT u.contact_id::text, u.field_key, u.value
FROM contact_unique_values u
WHERE NOT EXISTS (SELECT 1 FROM contacts c WHERE c.account_id = u.account_id AND c.contact_id = u.contact_id
                  AND c.custom_fields ? u.field_key)`},
	// an event is recorded with the deliveries the fan-out planned, in one statement, at the
	// version of the subscriptions it planned with. So a subscription of its type without a
	// filter, whose definition was committed before the event was made and was still the same
	// when the event committed, has a delivery of it (but of its own SubscriptionFailing
	// event, and once it is removed). The definitions' history is recordSubscriptionDefinitions'.
	{"every event has a delivery to each subscription of its type that was defined before it", `
WITH def AS (
    SELECT h.account_id, h.subscription_id, h.event_type, h.filter, h.status,
           pg_xact_commit_timestamp(h.xid::xid) AS from_at,
           lead(pg_xact_commit_timestamp(h.xid::xid)) OVER (PARTITION BY h.account_id, h.subscription_id ORDER BY h.n) AS until_at
    FROM testkit_subscription_changes h
), owed AS (
    SELECT e.account_id, e.event_id, d.subscription_id
    FROM webhook_events e
    JOIN def d ON d.account_id = e.account_id AND d.event_type = e.event_type
    JOIN webhook_subscriptions s ON s.account_id = d.account_id AND s.subscription_id = d.subscription_id
    WHERE NOT e.test AND d.status <> 'Removed' AND d.filter IS NULL AND s.status <> 'Removed'
      AND d.from_at < e.occurred_at
      AND (d.until_at IS NULL OR d.until_at > pg_xact_commit_timestamp(e.xid::xid))
      AND NOT (e.event_type = 'SubscriptionFailing' AND strpos(e.payload::text, d.subscription_id::text) > 0)
), missing AS ( -- a set difference, hashed: an anti-join per event was quadratic on a batch's 100,000
    SELECT account_id, event_id, subscription_id FROM owed
    EXCEPT SELECT account_id, event_id, subscription_id FROM webhook_deliveries
)
SELECT m.event_id::text, e.event_type, m.subscription_id::text
FROM missing m JOIN webhook_events e ON e.account_id = m.account_id AND e.event_id = m.event_id`},
	// an erasure puts the person's email and phone on the suppression list, under its id, and
	// journals itself in the same transaction
	{"every suppression an erasure made names an erasure of its account", `
SELECT encode(p.digest, 'hex'), p.kind, p.erasure_id::text
FROM suppressions p
WHERE p.erasure_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM erasures e WHERE e.account_id = p.account_id AND e.erasure_id = p.erasure_id)`},
	{"every journalled erasure's contact is gone", `
SELECT e.erasure_id::text, e.contact_id::text, e.erased_at::text
FROM erasures e
WHERE EXISTS (SELECT 1 FROM contacts c WHERE c.account_id = e.account_id AND c.contact_id = e.contact_id)`},
}

// CheckInvariants fails the test when the database breaks a rule that no single response
// shows; NewAPI runs it when its test ends.
func CheckInvariants(t testing.TB, st *store.Store) {
	t.Helper()
	var history bool
	if err := st.Pool.QueryRow(context.Background(), `SELECT to_regclass('testkit_subscription_changes') IS NOT NULL`).Scan(&history); err != nil {
		t.Errorf("checking invariants: %v", err)
		return
	}
	for _, inv := range invariants {
		if strings.Contains(inv.query, "testkit_subscription_changes") && !history {
			continue // a database NewAPI did not make (a restored one)
		}
		rows, err := st.Pool.Query(context.Background(), inv.query)
		if err != nil {
			t.Errorf("checking that %s: %v", inv.rule, err)
			continue
		}
		for rows.Next() {
			var what, a, b string
			if err := rows.Scan(&what, &a, &b); err != nil {
				t.Error(err)
				break
			}
			t.Errorf("broken: %s: %s (%s, %s)", inv.rule, what, a, b)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Error(err)
		}
	}
}

// recordSubscriptionDefinitions keeps, in the database at url, each definition of each
// subscription (its type, filter and status) with the transaction that committed it: the
// delivery invariant asks which definition an event was recorded under. The test cluster
// keeps commit timestamps (track_commit_timestamp) for it.
func recordSubscriptionDefinitions(t testing.TB, url string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `
CREATE TABLE testkit_subscription_changes (
    n bigserial, account_id uuid, subscription_id uuid, event_type text, filter jsonb, status text,
    xid xid8 NOT NULL DEFAULT pg_current_xact_id());
CREATE FUNCTION testkit_subscription_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO testkit_subscription_changes (account_id, subscription_id, event_type, filter, status)
    VALUES (NEW.account_id, NEW.subscription_id, NEW.event_type, NEW.filter, NEW.status);
    RETURN NULL;
END $$;
CREATE TRIGGER testkit_subscription_inserted AFTER INSERT ON webhook_subscriptions
    FOR EACH ROW EXECUTE FUNCTION testkit_subscription_changed();
CREATE TRIGGER testkit_subscription_changed AFTER UPDATE ON webhook_subscriptions
    FOR EACH ROW WHEN (OLD.event_type IS DISTINCT FROM NEW.event_type OR OLD.filter IS DISTINCT FROM NEW.filter
                       OR OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION testkit_subscription_changed();`); err != nil {
		t.Fatal(err)
	}
}
