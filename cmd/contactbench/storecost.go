package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/contactd/contactd/internal/platform/store"
)

// storeCost is what PostgreSQL wrote for each request of a workload: WAL bytes (and the part
// that were full-page images, written for a page's first change after a checkpoint), the WAL
// records by kind (a heap row, an index entry, a row lock, a commit), and PostgreSQL's CPU.
// For contactd's create it includes the enrichment the creates queued, and the deliveries
// when a subscriber listens, finished before the end is read. Unlike requests per second these do not move with the machine's speed, so
// two binaries compare across runs and days.
type storeCost struct {
	Workload string  `json:"workload"`
	Requests int     `json:"requests"`
	WALBytes float64 `json:"walBytes"`
	FPIBytes float64 `json:"fullPageImageBytes"`
	// OwnBytes are the bytes of the requests' own records: without full-page images (their
	// number depends on how many pages the requests touch first after the checkpoint) and
	// without the maintenance records vacuum and pruning write meanwhile (for what earlier
	// workloads left).
	OwnBytes float64            `json:"ownBytes"`
	DBCPUms  float64            `json:"postgresCPUms"`
	Records  map[string]walKind `json:"records"`
}

// walKind is one kind of WAL record, per request: how many, and their bytes (images included).
type walKind struct {
	Count float64 `json:"count"`
	Bytes float64 `json:"bytes"`
}

// storeCostRequests is how many requests each store-cost measurement makes: a fixed number,
// since the full-page images per request fall as more requests share the pages a checkpoint
// left clean.
const storeCostRequests = 5000

// measureStoreCost makes n requests of wl at concurrency c after a checkpoint, waits until
// contactd has enriched what they created, and reads what PostgreSQL wrote meanwhile from
// the WAL itself (pg_walinspect).
func measureStoreCost(ctx context.Context, dr *driver, st *store.Store, pg int, wl workload, n, c int) (storeCost, error) {
	if _, err := st.Pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_walinspect"); err != nil {
		return storeCost{}, err
	}
	if _, _, err := drainEnrichment(ctx, st); err != nil {
		return storeCost{}, err
	}
	if err := settle(ctx, st); err != nil {
		return storeCost{}, err
	}
	var lsn0, lsn1 string
	if err := st.Pool.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn0); err != nil {
		return storeCost{}, err
	}
	cpu0, err := clusterCPU(pg)
	if err != nil {
		return storeCost{}, err
	}
	var next atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &worker{id: i, rng: rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))}
			for next.Add(1) <= int64(n) && ctx.Err() == nil {
				if err := dr.do(ctx, wl.next(w)); err != nil {
					mu.Lock()
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return storeCost{}, fmt.Errorf("store cost of %s: %w", wl.name, firstErr)
	}
	if _, _, err := drainEnrichment(ctx, st); err != nil {
		return storeCost{}, err
	}
	if _, _, err := drain(ctx, st, `SELECT count(*) FROM webhook_deliveries WHERE status = 'Pending'`); err != nil {
		return storeCost{}, err
	}
	cpu1, err := clusterCPU(pg)
	if err != nil {
		return storeCost{}, err
	}
	// up to what is flushed (pg_walinspect reads no further): every commit above was
	if err := st.Pool.QueryRow(ctx, "SELECT pg_current_wal_flush_lsn()::text").Scan(&lsn1); err != nil {
		return storeCost{}, err
	}
	sc := storeCost{Workload: wl.name, Requests: n, DBCPUms: (cpu1 - cpu0) * 1000 / float64(n), Records: map[string]walKind{}}
	rows, err := st.Pool.Query(ctx, `
		SELECT split_part("resource_manager/record_type", '/', 1) || '/' || split_part("resource_manager/record_type", '/', 2),
		       count, record_size, fpi_size
		FROM pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, true) WHERE count > 0`, lsn0, lsn1)
	if err != nil {
		return storeCost{}, err
	}
	defer rows.Close()
	for rows.Next() {
		var kind string
		var count, recBytes, fpiBytes int64
		if err := rows.Scan(&kind, &count, &recBytes, &fpiBytes); err != nil {
			return storeCost{}, err
		}
		if !maintenance(kind) {
			sc.OwnBytes += float64(recBytes) / float64(n)
		}
		k := sc.Records[kind]
		k.Count += float64(count) / float64(n)
		k.Bytes += float64(recBytes+fpiBytes) / float64(n)
		sc.Records[kind] = k
		sc.WALBytes += float64(recBytes+fpiBytes) / float64(n)
		sc.FPIBytes += float64(fpiBytes) / float64(n)
	}
	return sc, rows.Err()
}

// maintenance reports WAL records written by vacuum, pruning, checkpoints and the like rather
// than by the requests.
func maintenance(kind string) bool {
	for _, prefix := range []string{"Heap2/VACUUM", "Heap2/PRUNE", "Heap2/VISIBLE", "Heap2/FREEZE", "Btree/VACUUM",
		"Gin/VACUUM", "Gin/DELETE_LISTPAGE", "XLOG/", "Standby/"} {
		if strings.HasPrefix(kind, prefix) {
			return true
		}
	}
	return false
}

// printStoreCosts prints the measurements side by side, with the kinds of record written at
// least once in 20 requests of one of them (how many, and their bytes).
func printStoreCosts(out io.Writer, costs []storeCost) {
	if len(costs) == 0 {
		return
	}
	fmt.Fprintf(out, "\nwhat PostgreSQL writes per request (%d requests after a CHECKPOINT; creates include their enrichment, and their deliveries when subscribed):\n\n", costs[0].Requests)
	fmt.Fprintf(out, "| per request |")
	for _, c := range costs {
		fmt.Fprintf(out, " %s |", c.Workload)
	}
	fmt.Fprintf(out, "\n|---|%s\n", strings.Repeat("---|", len(costs)))
	row := func(name string, v func(storeCost) string) {
		fmt.Fprintf(out, "| %s |", name)
		for _, c := range costs {
			fmt.Fprintf(out, " %s |", v(c))
		}
		fmt.Fprintln(out)
	}
	row("WAL bytes", func(c storeCost) string { return fmt.Sprintf("%.0f", c.WALBytes) })
	row("of which full-page images", func(c storeCost) string { return fmt.Sprintf("%.0f", c.FPIBytes) })
	row("WAL bytes without them", func(c storeCost) string { return fmt.Sprintf("%.0f", c.WALBytes-c.FPIBytes) })
	row("the requests' own (no images, no vacuum)", func(c storeCost) string { return fmt.Sprintf("%.0f", c.OwnBytes) })
	row("PostgreSQL CPU ms", func(c storeCost) string { return fmt.Sprintf("%.3f", c.DBCPUms) })
	var kinds []string
	for _, c := range costs {
		for k, v := range c.Records {
			if v.Count >= 0.05 && !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		row(k+" records (bytes)", func(c storeCost) string {
			return fmt.Sprintf("%.2f (%.0f)", c.Records[k].Count, c.Records[k].Bytes)
		})
	}
}
