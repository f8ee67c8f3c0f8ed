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
)

// receiver is a local webhook endpoint that notes when each event arrives.
type receiver struct {
	url string
	mu  sync.Mutex
	lat []time.Duration // arrival - eventDate (the event is written in the change's transaction)
	at  []time.Time
}

func startReceiver() (*receiver, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	rc := &receiver{url: "http://" + ln.Addr().String() + "/hook"}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		var p struct {
			Events []struct {
				EventDate time.Time `json:"eventDate"`
			} `json:"events"`
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &p); err != nil || len(p.Events) == 0 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		for _, e := range p.Events {
			rc.lat = append(rc.lat, now.Sub(e.EventDate))
			rc.at = append(rc.at, now)
		}
		rc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = srv.Serve(ln) }()
	return rc, func() { _ = srv.Close() }, nil
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.lat)
}

// webhookResult is the delivery measurement.
type webhookResult struct {
	Subscriptions int           `json:"subscriptions"`
	Events        int           `json:"events"`
	Deliveries    int           `json:"deliveries"`
	Expected      int           `json:"expected"`
	PerSecond     float64       `json:"deliveriesPerSecond"`
	P50           time.Duration `json:"p50"`
	P99           time.Duration `json:"p99"`
	CPUSeconds    float64       `json:"cpuSeconds"`
}

// measureWebhooks subscribes subs endpoints to TagsAdded, then adds a new tag to random
// contacts for d at the driver's concurrency: every request is one event and subs deliveries.
// Throughput is deliveries over the time from the first request to the last arrival.
func measureWebhooks(ctx context.Context, dr *driver, base string, ds dataset, p proc, subs int, d time.Duration) (webhookResult, error) {
	rc, stop, err := startReceiver()
	if err != nil {
		return webhookResult{}, err
	}
	defer stop()
	for range subs {
		body, _ := json.Marshal(map[string]string{"url": rc.url, "eventType": "TagsAdded"})
		if err := dr.do(ctx, request{method: "POST", url: base + "/public/v1/webhooks", body: body, want: 200}); err != nil {
			return webhookResult{}, fmt.Errorf("subscribe: %w", err)
		}
	}
	var seq atomic.Int64
	wl := workload{name: "webhook-tags", server: "contactd", next: func(w *worker) request {
		body := fmt.Appendf(nil, `{"tags":["wh-%d"]}`, seq.Add(1)) // always new: one event per request
		return request{method: "POST", url: base + "/public/v1/contact/" + ds.ids[w.rng.IntN(len(ds.ids))].String() + "/tags", body: body, want: 200}
	}}
	cpu0, err := p.cpuSeconds()
	if err != nil {
		return webhookResult{}, err
	}
	start := time.Now()
	lat, errs, firstErr := dr.drive(ctx, wl, d)
	if errs > 0 {
		return webhookResult{}, fmt.Errorf("webhook load: %d errors, first: %s", errs, firstErr)
	}
	res := webhookResult{Subscriptions: subs, Events: len(lat), Expected: len(lat) * subs}
	deadline := time.Now().Add(60 * time.Second)
	for rc.count() < res.Expected && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cpu1, err := p.cpuSeconds()
	if err != nil {
		return webhookResult{}, err
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	res.Deliveries = len(rc.lat)
	res.CPUSeconds = cpu1 - cpu0
	if res.Deliveries == 0 {
		return res, fmt.Errorf("no webhook arrived")
	}
	last := slices.MaxFunc(rc.at, func(a, b time.Time) int { return a.Compare(b) })
	res.PerSecond = float64(res.Deliveries) / last.Sub(start).Seconds()
	sorted := slices.Clone(rc.lat)
	slices.Sort(sorted)
	res.P50, res.P99 = percentile(sorted, 0.50), percentile(sorted, 0.99)
	return res, nil
}
