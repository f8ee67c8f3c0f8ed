package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// dataset is what the seeding wrote: the ids and emails the read workloads pick from.
type dataset struct {
	ids    []uuid.UUID
	emails []string
}

// seed writes n contacts, each with two tags and one property, for the account straight
// into contactd's tables with COPY (the API would take minutes), and the same n rows into the
// baseline's table.
func seed(ctx context.Context, pool *pgxpool.Pool, accountID uuid.UUID, n int) (dataset, error) {
	ds := dataset{ids: make([]uuid.UUID, n), emails: make([]string, n)}
	now := time.Now().UTC().Truncate(time.Millisecond)
	for i := range n {
		ds.ids[i] = uuid.Must(uuid.NewV7())
		ds.emails[i] = fmt.Sprintf("seed-%d@example.com", i)
	}
	tags := []string{"seed", "lead"}
	contacts := pgx.CopyFromSlice(n, func(i int) ([]any, error) {
		return []any{accountID, ds.ids[i], ds.emails[i], strings.ToLower(ds.emails[i]), fmt.Sprintf("Seed Contact %d", i),
			"Valid", tags, fmt.Sprintf("cs_seed%025d", i), "seed", "ck_seed0000", "127.0.0.1", "contactbench",
			fmt.Appendf(nil, `{"email": %q, "tags": ["seed", "lead"]}`, ds.emails[i]), now, now}, nil
	})
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"contacts"}, []string{"account_id", "contact_id", "email", "email_key",
		"name", "email_status", "tags", "consent_token", "consent_api_key_name", "consent_api_key_prefix",
		"consent_source_ip", "consent_user_agent", "consent_fields", "created_at", "updated_at"}, contacts); err != nil {
		return ds, fmt.Errorf("seed contacts: %w", err)
	}
	props := pgx.CopyFromSlice(n, func(i int) ([]any, error) {
		return []any{accountID, uuid.Must(uuid.NewV7()), ds.ids[i], "123 N Main St Apt 4, Springfield, IL 62704", "4",
			"123 N Main St", "Springfield", "Sangamon County", "IL", "62704", "123 n main st|4|springfield|il|62704", now}, nil
	})
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"properties"}, []string{"account_id", "property_id", "contact_id",
		"raw_address", "apt_or_unit_number", "street_address", "city", "county", "state", "zip", "normalized", "created_at"}, props); err != nil {
		return ds, fmt.Errorf("seed properties: %w", err)
	}
	if _, err := pool.Exec(ctx, baselineSchema); err != nil {
		return ds, err
	}
	base := pgx.CopyFromSlice(n, func(i int) ([]any, error) {
		return []any{ds.ids[i], ds.emails[i], fmt.Sprintf("Seed Contact %d", i), tags, now}, nil
	})
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"bench_baseline"}, []string{"id", "email", "name", "tags", "created_at"}, base); err != nil {
		return ds, fmt.Errorf("seed baseline: %w", err)
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE contacts, properties, bench_baseline"); err != nil {
		return ds, err
	}
	return ds, prewarm(ctx, pool)
}

// prewarm loads contactd's and the baseline's tables and indexes into PostgreSQL's buffers,
// so the first workload measured does not pay for reading what the later ones find cached.
// pg_prewarm ships with Debian's PostgreSQL; without it the run goes on cold.
func prewarm(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_prewarm"); err != nil {
		return nil
	}
	// the tables, the events' partitions (the partitioned table itself stores nothing), and
	// their indexes
	_, err := pool.Exec(ctx, `WITH t AS (
		    SELECT c.oid FROM pg_class c WHERE c.relname IN ('contacts', 'properties', 'bench_baseline') AND c.relkind = 'r'
		    UNION ALL
		    SELECT i.inhrelid FROM pg_inherits i WHERE i.inhparent = to_regclass('webhook_events')
		)
		SELECT pg_prewarm(oid) FROM (SELECT oid FROM t UNION ALL SELECT i.indexrelid FROM pg_index i JOIN t ON t.oid = i.indrelid) r`)
	return err
}
