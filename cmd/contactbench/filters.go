package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// The filters run (-filters): the price of payload filters on delivery. -filter-subs
// subscriptions to TagsAdded (three per account, each its own URL), producers as fast as they
// go for -duration, in three scenarios taken in turn -filter-rounds times: no filters; a filter
// on every subscription that wants every event (the price of evaluating one); and a filter
// that leaves out half the events (what that saves). Throughput is deliveries over the time
// from the first request to the last arrival.

type filterScenario struct {
	name   string
	filter map[string]any
	// kept is whether the filter wants an event with tag "<prefix>-<n>"
	kept func(prefix string) bool
}

var filterScenarios = []filterScenario{
	{name: "no filters", kept: func(string) bool { return true }},
	// tags are "a-<n>" or "b-<n>": both are below "c"
	{name: "filters, all kept", filter: map[string]any{"data.tagsAddedInfo.tagsAdded": map[string]any{"$lt": "c"}},
		kept: func(string) bool { return true }},
	{name: "filters, half left out", filter: map[string]any{"data.tagsAddedInfo.tagsAdded": map[string]any{"$lt": "b"}},
		kept: func(prefix string) bool { return prefix == "a" }},
}

type filterAccount struct {
	key      string
	contacts []string
}

type filterResult struct {
	Name       string  `json:"name"`
	Round      int     `json:"round"`
	Events     int     `json:"events"`
	Deliveries int     `json:"deliveries"`
	PerSecond  float64 `json:"deliveriesPerSecond"`
	EventsPS   float64 `json:"eventsPerSecond"`
}

func runFilters(ctx context.Context, o options, out io.Writer) error {
	b, err := openBenchDB(ctx, o.contactd, nil)
	if err != nil {
		return err
	}
	defer b.close()
	rc, stop, err := startReceiver()
	if err != nil {
		return err
	}
	defer stop()
	cd, addr, err := startContactd(ctx, o.contactd, serveArgs(b.url, true))
	if err != nil {
		return err
	}
	defer cd.stop()
	base := "http://" + addr + "/public/v1"
	dr := newDriver(o.whConc, b.apiKey)
	accounts := make([]filterAccount, (o.filterSubs+2)/3)
	for i := range accounts {
		name := fmt.Sprintf("filters-%d", i)
		if _, err := createAccount(ctx, b.bin, b.url, name); err != nil {
			return err
		}
		var err error
		if accounts[i].key, err = createKey(ctx, b.bin, b.url, name, "bench"); err != nil {
			return err
		}
		// enough contacts that none reaches its 500 tags in the run
		var batch struct{ Contacts []map[string]string }
		for j := range 200 {
			batch.Contacts = append(batch.Contacts, map[string]string{"email": fmt.Sprintf("filters-%d-%d@example.com", i, j)})
		}
		body, _ := json.Marshal(map[string]any{"contacts": batch.Contacts})
		var created struct{ Results []struct{ ContactID string } }
		if err := postJSON(ctx, dr, base+"/contacts/batch", accounts[i].key, body, &created); err != nil {
			return err
		}
		for _, r := range created.Results {
			accounts[i].contacts = append(accounts[i].contacts, r.ContactID)
		}
	}
	var results []filterResult
	var seq atomic.Int64
	for round := 1; round <= o.filterRounds; round++ {
		for _, sc := range filterScenarios {
			r, err := filterScenarioRun(ctx, o, dr, base, rc, accounts, sc, &seq)
			if err != nil {
				return err
			}
			r.Round = round
			results = append(results, r)
		}
	}
	fmt.Fprintf(out, "contactbench filters %s — %s — %d subscriptions to TagsAdded (3 per account, a URL each), c=%d for %v per scenario\n\n",
		time.Now().UTC().Format("2006-01-02"), machine(), o.filterSubs, o.whConc, o.duration)
	fmt.Fprintln(out, "| round | scenario | events | deliveries | deliveries/s | events/s | deliveries/s vs no filters |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|")
	var none float64
	for _, r := range results {
		if r.Name == filterScenarios[0].name {
			none = r.PerSecond
		}
		fmt.Fprintf(out, "| %d | %s | %d | %d | %.0f | %.0f | %.2f |\n", r.Round, r.Name, r.Events, r.Deliveries, r.PerSecond, r.EventsPS, r.PerSecond/none)
	}
	if o.jsonOut != "" {
		js, _ := json.MarshalIndent(results, "", "  ")
		return os.WriteFile(o.jsonOut, js, 0o644)
	}
	return nil
}

// filterScenarioRun subscribes three receivers per account with the scenario's filter (the
// previous scenario's subscriptions removed), drives tag changes for o.duration and waits for
// the deliveries the filters want.
func filterScenarioRun(ctx context.Context, o options, dr *driver, base string, rc *receiver, accounts []filterAccount,
	sc filterScenario, seq *atomic.Int64) (filterResult, error) {
	res := filterResult{Name: sc.name}
	n := 0
	for i := range accounts {
		var list struct {
			Webhooks []struct{ SubscriptionID, Status string }
		}
		if err := getJSONKey(ctx, dr, base+"/webhooks", accounts[i].key, &list); err != nil {
			return res, err
		}
		for _, w := range list.Webhooks {
			if w.Status != "Removed" {
				if err := dr.do(ctx, request{method: "DELETE", url: base + "/webhooks/" + w.SubscriptionID, want: 204, key: accounts[i].key}); err != nil {
					return res, err
				}
			}
		}
		for j := 0; j < 3 && n < o.filterSubs; j++ {
			n++
			sub := map[string]any{"url": fmt.Sprintf("%s?sub=%s", rc.url, uuid.NewString()), "eventType": "TagsAdded"}
			if sc.filter != nil {
				sub["filter"] = sc.filter
			}
			body, _ := json.Marshal(sub)
			if err := dr.do(ctx, request{method: "POST", url: base + "/webhooks", body: body, want: 200, key: accounts[i].key}); err != nil {
				return res, err
			}
		}
	}
	subsOf := func(i int) int { return min(3, o.filterSubs-3*i) }
	rc.take()
	var expected atomic.Int64
	wl := workload{name: "filter-tags", server: "contactd", next: func(w *worker) request {
		i := w.rng.IntN(len(accounts))
		prefix := "a"
		if w.rng.IntN(2) == 1 {
			prefix = "b"
		}
		if sc.kept(prefix) {
			expected.Add(int64(subsOf(i)))
		}
		a := accounts[i]
		return request{method: "POST", url: base + "/contact/" + a.contacts[w.rng.IntN(len(a.contacts))] + "/tags", want: 200, key: a.key,
			body: fmt.Appendf(nil, `{"tags":["%s-%d"]}`, prefix, seq.Add(1))}
	}}
	logf("filters: %s, %d subscriptions, c=%d for %v", sc.name, n, o.whConc, o.duration)
	start := time.Now()
	lat, errs, first := dr.drive(ctx, wl, o.duration)
	if errs > 0 {
		return res, fmt.Errorf("filters load: %d errors, first: %s", errs, first)
	}
	res.Events = len(lat)
	want := int(expected.Load())
	if err := awaitArrivals(rc, want, time.Minute); err != nil {
		return res, err
	}
	_, at := rc.take()
	res.Deliveries = len(at)
	if res.Deliveries != want {
		return res, fmt.Errorf("filters: %s: %d deliveries arrived, %d wanted", sc.name, res.Deliveries, want)
	}
	last := slices.MaxFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	res.PerSecond = float64(res.Deliveries) / last.Sub(start).Seconds()
	res.EventsPS = float64(res.Events) / last.Sub(start).Seconds()
	return res, nil
}
