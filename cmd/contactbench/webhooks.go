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

// take returns what arrived so far and starts over.
func (rc *receiver) take() (lat []time.Duration, at []time.Time) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	lat, at = rc.lat, rc.at
	rc.lat, rc.at = nil, nil
	return lat, at
}

// subscribeWorkloads subscribes a local receiver to TagsAdded for the request workloads, as an
// account in production would be: each create with tags and each new tag then queues a
// delivery with its change, and contactd delivers it meanwhile. The function it returns
// removes the subscription (the webhook workload subscribes its own) and stops the receiver,
// the first time it is called.
func subscribeWorkloads(ctx context.Context, dr *driver, base string) (func(context.Context) error, error) {
	rc, stop, err := startReceiver()
	if err != nil {
		return nil, err
	}
	var sub struct {
		SubscriptionID string `json:"subscriptionId"`
	}
	body, _ := json.Marshal(map[string]string{"url": rc.url + "?sub=workloads", "eventType": "TagsAdded"})
	if err := dr.doJSON(ctx, request{method: "POST", url: base + "/public/v1/webhooks", body: body, want: 200}, &sub); err != nil {
		stop()
		return nil, fmt.Errorf("subscribe the workloads' receiver: %w", err)
	}
	var once sync.Once
	return func(ctx context.Context) (err error) {
		once.Do(func() {
			defer stop()
			err = dr.do(ctx, request{method: "DELETE", url: base + "/public/v1/webhooks/" + sub.SubscriptionID, want: 204})
		})
		return err
	}, nil
}

// webhookResult is the delivery measurement: throughput with producers as fast as they can
// go, then latency with producers paced below that, where it means something (at saturation
// every delivery waits behind the backlog, however long the run made it).
type webhookResult struct {
	Subscriptions int     `json:"subscriptions"`
	Events        int     `json:"events"`
	Deliveries    int     `json:"deliveries"`
	Expected      int     `json:"expected"`
	PerSecond     float64 `json:"deliveriesPerSecond"`
	CPUSeconds    float64 `json:"cpuSeconds"`
	// the paced phase: deliveries asked per second, what it delivered, commit -> arrival.
	PacedRate       float64       `json:"pacedDeliveriesPerSecond"`
	PacedAchieved   float64       `json:"pacedAchievedPerSecond"`
	PacedDeliveries int           `json:"pacedDeliveries"`
	PacedExpected   int           `json:"pacedExpected"`
	P50             time.Duration `json:"p50"`
	P99             time.Duration `json:"p99"`
	// apart: the producers alone (every subscription paused: the deliveries queued, none
	// sent), then their backlog sent alone once resumed. Which of the two halves costs what,
	// set beside the floor's own halves.
	ProducedAlone float64 `json:"producedAloneEventsPerSecond"`
	DrainedAlone  float64 `json:"drainedAloneDeliveriesPerSecond"`
	Drained       int     `json:"drainedDeliveries"`
	// CPU spent while producers and sending ran at once (to the last arrival), and while the
	// backlog was sent alone
	PipelineCPU cpuUse `json:"pipelineCPUSeconds"`
	DrainCPU    cpuUse `json:"drainCPUSeconds"`
}

// measureWebhooks subscribes subs endpoints to TagsAdded; each request adds a new tag to a
// random contact: one event, subs deliveries. First the driver's clients send as fast as
// they can for d (throughput: deliveries over the time from the first request to the last
// arrival), then they send at rate deliveries/s for d (latency from commit to arrival).
func measureWebhooks(ctx context.Context, dr *driver, base string, ds dataset, cpu cpuMeter, subs int, d time.Duration, rate float64) (webhookResult, error) {
	rc, stop, err := startReceiver()
	if err != nil {
		return webhookResult{}, err
	}
	defer stop()
	ids := make([]string, subs)
	for i := range subs {
		// a URL each: one receiver URL gets at most CONTACTD_WEBHOOK_MAX_IN_FLIGHT (4) attempts
		// at once, which would measure that one receiver's ceiling instead of the delivery's
		body, _ := json.Marshal(map[string]string{"url": fmt.Sprintf("%s?sub=%d", rc.url, i), "eventType": "TagsAdded"})
		var sub struct {
			SubscriptionID string `json:"subscriptionId"`
		}
		if err := dr.doJSON(ctx, request{method: "POST", url: base + "/public/v1/webhooks", body: body, want: 200}, &sub); err != nil {
			return webhookResult{}, fmt.Errorf("subscribe: %w", err)
		}
		ids[i] = sub.SubscriptionID
	}
	var seq atomic.Int64
	wl := workload{name: "webhook-tags", server: "contactd", next: func(w *worker) request {
		body := fmt.Appendf(nil, `{"tags":["wh-%d"]}`, seq.Add(1)) // always new: one event per request
		return request{method: "POST", url: base + "/public/v1/contact/" + ds.ids[w.rng.IntN(len(ds.ids))].String() + "/tags", body: body, want: 200}
	}}
	res := webhookResult{Subscriptions: subs, PacedRate: rate}

	cpu0, err := cpu.read()
	if err != nil {
		return res, err
	}
	start := time.Now()
	lat, errs, firstErr := dr.drive(ctx, wl, d)
	if errs > 0 {
		return res, fmt.Errorf("webhook load: %d errors, first: %s", errs, firstErr)
	}
	res.Events, res.Expected = len(lat), len(lat)*subs
	if err := awaitArrivals(rc, res.Expected, time.Minute); err != nil {
		return res, err
	}
	cpu1, err := cpu.read()
	if err != nil {
		return res, err
	}
	_, at := rc.take()
	res.PipelineCPU = cpu1.since(cpu0)
	res.Deliveries, res.CPUSeconds = len(at), res.PipelineCPU.Contactd
	last := slices.MaxFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	res.PerSecond = float64(res.Deliveries) / last.Sub(start).Seconds()

	logf("webhooks: paced at %.0f deliveries/s", rate)
	start = time.Now()
	events, errs, firstErr := dr.paced(ctx, wl, rate/float64(subs), d)
	if errs > 0 {
		return res, fmt.Errorf("paced webhook load: %d errors, first: %s", errs, firstErr)
	}
	res.PacedExpected = events * subs
	if err := awaitArrivals(rc, res.PacedExpected, time.Minute); err != nil {
		return res, err
	}
	arrived, at := rc.take()
	res.PacedDeliveries = len(arrived)
	last = slices.MaxFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	res.PacedAchieved = float64(len(arrived)) / last.Sub(start).Seconds()
	slices.Sort(arrived)
	res.P50, res.P99 = percentile(arrived, 0.50), percentile(arrived, 0.99)
	return res, measureApart(ctx, dr, base, wl, rc, cpu, ids, d, &res)
}

// measureApart runs the producers as fast as they go for d with every subscription paused,
// then resumes them all and times the backlog's delivery.
func measureApart(ctx context.Context, dr *driver, base string, wl workload, rc *receiver, cpu cpuMeter, ids []string, d time.Duration, res *webhookResult) error {
	pause := func(paused bool) error {
		for _, id := range ids {
			body := fmt.Appendf(nil, `{"paused":%t}`, paused)
			if err := dr.do(ctx, request{method: "PATCH", url: base + "/public/v1/webhooks/" + id, body: body, want: 200}); err != nil {
				return fmt.Errorf("pause %t: %w", paused, err)
			}
		}
		return nil
	}
	if err := pause(true); err != nil {
		return err
	}
	start := time.Now()
	lat, errs, firstErr := dr.drive(ctx, wl, d)
	if errs > 0 {
		return fmt.Errorf("webhook load, paused: %d errors, first: %s", errs, firstErr)
	}
	res.ProducedAlone = float64(len(lat)) / time.Since(start).Seconds()
	if n := rc.count(); n > 0 {
		return fmt.Errorf("%d deliveries of paused subscriptions arrived", n)
	}
	want := len(lat) * len(ids)
	logf("webhooks: %d deliveries queued while paused; resuming", want)
	cpu0, err := cpu.read()
	if err != nil {
		return err
	}
	start = time.Now()
	if err := pause(false); err != nil {
		return err
	}
	if err := awaitArrivals(rc, want, max(time.Minute, time.Duration(want)*time.Second/500)); err != nil {
		return err
	}
	cpu1, err := cpu.read()
	if err != nil {
		return err
	}
	res.DrainCPU = cpu1.since(cpu0)
	_, at := rc.take()
	res.Drained = len(at)
	res.DrainedAlone = float64(len(at)) / slices.MaxFunc(at, func(a, b time.Time) int { return a.Compare(b) }).Sub(start).Seconds()
	return nil
}

// awaitArrivals waits up to limit for n deliveries to have arrived.
func awaitArrivals(rc *receiver, n int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for rc.count() < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := rc.count(); got < n {
		return fmt.Errorf("%d of %d webhook deliveries arrived", got, n)
	}
	return nil
}
