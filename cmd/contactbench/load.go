package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"
)

// request is one call a workload makes; want is the status that counts as success.
type request struct {
	method, url string
	body        []byte
	want        int
	key         string // the API key to send, when not the driver's
	idempotency string // the Idempotency-Key to send, if any
}

// workload makes the next request for worker w (each worker has its own rng and counter).
type workload struct {
	name   string
	server string // "contactd" or "baseline": whose process is measured
	next   func(w *worker) request
}

type worker struct {
	id  int
	rng *rand.Rand
}

// result is one workload's measurement.
type result struct {
	Name       string        `json:"name"`
	Server     string        `json:"server"`
	Requests   int           `json:"requests"`
	Errors     int           `json:"errors"`
	FirstError string        `json:"firstError,omitempty"`
	Seconds    float64       `json:"seconds"`
	RPS        float64       `json:"rps"`
	P50        time.Duration `json:"p50"`
	P90        time.Duration `json:"p90"`
	P99        time.Duration `json:"p99"`
	CPUSeconds float64       `json:"cpuSeconds"`
	// DBCPUSeconds is PostgreSQL's CPU time (every process of the cluster) during the run.
	DBCPUSeconds float64 `json:"dbCpuSeconds"`
	PeakRSS      int64   `json:"peakRssBytes"`
	// EnrichDue is how many contacts were still due for enrichment when the workload's slices
	// ended, in all: how far the background enrichment fell behind the creates.
	EnrichDue   int64         `json:"enrichDue"`
	EnrichDrain time.Duration `json:"enrichDrain"`
	// DeliveriesDue is how many webhook deliveries (to the workloads' TagsAdded subscriber)
	// were still pending when the slices ended, and DeliveriesDrain how long they took to go.
	DeliveriesDue   int64         `json:"deliveriesDue"`
	DeliveriesDrain time.Duration `json:"deliveriesDrain"`
	// BaselineRPS is the requests/s of the baseline workload this one was interleaved with,
	// slice for slice: the denominator of its ratio.
	BaselineRPS float64 `json:"baselineRps,omitempty"`
}

// driver sends requests with a fixed number of concurrent clients.
type driver struct {
	client      *http.Client
	apiKey      string
	concurrency int
}

func newDriver(concurrency int, apiKey string) *driver {
	tr := &http.Transport{MaxIdleConns: concurrency * 2, MaxIdleConnsPerHost: concurrency * 2,
		IdleConnTimeout: time.Minute, DisableCompression: true}
	return &driver{client: &http.Client{Transport: tr, Timeout: 30 * time.Second}, apiKey: apiKey, concurrency: concurrency}
}

// measurement accumulates one workload's slices of measured time.
type measurement struct {
	lat             []time.Duration
	errs            int
	firstErr        string
	seconds         float64
	cpu, dbCPU      float64
	peakRSS         int64
	enrichDue       int64
	enrichDrain     time.Duration
	deliveriesDue   int64
	deliveriesDrain time.Duration
}

// slice drives wl for d, measuring the server process p and the PostgreSQL cluster whose
// postmaster is pg, and adds what it measured to m.
func (dr *driver) slice(ctx context.Context, wl workload, p proc, pg int, d time.Duration, m *measurement) error {
	cpu := func() (server, db float64, err error) {
		if server, err = p.cpuSeconds(); err != nil {
			return 0, 0, err
		}
		db, err = clusterCPU(pg)
		return server, db, err
	}
	if err := p.resetPeakRSS(); err != nil {
		return err
	}
	cpu0, db0, err := cpu()
	if err != nil {
		return err
	}
	start := time.Now()
	lat, errs, firstErr := dr.drive(ctx, wl, d)
	elapsed := time.Since(start).Seconds()
	cpu1, db1, err := cpu()
	if err != nil {
		return err
	}
	rss, err := p.peakRSSBytes()
	if err != nil {
		return err
	}
	m.add(measurement{lat: lat, errs: errs, firstErr: firstErr, seconds: elapsed,
		cpu: cpu1 - cpu0, dbCPU: db1 - db0, peakRSS: rss})
	return nil
}

// add merges o's slices into m.
func (m *measurement) add(o measurement) {
	m.lat = append(m.lat, o.lat...)
	m.errs += o.errs
	if m.firstErr == "" {
		m.firstErr = o.firstErr
	}
	m.seconds, m.cpu, m.dbCPU = m.seconds+o.seconds, m.cpu+o.cpu, m.dbCPU+o.dbCPU
	m.peakRSS = max(m.peakRSS, o.peakRSS)
}

func (m *measurement) result(wl workload) result {
	slices.Sort(m.lat)
	n := len(m.lat) + m.errs
	return result{Name: wl.name, Server: wl.server, Requests: n, Errors: m.errs, FirstError: m.firstErr,
		Seconds: m.seconds, RPS: float64(n) / m.seconds, CPUSeconds: m.cpu, DBCPUSeconds: m.dbCPU, PeakRSS: m.peakRSS,
		P50: percentile(m.lat, 0.50), P90: percentile(m.lat, 0.90), P99: percentile(m.lat, 0.99),
		EnrichDue: m.enrichDue, EnrichDrain: m.enrichDrain, DeliveriesDue: m.deliveriesDue, DeliveriesDrain: m.deliveriesDrain}
}

// drive runs the clients for d and returns the successful requests' latencies. Requests in
// flight at the end are completed and counted: each one the server took did its work.
func (dr *driver) drive(ctx context.Context, wl workload, d time.Duration) (lat []time.Duration, errs int, firstErr string) {
	end := time.Now().Add(d)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range dr.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &worker{id: i, rng: rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))}
			mine := make([]time.Duration, 0, 4096)
			var myErrs int
			var myFirst string
			for ctx.Err() == nil && time.Now().Before(end) {
				req := wl.next(w)
				t0 := time.Now()
				err := dr.do(ctx, req)
				if err != nil {
					myErrs++
					if myFirst == "" {
						myFirst = err.Error()
					}
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			errs += myErrs
			if firstErr == "" {
				firstErr = myFirst
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return lat, errs, firstErr
}

// paced sends rate requests per second in all for d, spread over the clients (each on its
// own schedule, so a slow response delays only its client) and returns how many were sent.
func (dr *driver) paced(ctx context.Context, wl workload, rate float64, d time.Duration) (sent, errs int, firstErr string) {
	start := time.Now()
	interval := time.Duration(float64(dr.concurrency) / rate * float64(time.Second))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range dr.concurrency {
		wg.Go(func() {
			w := &worker{id: i, rng: rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))}
			var mySent, myErrs int
			var myFirst string
			for next := start.Add(interval * time.Duration(i) / time.Duration(dr.concurrency)); next.Before(start.Add(d)) && ctx.Err() == nil; next = next.Add(interval) {
				time.Sleep(time.Until(next))
				mySent++
				if err := dr.do(ctx, wl.next(w)); err != nil {
					myErrs++
					if myFirst == "" {
						myFirst = err.Error()
					}
				}
			}
			mu.Lock()
			sent, errs = sent+mySent-myErrs, errs+myErrs
			if firstErr == "" {
				firstErr = myFirst
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return sent, errs, firstErr
}

func (dr *driver) do(ctx context.Context, r request) error { return dr.doJSON(ctx, r, nil) }

// doJSON is do, decoding the answer's body into out unless out is nil.
func (dr *driver) doJSON(ctx context.Context, r request, out any) error {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, body)
	if err != nil {
		return err
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	key := dr.apiKey
	if r.key != "" {
		key = r.key
	}
	req.Header.Set("x-api-key", key)
	if r.idempotency != "" {
		req.Header.Set("Idempotency-Key", r.idempotency)
	}
	resp, err := dr.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != r.want {
		return fmt.Errorf("%s %s: %d %.200s", r.method, r.url, resp.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}
