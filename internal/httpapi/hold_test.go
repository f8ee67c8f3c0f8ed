package httpapi_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/internal/testkit"
)

// hold runs statement in a transaction of the test's and leaves it open: what it locks or
// writes stays held until the test lets go (Rollback), so a race test can see its racers wait
// (API.LockWaiters) before it does. A failure before that rolls it back.
func hold(t *testing.T, a *testkit.API, statement string, args ...any) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := a.Store.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(ctx) }) //nolint:errcheck // already rolled back by the test, or for a failure before
	if _, err := tx.Exec(ctx, statement, args...); err != nil {
		t.Fatal(err)
	}
	return tx
}

// holdContacts locks the account's contacts ids: a write of one of them waits.
func holdContacts(t *testing.T, a *testkit.API, account uuid.UUID, ids ...string) pgx.Tx {
	t.Helper()
	return hold(t, a, "SELECT 1 FROM contacts WHERE account_id = $1 AND contact_id = ANY($2::uuid[]) FOR UPDATE", account, ids)
}

// holdEmails inserts contacts of the emails (their keys): a create of one of them waits.
func holdEmails(t *testing.T, a *testkit.API, account uuid.UUID, emails ...string) pgx.Tx {
	t.Helper()
	return hold(t, a, `INSERT INTO contacts (account_id, contact_id, email, email_key, consent_token,
		created_at, updated_at, consent_api_key_name, consent_api_key_prefix, consent_source_ip, consent_user_agent, consent_fields)
		SELECT $1, gen_random_uuid(), e, e, gen_random_uuid()::text, now(), now(), '', '', '', '', '{}' FROM unnest($2::text[]) e`, account, emails)
}
