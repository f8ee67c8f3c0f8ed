package main

import (
	"context"
	"fmt"
	"io"

	"github.com/contactd/contactd/internal/platform/store"
)

// pgStatsSettings load pg_stat_statements, counting statements run inside functions and
// triggers too (foreign-key checks among them), and the time spent planning them.
var pgStatsSettings = []string{"shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track=all",
	"pg_stat_statements.track_planning=on"}

// resetPGStats starts counting from after the seeding.
func resetPGStats(ctx context.Context, st *store.Store) error {
	_, err := st.Pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()`)
	return err
}

// printPGStats prints the statements PostgreSQL spent the most time planning and executing
// over the run (wall time inside the server, waits included: shares, not CPU), with the
// rows, buffers and WAL bytes of a call, which do not move with the machine's speed (a claim
// that returns few rows a call is mostly spent finding nothing). Planning is
// apart: a statement planned on many of its calls costs that on top, and execution time alone
// hid it (the delivery claims' plans, 2-3 ms each, in the webhook phase).
func printPGStats(ctx context.Context, out io.Writer, st *store.Store) error {
	rows, err := st.Pool.Query(ctx, `
		SELECT calls, plans, total_plan_time, total_exec_time,
		       (total_plan_time + total_exec_time) / greatest(calls, 1) * 1000,
		       100 * (total_plan_time + total_exec_time) / sum(total_plan_time + total_exec_time) OVER (),
		       rows::float8 / greatest(calls, 1), (shared_blks_hit + shared_blks_read)::float8 / greatest(calls, 1),
		       wal_bytes::float8 / greatest(calls, 1),
		       left(regexp_replace(query, '\s+', ' ', 'g'), 100)
		FROM pg_stat_statements ORDER BY total_plan_time + total_exec_time DESC LIMIT 15`)
	if err != nil {
		return err
	}
	defer rows.Close()
	fmt.Fprintf(out, "PostgreSQL statements by time planning and executing (pg_stat_statements, whole run):\n")
	fmt.Fprintf(out, "%10s %8s %9s %10s %9s %6s %9s %9s %9s  %s\n", "calls", "plans", "plan ms", "exec ms", "us/call", "share",
		"rows/call", "bufs/call", "WAL B/call", "statement")
	for rows.Next() {
		var calls, plans int64
		var planned, total, per, share, rowsPer, bufs, wal float64
		var query string
		if err := rows.Scan(&calls, &plans, &planned, &total, &per, &share, &rowsPer, &bufs, &wal, &query); err != nil {
			return err
		}
		fmt.Fprintf(out, "%10d %8d %9.0f %10.0f %9.0f %5.1f%% %9.2f %9.1f %9.0f  %s\n", calls, plans, planned, total, per, share,
			rowsPer, bufs, wal, query)
	}
	fmt.Fprintln(out)
	return rows.Err()
}
