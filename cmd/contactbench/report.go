package main

import (
	"fmt"
	"io"
	"time"
)

// ratioOf names the baseline workload each contactd workload is compared with.
var ratioOf = map[string]string{
	"get-by-id": "baseline-get", "get-by-email": "baseline-get",
	"create": "baseline-insert", "create-fields": "baseline-insert", "add-tags": "baseline-insert",
	"create-unsubscribed": "baseline-insert", "create-segments": "baseline-insert", "add-tags-segments": "baseline-insert",
	"get-by-id-scoped": "baseline-get", "get-by-id-limits": "baseline-get", "create-limits": "baseline-insert",
	"rows-create": "baseline-insert", "rows-create-feed-only": "baseline-insert", "rows-create-no-events": "baseline-insert",
}

// target is one of the performance goals, checked on a report.
type target struct {
	what string
	ok   func(r map[string]result, rep report) bool
}

var targets = []target{
	{"GET contact by id >= 0.70 of the baseline's GET", func(r map[string]result, _ report) bool {
		return ratio(r, "get-by-id") >= 0.70
	}},
	// with the workloads' TagsAdded subscriber listening
	{"POST contact >= 0.85 of the baseline's INSERT", func(r map[string]result, _ report) bool {
		return ratio(r, "create") >= 0.85
	}},
	{"POST contact in an account without subscribers >= 0.8 of the baseline's INSERT", func(r map[string]result, _ report) bool {
		return ratio(r, "create-unsubscribed") >= 0.8
	}},
	{"POST contact with 20 custom fields >= 0.8 of POST contact", func(r map[string]result, _ report) bool {
		return ratio(r, "create") > 0 && ratio(r, "create-fields") >= 0.8*ratio(r, "create")
	}},
	{"POST tags >= 0.85 of the baseline's INSERT", func(r map[string]result, _ report) bool {
		return ratio(r, "add-tags") >= 0.85
	}},
	{"POST contact and POST tags with 100 dynamic segments >= 0.7 of without", func(r map[string]result, _ report) bool {
		return ratio(r, "create") > 0 && ratio(r, "add-tags") > 0 &&
			ratio(r, "create-segments") >= 0.7*ratio(r, "create") && ratio(r, "add-tags-segments") >= 0.7*ratio(r, "add-tags")
	}},
	{"p99 <= 30 ms for reads", func(r map[string]result, _ report) bool {
		return r["get-by-id"].P99 <= 30*time.Millisecond && r["get-by-email"].P99 <= 30*time.Millisecond
	}},
	{"p99 <= 50 ms for writes", func(r map[string]result, _ report) bool {
		return r["create"].P99 <= 50*time.Millisecond && r["add-tags"].P99 <= 50*time.Millisecond
	}},
	{"no errors", func(r map[string]result, _ report) bool {
		for _, x := range r {
			if x.Errors > 0 {
				return false
			}
		}
		return true
	}},
	{"contactd peak RSS < 150 MB", func(r map[string]result, _ report) bool {
		for _, x := range r {
			if x.Server == "contactd" && x.PeakRSS >= 150<<20 {
				return false
			}
		}
		return true
	}},
	{"webhooks, producers and sending at once, >= 0.7 of the floor's pipeline", func(_ map[string]result, rep report) bool {
		return rep.Floor != nil && rep.Floor.Pipeline > 0 && rep.Webhooks.PerSecond >= 0.7*rep.Floor.Pipeline
	}},
	{"webhooks, producers and sending at once: PostgreSQL's CPU a delivery <= 2x the floor's", func(_ map[string]result, rep report) bool {
		f, wh := rep.Floor, rep.Webhooks
		return f != nil && f.PipelineN > 0 && wh.Deliveries > 0 &&
			wh.PipelineCPU.Postgres/float64(wh.Deliveries) <= 2*f.PipelineCPU.Postgres/float64(f.PipelineN)
	}},
	{"webhooks paced at 1,200/s: all delivered at that rate, commit -> arrival p50 < 10 ms, p99 < 50 ms", func(_ map[string]result, rep report) bool {
		wh := rep.Webhooks
		return wh.PacedAchieved >= 0.98*wh.PacedRate && wh.P50 < 10*time.Millisecond && wh.P99 < 50*time.Millisecond
	}},
	{"a create's own WAL records <= 4,805 bytes (0.70 of what a create wrote before its rows were merged, same measurement)", func(_ map[string]result, rep report) bool {
		for _, c := range rep.StoreCosts {
			if c.Workload == "create" {
				return c.OwnBytes <= 4805
			}
		}
		return false
	}},
}

// ratio is a workload's requests/s over its baseline's: the baseline's slices interleaved
// with it when it was, else the baseline's whole run.
func ratio(r map[string]result, name string) float64 {
	b := r[name].BaselineRPS
	if b == 0 {
		b = r[ratioOf[name]].RPS
	}
	if b == 0 {
		return 0
	}
	return r[name].RPS / b
}

func printReport(w io.Writer, rep report) {
	byName := map[string]result{}
	for _, r := range rep.Results {
		byName[r.Name] = r
	}
	fmt.Fprintf(w, "contactbench %s — %s — c=%d, %d contacts seeded\n\n", rep.Date, rep.Machine, rep.Concurrency, rep.Contacts)
	fmt.Fprintln(w, "| workload | vs baseline | req/s (absolute) | p50 | p90 | p99 | errors | server CPU s | CPU ms/req | PostgreSQL CPU ms/req | peak RSS MB |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rep.Results {
		rel := "—"
		if _, ok := ratioOf[r.Name]; ok && byName[ratioOf[r.Name]].RPS > 0 {
			rel = fmt.Sprintf("%.2f × %s", ratio(byName, r.Name), ratioOf[r.Name])
		}
		perReq, dbPerReq := 0.0, 0.0
		if r.Requests > 0 {
			perReq = r.CPUSeconds * 1000 / float64(r.Requests)
			dbPerReq = r.DBCPUSeconds * 1000 / float64(r.Requests)
		}
		fmt.Fprintf(w, "| %s | %s | %.0f | %s | %s | %s | %d | %.1f | %.3f | %.3f | %.0f |\n", r.Name, rel, r.RPS,
			ms(r.P50), ms(r.P90), ms(r.P99), r.Errors, r.CPUSeconds, perReq, dbPerReq, float64(r.PeakRSS)/(1<<20))
	}
	printPrices(w, byName)
	for _, r := range rep.Results {
		if r.Name == "create" {
			fmt.Fprintf(w, "\nenrichment: %d contacts were still due at the ends of the create workload's slices (in all); enriched %.1f s later (in all)\n",
				r.EnrichDue, r.EnrichDrain.Seconds())
		}
	}
	for _, r := range rep.Results {
		if r.DeliveriesDue > 0 {
			fmt.Fprintf(w, "deliveries to the workloads' TagsAdded subscriber: %d pending at the ends of %s's slices (in all); delivered %.1f s later (in all)\n",
				r.DeliveriesDue, r.Name, r.DeliveriesDrain.Seconds())
		}
	}
	if wh := rep.Webhooks; wh.Expected > 0 {
		fmt.Fprintf(w, "\nwebhooks: %d subscriptions; as fast as producers go: %d events, %d/%d deliveries, %.0f deliveries/s, contactd CPU %.1f s\n",
			wh.Subscriptions, wh.Events, wh.Deliveries, wh.Expected, wh.PerSecond, wh.CPUSeconds)
		fmt.Fprintf(w, "webhooks paced at %.0f deliveries/s: %d/%d delivered at %.0f/s, commit -> arrival p50 %s p99 %s\n",
			wh.PacedRate, wh.PacedDeliveries, wh.PacedExpected, wh.PacedAchieved, ms(wh.P50), ms(wh.P99))
		fmt.Fprintf(w, "webhooks apart: producers alone %.0f events/s with the subscriptions paused; resumed, their %d deliveries sent at %.0f/s\n",
			wh.ProducedAlone, wh.Drained, wh.DrainedAlone)
	}
	if rep.Floor != nil {
		printFloor(w, *rep.Floor, rep.Webhooks)
	}
	if rep.Webhooks.Expected > 0 || rep.Floor != nil {
		printDeliveryCPU(w, rep.Webhooks, rep.Floor)
	}
	if rep.Floor != nil {
		printCeilings(w, byName["baseline-insert"].RPS, *rep.Floor)
	}
	printStoreCosts(w, rep.StoreCosts)
	if rep.Smoke {
		fmt.Fprintln(w, "\nsmoke run: checks that every workload works, with no errors; its figures mean nothing")
		return
	}
	if len(byName) < len(ratioOf)+2 || rep.Webhooks.Expected == 0 || len(rep.StoreCosts) == 0 {
		return // a partial run (-only) checks no targets
	}
	fmt.Fprintln(w, "\ntargets:")
	for _, t := range targets {
		mark := "met   "
		if !t.ok(byName, rep) {
			mark = "MISSED"
		}
		fmt.Fprintf(w, "  %s  %s\n", mark, t.what)
	}
}

// printPrices says what each capability switched on alone costs its path (a scoped key, the
// limits in Redis), what a create costs against its own statement sent alone, and what that
// statement's events and deliveries cost it: ratios of the workloads' ratios, each interleaved
// with its baseline, so they compare on one machine.
func printPrices(w io.Writer, r map[string]result) {
	for _, c := range []struct{ with, without, what string }{
		{"get-by-id-scoped", "get-by-id", "a key with scopes and networks, GET by id"},
		{"get-by-id-limits", "get-by-id", "rate limits counted in Redis, GET by id"},
		{"create-limits", "create", "rate limits counted in Redis, POST contact"},
		{"create-fields", "create", "20 custom field values, POST contact"},
	} {
		if with, without := ratio(r, c.with), ratio(r, c.without); with > 0 && without > 0 {
			fmt.Fprintf(w, "%s: %.2f of the requests/s without (%.2f against %.2f × its baseline)\n", c.what, with/without, with, without)
		}
	}
	create, rows, feed, none := ratio(r, "create"), ratio(r, "rows-create"), ratio(r, "rows-create-feed-only"), ratio(r, "rows-create-no-events")
	if rows == 0 {
		return
	}
	fmt.Fprintf(w, "\nthe rows of a create, its statement sent alone by the baseline server (rows-create): %.2f × baseline-insert", rows)
	if create > 0 {
		fmt.Fprintf(w, "; contactd's create is %.2f of it", create/rows)
	}
	fmt.Fprintln(w)
	if feed > 0 && none > 0 {
		fmt.Fprintf(w, "the statement without its deliveries (feed only): %.2f ×; without its events either: %.2f × (the deliveries cost it %.0f %%, the feed's events %.0f %% more)\n",
			feed, none, 100*(feed/rows-1), 100*(none/feed-1))
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
