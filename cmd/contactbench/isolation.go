package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// The isolation run (contactbench isolation): -isolation-subs subscriptions (three per account), events
// produced at a steady pace, once with every receiver healthy and once with a tenth of them
// hanging until the attempt times out; it reports the healthy receivers' commit -> arrival
// latency in both. Delivery isolation is what keeps the second like the first.

// isoReceiver answers every delivery at once, except on the URLs marked slow, where it holds
// the request until the attempt gives up; it notes the healthy arrivals' latency.
type isoReceiver struct {
	base string
	mu   sync.Mutex
	lat  []time.Duration
	hung atomic.Int64
}

func startIsoReceiver() (*isoReceiver, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	rc := &isoReceiver{base: "http://" + ln.Addr().String()}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("slow") == "1" {
			rc.hung.Add(1)
			<-r.Context().Done()
			return
		}
		now := time.Now()
		var p struct {
			Events []struct {
				EventDate time.Time `json:"eventDate"`
			} `json:"events"`
		}
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &p) != nil || len(p.Events) == 0 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.lat = append(rc.lat, now.Sub(p.Events[0].EventDate))
		rc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = srv.Serve(ln) }()
	return rc, func() { _ = srv.Close() }, nil
}

func (rc *isoReceiver) take() []time.Duration {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	lat := rc.lat
	rc.lat = nil
	return lat
}

type isoAccount struct {
	key, contact string
	healthy      int // subscriptions of the account whose receivers answer
}

type isoScenario struct {
	Name       string        `json:"name"`
	Slow       int           `json:"slowSubscriptions"`
	Deliveries int           `json:"healthyDeliveries"`
	Expected   int           `json:"expected"`
	P50        time.Duration `json:"p50"`
	P99        time.Duration `json:"p99"`
	Max        time.Duration `json:"max"`
}

func runIsolation(ctx context.Context, o options, out io.Writer) error {
	b, err := openBenchDB(ctx, o.contactd, nil)
	if err != nil {
		return err
	}
	defer b.close()
	rc, stop, err := startIsoReceiver()
	if err != nil {
		return err
	}
	defer stop()
	cd, addr, err := startContactd(ctx, o.contactd, append(serveArgs(b.url, true), "--webhook-timeout", "5s",
		"--webhook-rescue-after", "16s"))
	if err != nil {
		return err
	}
	defer cd.stop()
	base := "http://" + addr + "/public/v1"
	dr := newDriver(16, b.apiKey)
	accounts := make([]isoAccount, (o.isoSubs+2)/3)
	for i := range accounts {
		name := fmt.Sprintf("iso-%d", i)
		if _, err := createAccount(ctx, b.bin, b.url, name); err != nil {
			return err
		}
		var err error
		if accounts[i].key, err = createKey(ctx, b.bin, b.url, name, "bench"); err != nil {
			return err
		}
		var created struct{ Contact struct{ ContactID string } }
		body := fmt.Appendf(nil, `{"email":"iso-%d@example.com"}`, i)
		if err := postJSON(ctx, dr, base+"/contact", accounts[i].key, body, &created); err != nil {
			return err
		}
		accounts[i].contact = created.Contact.ContactID
	}
	var results []isoScenario
	for _, slowEvery := range []int{0, 10} {
		sc, err := isoScenarioRun(ctx, o, dr, base, rc, accounts, slowEvery)
		if err != nil {
			return err
		}
		results = append(results, sc)
	}
	fmt.Fprintf(out, "contactbench isolation %s — %s — %d subscriptions (3 per account), %.0f events/s for %v, webhook timeout 5 s\n\n",
		time.Now().UTC().Format("2006-01-02"), machine(), o.isoSubs, o.isoRate, o.duration)
	fmt.Fprintln(out, "| scenario | slow subscriptions | healthy deliveries | commit -> arrival p50 | p99 | max |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|")
	for _, r := range results {
		fmt.Fprintf(out, "| %s | %d | %d of %d | %s | %s | %s |\n", r.Name, r.Slow, r.Deliveries, r.Expected, ms(r.P50), ms(r.P99), ms(r.Max))
	}
	for _, r := range results {
		if r.Deliveries != r.Expected {
			return fmt.Errorf("isolation: %s: %d of %d healthy deliveries arrived", r.Name, r.Deliveries, r.Expected)
		}
	}
	return nil
}

// isoScenarioRun subscribes three receivers per account (every slowEvery-th one hanging, none
// when 0), produces events at the run's pace and waits for the healthy deliveries.
func isoScenarioRun(ctx context.Context, o options, dr *driver, base string, rc *isoReceiver, accounts []isoAccount, slowEvery int) (isoScenario, error) {
	sc := isoScenario{Name: "all healthy"}
	if slowEvery > 0 {
		sc.Name = fmt.Sprintf("1 in %d hanging", slowEvery)
	}
	n := 0
	for i := range accounts {
		accounts[i].healthy = 0
		var list struct {
			Webhooks []struct{ SubscriptionID string }
		}
		if err := getJSONKey(ctx, dr, base+"/webhooks", accounts[i].key, &list); err != nil {
			return sc, err
		}
		for _, w := range list.Webhooks { // the previous scenario's
			if err := dr.do(ctx, request{method: "DELETE", url: base + "/webhooks/" + w.SubscriptionID, want: 204, key: accounts[i].key}); err != nil {
				return sc, err
			}
		}
		for j := 0; j < 3 && n < o.isoSubs; j++ {
			n++
			slow := slowEvery > 0 && n%slowEvery == 0
			url := fmt.Sprintf("%s/hook?sub=%s", rc.base, uuid.NewString())
			if slow {
				url += "&slow=1"
				sc.Slow++
			} else {
				accounts[i].healthy++
			}
			body, _ := json.Marshal(map[string]string{"url": url, "eventType": "TagsAdded"})
			if err := dr.do(ctx, request{method: "POST", url: base + "/webhooks", body: body, want: 200, key: accounts[i].key}); err != nil {
				return sc, err
			}
		}
	}
	rc.take()
	var seq, expected atomic.Int64
	wl := workload{name: "iso-tags", server: "contactd", next: func(w *worker) request {
		a := accounts[w.rng.IntN(len(accounts))]
		expected.Add(int64(a.healthy))
		return request{method: "POST", url: base + "/contact/" + a.contact + "/tags", want: 200, key: a.key,
			body: fmt.Appendf(nil, `{"tags":["iso-%d-%d"]}`, slowEvery, seq.Add(1))} // new in every scenario: one event each
	}}
	logf("isolation: %s, %d subscriptions, %.0f events/s for %v", sc.Name, n, o.isoRate, o.duration)
	if _, errs, first := dr.paced(ctx, wl, o.isoRate, o.duration); errs > 0 {
		return sc, fmt.Errorf("isolation load: %d errors, first: %s", errs, first)
	}
	sc.Expected = int(expected.Load())
	deadline := time.Now().Add(60 * time.Second)
	var lat []time.Duration
	for len(lat) < sc.Expected && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		lat = append(lat, rc.take()...)
	}
	slices.Sort(lat)
	sc.Deliveries, sc.P50, sc.P99 = len(lat), percentile(lat, 0.5), percentile(lat, 0.99)
	if len(lat) > 0 {
		sc.Max = lat[len(lat)-1]
	}
	return sc, nil
}

func postJSON(ctx context.Context, dr *driver, u, key string, body []byte, v any) error {
	return callJSON(ctx, dr, "POST", u, key, body, v)
}

func getJSONKey(ctx context.Context, dr *driver, u, key string, v any) error {
	return callJSON(ctx, dr, "GET", u, key, nil, v)
}

func callJSON(ctx context.Context, dr *driver, method, u, key string, body []byte, v any) error {
	var rd io.Reader
	if body != nil {
		rd = bytesReader(body)
	}
	req, _ := http.NewRequestWithContext(ctx, method, u, rd)
	req.Header.Set("x-api-key", key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := dr.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s %s: %d %.200s", method, u, resp.StatusCode, b)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
