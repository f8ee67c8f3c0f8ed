// Command contactbench measures contactd under load against a bare net/http + pgx baseline on
// the same machine, in the same run: it starts an embedded PostgreSQL, seeds contacts, starts
// contactd (rate limits off) and the baseline as separate processes, drives each workload at
// a fixed concurrency, and reports requests/s, latency percentiles, errors, the server's CPU
// seconds and peak RSS, contactd's figures as ratios of the baseline's, and webhook delivery
// throughput. Beside them it prices what a request pays for: a key with scopes, the rate
// limits counted in Redis (a second contactd, limits.go) and the rows of a create, its own
// statement sent by the baseline with and without its events and deliveries
// (baseline_rows.go). `make bench` runs it; `-smoke` is the few-second version `make test` runs;
// the other benchmarks are subcommands (usage).
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/contactd/contactd/internal/platform/store"
)

type options struct {
	contactd                 string
	duration                 time.Duration
	warmup                   time.Duration
	concurrency              int
	contacts                 int
	eventDays                int
	subs                     int
	whDuration               time.Duration
	whConc                   int
	whRate                   float64
	profileDir               string
	jsonOut                  string
	compare                  string
	only                     string
	pgStats                  bool
	hold                     bool
	smoke                    bool
	dataOut                  bool
	events                   int
	isolation                bool
	filters                  bool
	filterSubs, filterRounds int
	bulk                     bool
	bulkContacts, importRows int
	isoSubs                  int
	isoRate                  float64
}

func main() {
	if len(os.Args) == 5 && os.Args[1] == "baseline" {
		if err := serveBaseline(os.Args[2], os.Args[3], os.Args[4], 32); err != nil {
			fmt.Fprintln(os.Stderr, "baseline:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.StringVar(&o.contactd, "contactd", "bin/contactd", "the contactd binary to measure")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "measured time per workload")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured time before each workload")
	flag.IntVar(&o.concurrency, "c", 64, "concurrent clients")
	flag.IntVar(&o.contacts, "contacts", 100_000, "contacts seeded before the run")
	flag.IntVar(&o.eventDays, "event-days", 30, "past days of events partitions made before the run, as a database keeping the default 30 days of events has them (0: only the days ahead a new database has)")
	flag.IntVar(&o.subs, "webhook-subs", 3, "webhook subscriptions (TagsAdded; at most 3 per event type)")
	flag.DurationVar(&o.whDuration, "webhook-duration", 10*time.Second, "time the webhook workload produces events")
	flag.IntVar(&o.whConc, "webhook-c", 16, "concurrent clients producing webhook events")
	flag.Float64Var(&o.whRate, "webhook-rate", 1200, "deliveries per second asked in the paced phase, where latency is measured")
	flag.StringVar(&o.profileDir, "profile", "", "write a CPU profile of contactd per workload into this directory (pprof)")
	flag.BoolVar(&o.pgStats, "pgstats", false, "print the statements PostgreSQL spent the most time on over the run (pg_stat_statements)")
	flag.StringVar(&o.jsonOut, "json", "", "also write the results as JSON to this file")
	flag.StringVar(&o.compare, "compare", "docs/performance.md", "the document whose last run (make bench-doc) this run's ratios are compared with: REGRESSED for any that fell more than 15 % (\"\": none)")
	flag.StringVar(&o.only, "only", "", "comma-separated workloads to run (default all)")
	flag.BoolVar(&o.smoke, "smoke", false, "a few seconds on a tiny dataset, to check the tool works (make test)")
	flag.IntVar(&o.events, "events", 300_000, "events seeded for the dataout run")
	flag.BoolVar(&o.hold, "hold", false, "with dataout: seed, print the database's URL and keep it until interrupted (for EXPLAIN), measuring nothing")
	flag.IntVar(&o.isoSubs, "isolation-subs", 200, "webhook subscriptions of the isolation run (three per account)")
	flag.Float64Var(&o.isoRate, "isolation-rate", 100, "events per second the isolation run produces")
	flag.IntVar(&o.filterSubs, "filter-subs", 100, "webhook subscriptions of the filters run (three per account)")
	flag.IntVar(&o.filterRounds, "filter-rounds", 2, "times the filters run takes its three scenarios in turn")
	flag.IntVar(&o.bulkContacts, "bulk-contacts", 200_000, "contacts the bulk run writes in batches")
	flag.IntVar(&o.importRows, "import-rows", 1_000_000, "CSV rows the bulk run imports")
	flag.Usage = usage
	args := os.Args[1:]
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		mode, ok := map[string]*bool{"core": new(bool), "dataout": &o.dataOut, "isolation": &o.isolation,
			"filters": &o.filters, "bulk": &o.bulk}[args[0]]
		if !ok {
			fmt.Fprintf(os.Stderr, "contactbench: no benchmark %q\n", args[0])
			usage()
			os.Exit(2)
		}
		*mode, args = true, args[1:]
	}
	if err := flag.CommandLine.Parse(args); err != nil {
		os.Exit(2)
	}
	if o.bulk && !isSet("c") {
		o.concurrency = 4
	}
	if o.dataOut {
		if !isSet("contacts") {
			o.contacts = 1_000_000
		}
		if !isSet("c") {
			o.concurrency = 16
		}
	}
	if err := checkOnly(o.only); err != nil {
		fmt.Fprintln(os.Stderr, "contactbench:", err)
		os.Exit(2)
	}
	if o.smoke {
		o.duration, o.warmup, o.concurrency, o.contacts, o.whDuration, o.whConc, o.whRate = time.Second, 200*time.Millisecond, 4, 300, time.Second, 4, 60
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	runner := run
	if o.isolation {
		runner = runIsolation
		if o.smoke {
			o.isoSubs, o.isoRate, o.duration = 30, 20, 2*time.Second
		}
	}
	if o.dataOut {
		runner = runDataOut
		if o.smoke {
			o.contacts, o.events = 3000, 2500
		}
	}
	if o.filters {
		runner = runFilters
		if o.smoke {
			o.filterSubs, o.filterRounds, o.duration = 9, 1, time.Second
		}
	}
	if o.bulk {
		runner = runBulk
		if o.smoke {
			o.bulkContacts, o.importRows = 3000, 5000
		}
	}
	if err := runner(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "contactbench:", err)
		os.Exit(1)
	}
}

// usage says which benchmarks there are, and their flags.
func usage() {
	fmt.Fprint(os.Stderr, `usage: contactbench [BENCHMARK] [flags]

benchmarks:
  core       (the default) requests against a bare net/http + pgx baseline, and webhooks against the
             simplest durable pipeline (make bench)
  dataout    list, search, export and the events feed over one large account (-contacts, default
             1,000,000; -events) at -c (default 16) (make bench-dataout)
  isolation  the healthy receivers' latency with every receiver healthy, then with a tenth hanging
             (-isolation-subs, -isolation-rate, -duration) (make bench-isolation)
  filters    delivery throughput over -filter-subs subscriptions without filters, with filters that
             keep every event, and with filters that leave out half (make bench-filters)
  bulk       POST /contacts/batch against a COPY of the same rows, then contactd import of a CSV
             (-bulk-contacts, -import-rows) at -c (default 4) (make bench-bulk)

flags:
`)
	flag.PrintDefaults()
}

// isSet reports whether the command line set the flag.
func isSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

type report struct {
	Date        string        `json:"date"`
	Machine     string        `json:"machine"`
	Concurrency int           `json:"concurrency"`
	Contacts    int           `json:"contacts"`
	Smoke       bool          `json:"smoke"`
	Results     []result      `json:"results"`
	Webhooks    webhookResult `json:"webhooks"`
	Floor       *floorResult  `json:"webhooksFloor,omitempty"`
	StoreCosts  []storeCost   `json:"storeCosts"`
}

func run(ctx context.Context, o options, out io.Writer) error {
	var settings []string
	if o.pgStats {
		settings = pgStatsSettings
	}
	b, err := openBenchDB(ctx, o.contactd, settings)
	if err != nil {
		return err
	}
	defer b.close()
	st, dbURL, postmaster, accountID, apiKey := b.st, b.url, b.postmaster, b.account, b.apiKey
	logf("seeding %d contacts", o.contacts)
	t0 := time.Now()
	ds, err := seed(ctx, st.Pool, accountID, o.contacts)
	if err != nil {
		return err
	}
	logf("seeded in %v", time.Since(t0).Round(time.Millisecond))
	if o.eventDays > 0 {
		now := time.Now()
		made, err := st.EnsureEventPartitions(ctx, now.Add(-time.Duration(o.eventDays)*24*time.Hour), now)
		if err != nil {
			return err
		}
		logf("made %d past days of events partitions", made)
	}
	if o.pgStats {
		if err := resetPGStats(ctx, st); err != nil {
			return err
		}
	}

	pprofAddr, err := profileAddr(o)
	if err != nil {
		return err
	}
	cd, contactdAddr, err := startContactd(ctx, o.contactd, append(serveArgs(dbURL, true), "--pprof-addr", pprofAddr))
	if err != nil {
		return err
	}
	defer cd.stop()
	baseAddr, err := freeAddr()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	bl, err := startProcess(ctx, self, []string{"baseline", baseAddr, dbURL, b.account.String()},
		"http://"+baseAddr+"/contact/"+ds.ids[0].String())
	if err != nil {
		return err
	}
	defer bl.stop()

	selected := func(name string) bool { return o.only == "" || strings.Contains(","+o.only+",", ","+name+",") }
	procs := map[string]proc{"contactd": cd.proc, "baseline": bl.proc}
	// the contactd with rate limits runs only while its workloads do: its workers would
	// otherwise share the others' background work (deliveries, enrichment)
	var limited *limitedProcess
	limitedURL := new(string)
	defer func() {
		if limited != nil {
			limited.stop()
		}
	}()

	contactdURL, baseURL := "http://"+contactdAddr, "http://"+baseAddr
	dr := newDriver(o.concurrency, apiKey)
	unsubscribe, err := subscribeWorkloads(ctx, dr, contactdURL)
	if err != nil {
		return err
	}
	if err := defineBenchFields(ctx, dr, contactdURL); err != nil {
		return err
	}
	segments := &segmentsAccount{key: b.segmentsKey, quietKey: b.quietKey}
	if selected("create-segments") || selected("add-tags-segments") {
		n := 10_000
		if o.smoke {
			n = 1000
		}
		logf("segments: %d contacts and %d dynamic segments in an account of their own", n, benchSegments)
		segDriver := newDriver(o.concurrency, b.segmentsKey)
		unsubscribeSegments, err := subscribeWorkloads(ctx, segDriver, contactdURL)
		if err != nil {
			return err
		}
		defer unsubscribeSegments(ctx)
		if segments, err = prepareSegments(ctx, segDriver, contactdURL, b.segmentsKey, n); err != nil {
			return err
		}
		segments.quietKey = b.quietKey
	}
	rep := report{Date: time.Now().UTC().Format("2006-01-02"), Machine: machine(), Concurrency: o.concurrency, Contacts: o.contacts, Smoke: o.smoke}
	wls := workloads(contactdURL, baseURL, limitedURL, b.scopedKey, ds, segments)
	byName := map[string]workload{}
	for _, wl := range wls {
		byName[wl.name] = wl
	}
	m := measurer{o: o, dr: dr, st: st, pg: postmaster, procs: procs,
		pprofAddr: pprofAddr, logf: logf, baselines: map[string]*measurement{}}
	for _, wl := range wls {
		if !selected(wl.name) || wl.server == "baseline" && ratioOf[wl.name] == "" {
			continue
		}
		var partner *workload
		if b, ok := ratioOf[wl.name]; ok && selected(b) {
			bw := byName[b]
			partner = &bw
		}
		if wl.server == "contactd-limits" && limited == nil {
			if limited, err = startLimited(ctx, o.contactd, dbURL, b.dir); err != nil {
				return err
			}
			*limitedURL, procs["contactd-limits"] = "http://"+limited.addr, limited.cd.proc
		} else if wl.server != "contactd-limits" && limited != nil {
			limited.stop()
			limited = nil
		}
		r, err := m.measure(ctx, wl, partner)
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, r)
	}
	if limited != nil {
		limited.stop()
		limited = nil
	}
	for _, wl := range wls {
		if wl.server != "baseline" || !selected(wl.name) || ratioOf[wl.name] != "" {
			continue
		}
		acc := m.baselines[wl.name]
		if acc == nil { // selected without a contactd workload to interleave with
			r, err := m.measure(ctx, wl, nil)
			if err != nil {
				return err
			}
			rep.Results = append(rep.Results, r)
			continue
		}
		rep.Results = append(rep.Results, acc.result(wl))
	}
	if selected("store-cost") {
		n := storeCostRequests
		if o.smoke {
			n = 300
		}
		// a create with the workloads' subscriber (its delivery made before the end is read),
		// then without: what the subscriber costs a create
		logf("store cost: %d requests of create, subscribed", n)
		subscribed := byName["create"]
		subscribed.name = "create, subscribed"
		sc, err := measureStoreCost(ctx, newDriver(16, apiKey), st, postmaster, subscribed, n, 16)
		if err != nil {
			return err
		}
		rep.StoreCosts = append(rep.StoreCosts, sc)
		if err := unsubscribe(ctx); err != nil {
			return err
		}
		// and a create sent with an Idempotency-Key: what keeping its answer costs
		idempotent := byName["create"]
		idempotent.name = "create, Idempotency-Key"
		var keys atomic.Int64
		idempotent.next = func(w *worker) request {
			r := byName["create"].next(w)
			r.idempotency = fmt.Sprintf("bench-%d", keys.Add(1))
			return r
		}
		for _, wl := range []workload{idempotent, byName["create"], byName["baseline-insert"]} {
			logf("store cost: %d requests of %s", n, wl.name)
			sc, err := measureStoreCost(ctx, newDriver(16, apiKey), st, postmaster, wl, n, 16)
			if err != nil {
				return err
			}
			rep.StoreCosts = append(rep.StoreCosts, sc)
		}
	}
	if err := unsubscribe(ctx); err != nil { // the webhook workload subscribes its own
		return err
	}
	if selected("webhooks") {
		if err := settle(ctx, st); err != nil {
			return err
		}
		logf("webhooks: %d subscriptions, %v at c=%d", o.subs, o.whDuration, o.whConc)
		var profDone chan error
		if pprofAddr != "" { // the unpaced phase
			profDone = make(chan error, 1)
			go func() {
				profDone <- fetchProfile(pprofAddr, o.whDuration, filepath.Join(o.profileDir, "webhooks.pprof"))
			}()
		}
		meter := cpuMeter{contactd: &cd.proc, postmaster: postmaster}
		wh, err := measureWebhooks(ctx, newDriver(o.whConc, apiKey), contactdURL, ds, meter, o.subs, o.whDuration, o.whRate)
		if err != nil {
			return err
		}
		if profDone != nil {
			if err := <-profDone; err != nil {
				return err
			}
		}
		rep.Webhooks = wh
	}
	if selected("webhooks-floor") {
		if err := settleOwed(ctx, st); err != nil {
			return err
		}
		logf("webhooks-floor: the simplest durable pipeline, %v each", o.whDuration)
		rc, stop, err := startReceiver()
		if err != nil {
			return err
		}
		floor, err := measureFloor(ctx, dbURL, rc, cpuMeter{postmaster: postmaster}, o.whDuration)
		stop()
		if err != nil {
			return fmt.Errorf("webhooks-floor: %w", err)
		}
		rep.Floor = &floor
	}
	if o.pgStats {
		if err := printPGStats(ctx, out, st); err != nil {
			return err
		}
	}
	printReport(out, rep)
	if !o.smoke {
		if err := printRegressions(os.Stderr, rep, o.compare); err != nil {
			return err
		}
	}
	if o.jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(o.jsonOut, b, 0o644); err != nil {
			return err
		}
	}
	var errs int
	for _, r := range rep.Results {
		errs += r.Errors
	}
	if errs > 0 {
		return fmt.Errorf("%d requests failed", errs)
	}
	if wh := rep.Webhooks; wh.Deliveries != wh.Expected || wh.PacedDeliveries != wh.PacedExpected {
		return fmt.Errorf("webhook deliveries arrived: %d of %d, then %d of %d paced", wh.Deliveries, wh.Expected, wh.PacedDeliveries, wh.PacedExpected)
	}
	return nil
}

// measurer runs the workloads. A contactd workload with a baseline to compare against is
// interleaved with it, slice by slice (rounds of duration/rounds each), so both see the same
// machine: on a shared VM the speed drifts by tens of percent within minutes, and a ratio of
// two runs minutes apart carried that drift.
type measurer struct {
	o         options
	dr        *driver
	st        *store.Store
	pg        int
	procs     map[string]proc
	pprofAddr string
	logf      func(string, ...any)
	baselines map[string]*measurement // every slice of each baseline workload, for its own row
}

// rounds is how many slices each interleaved workload's measured time is cut into.
const rounds = 5

func (m *measurer) measure(ctx context.Context, wl workload, partner *workload) (result, error) {
	if err := settle(ctx, m.st); err != nil {
		return result{}, err
	}
	var profDone chan error
	if m.pprofAddr != "" && wl.server == "contactd" {
		profDone = make(chan error, 1)
		span := m.o.warmup + m.o.duration
		if partner != nil {
			span = 2 * span
		}
		go func() {
			profDone <- fetchProfile(m.pprofAddr, span, filepath.Join(m.o.profileDir, wl.name+".pprof"))
		}()
	}
	m.logf("%s: %v at c=%d", wl.name, m.o.duration, m.o.concurrency)
	var own, paired measurement
	slice, n := m.o.duration, 1
	if partner != nil {
		m.logf("  interleaved with %s in %d rounds", partner.name, rounds)
		slice, n = m.o.duration/rounds, rounds
		m.dr.drive(ctx, *partner, m.o.warmup)
	}
	m.dr.drive(ctx, wl, m.o.warmup)
	for range n {
		if err := m.dr.slice(ctx, wl, m.procs[wl.server], m.pg, slice, &own); err != nil {
			return result{}, err
		}
		if wl.server == "contactd" || ratioOf[wl.name] != "" {
			// the enrichment the creates queued is done before anything else is measured
			due, took, err := drainEnrichment(ctx, m.st)
			if err != nil {
				return result{}, err
			}
			own.enrichDue, own.enrichDrain = own.enrichDue+due, own.enrichDrain+took
			// and the deliveries its changes queued to the workloads' subscriber
			if due, took, err = drain(ctx, m.st, `SELECT count(*) FROM webhook_deliveries WHERE status = 'Pending'`); err != nil {
				return result{}, err
			}
			own.deliveriesDue, own.deliveriesDrain = own.deliveriesDue+due, own.deliveriesDrain+took
		}
		if partner != nil {
			if err := m.dr.slice(ctx, *partner, m.procs[partner.server], m.pg, slice, &paired); err != nil {
				return result{}, err
			}
		}
	}
	if profDone != nil {
		if err := <-profDone; err != nil {
			return result{}, err
		}
	}
	r := own.result(wl)
	if partner != nil {
		r.BaselineRPS = paired.result(*partner).RPS
		acc := m.baselines[partner.name]
		if acc == nil {
			acc = &measurement{}
			m.baselines[partner.name] = acc
		}
		acc.add(paired)
	}
	return r, nil
}

// workloads are the measured request mixes; the baseline's come last.
// checkOnly refuses -only names that are no workload: a typo would measure nothing.
func checkOnly(only string) error {
	if only == "" {
		return nil
	}
	known := map[string]bool{"webhooks": true, "webhooks-floor": true, "store-cost": true}
	for _, wl := range workloads("", "", new(string), "", dataset{}, &segmentsAccount{}) {
		known[wl.name] = true
	}
	for _, name := range strings.Split(only, ",") {
		if !known[name] {
			names := slices.Sorted(maps.Keys(known))
			return fmt.Errorf("-only: no workload %q (workloads: %s)", name, strings.Join(names, ", "))
		}
	}
	return nil
}

// limited is the URL of the contactd with the rate limits on (limits.go), once it runs;
// scopedKey a key of the account with scopes and networks; segments the account of 100
// dynamic segments.
func workloads(cd, base string, limited *string, scopedKey string, ds dataset, segments *segmentsAccount) []workload {
	// at sends next's requests to another URL: path's, with next's query (the other contactd
	// learns its address once started, hence a func)
	at := func(next func(w *worker) request, path func() string) func(w *worker) request {
		return func(w *worker) request {
			r := next(w)
			u := path()
			if _, query, ok := strings.Cut(r.url, "?"); ok {
				sep := "?"
				if strings.Contains(u, "?") {
					sep = "&"
				}
				u += sep + query
			}
			r.url = u
			return r
		}
	}
	id := func(w *worker) string { return ds.ids[w.rng.IntN(len(ds.ids))].String() }
	getByID := func(w *worker) request {
		return request{method: "GET", url: cd + "/public/v1/contact?contactId=" + id(w), want: 200}
	}
	getByEmail := func(w *worker) request {
		return request{method: "GET", url: cd + "/public/v1/contact?emailId=" + ds.emails[w.rng.IntN(len(ds.emails))], want: 200}
	}
	var seq atomic.Int64 // unique emails across workloads, warm-ups and workers
	create := func(w *worker) request {
		body := fmt.Appendf(nil, `{"email":"bench-%d@example.com","name":"Bench Contact","tags":["bench","lead"],"address":"123 N Main St Apt 4, Springfield, IL 62704"}`, seq.Add(1))
		return request{method: "POST", url: cd + "/public/v1/contact", body: body, want: 200}
	}
	createFields := func(w *worker) request {
		body := fmt.Appendf(nil, `{"email":"bench-%d@example.com","name":"Bench Contact","tags":["bench","lead"],"address":"123 N Main St Apt 4, Springfield, IL 62704","customFields":%s}`,
			seq.Add(1), benchFieldValues(w.rng.IntN(1000)))
		return request{method: "POST", url: cd + "/public/v1/contact", body: body, want: 200}
	}
	addTags := func(w *worker) request {
		body := fmt.Appendf(nil, `{"tags":["t%d"]}`, w.rng.IntN(50))
		return request{method: "POST", url: cd + "/public/v1/contact/" + id(w) + "/tags", body: body, want: 200}
	}
	return []workload{
		{name: "get-by-id", server: "contactd", next: getByID},
		{name: "get-by-email", server: "contactd", next: getByEmail},
		{name: "create", server: "contactd", next: create},
		{name: "create-fields", server: "contactd", next: createFields},
		// the same create in an account nobody subscribes to: its events go to the feed only
		{name: "create-unsubscribed", server: "contactd", next: func(w *worker) request {
			r := create(w)
			r.key = segments.quietKey
			return r
		}},
		{name: "add-tags", server: "contactd", next: addTags},
		// the same in an account of 100 dynamic segments (segments.go), each write keeping them
		{name: "create-segments", server: "contactd", next: func(w *worker) request {
			r := create(w)
			r.key = segments.key
			return r
		}},
		{name: "add-tags-segments", server: "contactd", next: func(w *worker) request {
			body := fmt.Appendf(nil, `{"tags":["t%d"]}`, w.rng.IntN(50))
			id := segments.ids[w.rng.IntN(len(segments.ids))]
			return request{method: "POST", url: cd + "/public/v1/contact/" + id.String() + "/tags", body: body, want: 200, key: segments.key}
		}},
		{name: "mixed", server: "contactd", next: func(w *worker) request {
			switch k := w.rng.IntN(10); {
			case k < 4:
				return getByID(w)
			case k < 8:
				return getByEmail(w)
			case k < 9:
				return create(w)
			default:
				return addTags(w)
			}
		}},
		{name: "baseline-get", server: "baseline", next: func(w *worker) request {
			return request{method: "GET", url: base + "/contact/" + id(w), want: 200}
		}},
		// the capabilities a request pays for, each switched on alone (the cost table)
		{name: "get-by-id-scoped", server: "contactd", next: func(w *worker) request {
			r := getByID(w)
			r.key = scopedKey
			return r
		}},
		{name: "get-by-id-limits", server: "contactd-limits", next: at(getByID, func() string { return *limited + "/public/v1/contact" })},
		{name: "create-limits", server: "contactd-limits", next: at(create, func() string { return *limited + "/public/v1/contact" })},
		// contactd's create statement alone, sent by the baseline (baseline_rows.go)
		{name: "rows-create", server: "baseline", next: at(create, func() string { return base + "/contact-rows" })},
		{name: "rows-create-feed-only", server: "baseline", next: at(create, func() string { return base + "/contact-rows?events=feed" })},
		{name: "rows-create-no-events", server: "baseline", next: at(create, func() string { return base + "/contact-rows?events=off" })},
		{name: "baseline-insert", server: "baseline", next: func(w *worker) request {
			body := fmt.Appendf(nil, `{"email":"base-%d@example.com","name":"Bench Contact","tags":["bench","lead"]}`, seq.Add(1))
			return request{method: "POST", url: base + "/contact", body: body, want: 200}
		}},
	}
}

// runSecretKey seals the secrets of this run's database: as CONTACTD_SECRET_KEY is made, 32
// random bytes in base64.
var runSecretKey = func() string {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return base64.StdEncoding.EncodeToString(k)
}()

// process is a server the tool started and measures.
type process struct {
	cmd    *exec.Cmd
	proc   proc
	log    string        // its output
	exited chan struct{} // closed when it has exited
}

// startProcess starts bin and waits until readyURL answers 200 while the process runs.
func startProcess(ctx context.Context, bin string, args []string, readyURL string) (*process, error) {
	p, err := spawn(bin, args)
	if err != nil {
		return nil, err
	}
	return p, p.await(ctx, func() string { return readyURL })
}

// startContactd starts `contactd serve` with args on a port the kernel picks (--addr
// 127.0.0.1:0) and returns it with the address it listens on, read from its own log. A port
// chosen beforehand (freeAddr) can be bound by another process first: contactd then exits,
// and the other server answers the readiness check (seen with bench smoke's four modes side by
// side beside go test: a batch sent to another contactd, 401).
// serveArgs are the flags of every measured contactd: the database, no rate limits (the load
// tool is one client that would hit them), and with localWebhooks receivers on loopback.
func serveArgs(dbURL string, localWebhooks bool) []string {
	args := []string{"--database-url", dbURL, "--rate-reads-per-10s", "0", "--rate-writes-per-10s", "0", "--rate-account-per-day", "0"}
	if localWebhooks {
		args = append(args, "--webhook-allow-http", "--webhook-allowed-networks", "127.0.0.0/8")
	}
	return args
}

func startContactd(ctx context.Context, bin string, args []string) (*process, string, error) {
	p, err := spawn(bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...))
	if err != nil {
		return nil, "", err
	}
	var addr string
	err = p.await(ctx, func() string {
		if addr == "" {
			addr = listeningAddr(p.log)
		}
		if addr == "" {
			return ""
		}
		return "http://" + addr + "/readyz"
	})
	return p, addr, err
}

// listeningAddr is the address in contactd's "contactd listening" log line, or "".
func listeningAddr(logFile string) string {
	b, _ := os.ReadFile(logFile)
	for _, line := range bytes.Split(b, []byte("\n")) {
		var l struct{ Msg, Addr string }
		if json.Unmarshal(line, &l) == nil && l.Msg == "contactd listening" {
			return l.Addr
		}
	}
	return ""
}

func spawn(bin string, args []string) (*process, error) {
	cmd := exec.Command(bin, args...)
	// one sealing key per run: the tool's database is its own.
	cmd.Env = append(os.Environ(), "CONTACTD_LOG_LEVEL=info", "CONTACTD_LOG_FORMAT=json", "CONTACTD_SECRET_KEY="+runSecretKey)
	logFile, err := os.CreateTemp("", filepath.Base(bin)+"-*.log")
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, proc: proc{pid: cmd.Process.Pid}, log: logFile.Name(), exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// await polls url() (empty: not yet known) until it answers 200, failing when the process
// exits first or after a minute.
func (p *process) await(ctx context.Context, url func() string) error {
	deadline := time.Now().Add(60 * time.Second)
	var err error
	for {
		select {
		case <-p.exited:
			b, _ := os.ReadFile(p.log)
			return fmt.Errorf("%s exited before it was ready:\n%s", p.cmd.Path, b)
		default:
		}
		if u := url(); u != "" {
			var resp *http.Response
			if resp, err = http.Get(u); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					return nil
				}
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			b, _ := os.ReadFile(p.log)
			p.stop()
			return fmt.Errorf("%s did not become ready at %s: %v\n%s", p.cmd.Path, url(), err, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends the process and removes its log (an error it met was reported from the log
// before: await's).
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	_ = os.Remove(p.log)
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// profileAddr is where contactd serves pprof with -profile (the directory made), or "".
func profileAddr(o options) (string, error) {
	if o.profileDir == "" {
		return "", nil
	}
	if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
		return "", err
	}
	return freeAddr()
}

func fetchProfile(addr string, d time.Duration, path string) error {
	secs := max(1, int(d.Round(time.Second).Seconds()))
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs))
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("profile: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("%d cores, %s, %s", runtime.NumCPU(), model, runtime.Version())
}

// settle writes out the dirty pages the previous workload left (CHECKPOINT) before the next
// is measured, so no workload, contactd's or the baseline's, pays for another's checkpoint and
// the ratios do not depend on the order. (Not VACUUM ANALYZE: it would change the plans the
// workloads run with between one workload and the next.)
func settle(ctx context.Context, st *store.Store) error {
	if _, err := st.Pool.Exec(ctx, "CHECKPOINT"); err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	return nil
}

// settleOwed does what the workloads before the floor left for autovacuum and the
// checkpointer, so that it is not done in the floor's windows, where the cluster's CPU would
// charge it to the floor. (The floor reads none of contactd's tables: their new statistics
// change none of its plans.)
func settleOwed(ctx context.Context, st *store.Store) error {
	if _, err := st.Pool.Exec(ctx, "VACUUM (ANALYZE)"); err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	return settle(ctx, st)
}

// drainEnrichment counts the contacts still due for enrichment when a workload ends, then
// waits (up to a minute) until contactd has enriched them, so the next workload does not pay
// for this one's background work; it returns the count and how long draining took.
func drainEnrichment(ctx context.Context, st *store.Store) (int64, time.Duration, error) {
	return drain(ctx, st, `SELECT count(*) FROM contacts WHERE enrich_due_at IS NOT NULL`)
}

// drain counts what the statement counts (contactd's background work left to do), then waits
// up to a minute until it counts none; it returns the first count and how long that took.
func drain(ctx context.Context, st *store.Store, counting string) (int64, time.Duration, error) {
	count := func() (n int64, err error) {
		err = st.Pool.QueryRow(ctx, counting).Scan(&n)
		return n, err
	}
	due, err := count()
	start := time.Now()
	for n := due; err == nil && n > 0 && time.Since(start) < time.Minute; n, err = count() {
		time.Sleep(100 * time.Millisecond)
	}
	return due, time.Since(start), err
}

// postmasterPID reads the cluster's postmaster PID from the first line of postmaster.pid.
func postmasterPID(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	first, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(first))
}
