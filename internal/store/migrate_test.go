package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

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
	if _, err := pool.Exec(ctx, `DROP INDEX contacts_enrich_due;
		ALTER TABLE contacts DROP COLUMN enrich_due_at, DROP COLUMN enrich_attempts;
		ALTER TABLE contacts ADD CONSTRAINT contacts_consent_token_key UNIQUE (consent_token);
		DELETE FROM goose_db_version WHERE version_id >= 2`); err != nil {
		t.Fatal(err)
	}
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
	var jobs int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'contact_enrich'`).Scan(&jobs); err != nil || jobs != 0 {
		t.Errorf("%d enrichment jobs left (%v)", jobs, err)
	}
}
