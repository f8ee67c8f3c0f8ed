package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// floorResult is the simplest durable webhook pipeline there is, on the run's PostgreSQL and
// machine: what contactd's deliveries/s is a share of. A delivery there is a row inserted by
// a producer (committed durably, three per statement as a tag change queues one for each of
// the webhook workload's three subscriptions), leased by one statement, posted to the same
// kind of receiver and marked done by a second statement, both committed without waiting for
// the flush (as contactd's claims and records are): no events, attempts, isolation, signature
// or retry schedule.
type floorResult struct {
	QueueAlone    float64 `json:"queueAlonePerSecond"`    // lease + done, on a filled queue
	HTTPAlone     float64 `json:"httpAlonePerSecond"`     // POSTs to the receiver
	Pipeline      float64 `json:"pipelinePerSecond"`      // producers, lease, POST, done
	ProducedAlone float64 `json:"producedAlonePerSecond"` // deliveries queued by the producers alone
	DrainedAlone  float64 `json:"drainedAlonePerSecond"`  // lease, POST, done on a filled queue
	// the deliveries made, and the CPU spent, while the pipeline ran and while the filled
	// queue was sent alone
	PipelineN   int64  `json:"pipelineDeliveries"`
	PipelineCPU cpuUse `json:"pipelineCPUSeconds"`
	DrainN      int64  `json:"drainedDeliveries"`
	DrainCPU    cpuUse `json:"drainCPUSeconds"`
}

const (
	floorWorkers   = 12 // the webhook workload's three receivers at four attempts each
	floorProducers = 4
	floorLease     = `UPDATE bench_floor_queue q SET leased_until = now() + interval '1 minute'
		FROM (SELECT id FROM bench_floor_queue WHERE status = 'P' AND leased_until IS NULL ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) c
		WHERE q.id = c.id RETURNING q.id, q.payload`
	floorDone = `UPDATE bench_floor_queue SET status = 'D', leased_until = NULL WHERE id = $1`
)

// measureFloor measures the floor's three figures for d each, in a table of its own that it
// drops afterwards.
func measureFloor(ctx context.Context, dbURL string, rc *receiver, cpu cpuMeter, d time.Duration) (floorResult, error) {
	var res floorResult
	lazy, err := floorPool(ctx, dbURL, "off", floorWorkers)
	if err != nil {
		return res, err
	}
	defer lazy.Close()
	durable, err := floorPool(ctx, dbURL, "on", floorProducers)
	if err != nil {
		return res, err
	}
	defer durable.Close()
	if _, err := durable.Exec(ctx, `DROP TABLE IF EXISTS bench_floor_queue;
		CREATE TABLE bench_floor_queue (id bigserial PRIMARY KEY, status text NOT NULL, payload text NOT NULL,
			leased_until timestamptz, created_at timestamptz NOT NULL DEFAULT now());
		CREATE INDEX bench_floor_queue_pending ON bench_floor_queue (id) WHERE status = 'P'`); err != nil {
		return res, err
	}
	defer durable.Exec(context.WithoutCancel(ctx), `DROP TABLE bench_floor_queue`)
	payload := fmt.Sprintf(`{"events":[{"eventType":"TagsAdded","eventDate":"%s","payload":{"tags":["%s"]}}]}`,
		time.Now().UTC().Format(time.RFC3339Nano), strings.Repeat("x", 200))
	fill := `INSERT INTO bench_floor_queue (status, payload) SELECT 'P', $1 FROM generate_series(1, $2::int)`
	// refill empties the queue, then fills it with more than its workers can take in d
	refill := func() error {
		if _, err := durable.Exec(ctx, `TRUNCATE bench_floor_queue`); err != nil {
			return err
		}
		if _, err := durable.Exec(ctx, fill, payload, int(d.Seconds()*20_000)); err != nil {
			return err
		}
		_, err := durable.Exec(ctx, `VACUUM ANALYZE bench_floor_queue`)
		return err
	}

	// the queue alone
	if err := refill(); err != nil {
		return res, err
	}
	n, err := floorRun(ctx, d, floorWorkers, func(ctx context.Context) (bool, error) { return floorDeliver(ctx, lazy, nil) })
	if err != nil {
		return res, err
	}
	res.QueueAlone = float64(n) / d.Seconds()

	// the receiver alone
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: floorWorkers}, Timeout: 10 * time.Second}
	post := func(ctx context.Context, body string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, rc.url+"?sub=floor", strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			return fmt.Errorf("the receiver answered %d", resp.StatusCode)
		}
		return nil
	}
	n, err = floorRun(ctx, d, floorWorkers, func(ctx context.Context) (bool, error) { return true, post(ctx, payload) })
	if err != nil {
		return res, err
	}
	res.HTTPAlone = float64(n) / d.Seconds()

	// the pipeline: producers and workers at once, from an empty queue
	if _, err := durable.Exec(ctx, `TRUNCATE bench_floor_queue`); err != nil {
		return res, err
	}
	produce, stop := context.WithCancel(ctx)
	var producers sync.WaitGroup
	var produceErr atomic.Value
	for range floorProducers {
		producers.Add(1)
		go func() {
			defer producers.Done()
			for produce.Err() == nil {
				if _, err := durable.Exec(produce, fill, payload, 3); err != nil && produce.Err() == nil {
					produceErr.Store(err)
					return
				}
			}
		}()
	}
	cpu0, err := cpu.read()
	if err != nil {
		stop()
		producers.Wait()
		return res, err
	}
	n, err = floorRun(ctx, d, floorWorkers, func(ctx context.Context) (bool, error) {
		return floorDeliver(ctx, lazy, func(body string) error { return post(ctx, body) })
	})
	cpu1, cpuErr := cpu.read()
	stop()
	producers.Wait()
	if err == nil {
		err = cpuErr
	}
	res.PipelineCPU, res.PipelineN = cpu1.since(cpu0), n
	if err != nil {
		return res, err
	}
	if err, _ := produceErr.Load().(error); err != nil {
		return res, err
	}
	res.Pipeline = float64(n) / d.Seconds()

	// the halves apart: the producers alone into an empty queue, then lease, POST and done
	// alone on a queue filled with more than they can take in d
	if _, err := durable.Exec(ctx, `TRUNCATE bench_floor_queue`); err != nil {
		return res, err
	}
	n, err = floorRun(ctx, d, floorProducers, func(ctx context.Context) (bool, error) {
		_, err := durable.Exec(ctx, fill, payload, 3)
		return err == nil, err
	})
	if err != nil {
		return res, err
	}
	res.ProducedAlone = float64(3*n) / d.Seconds()
	if err := refill(); err != nil {
		return res, err
	}
	if cpu0, err = cpu.read(); err != nil {
		return res, err
	}
	n, err = floorRun(ctx, d, floorWorkers, func(ctx context.Context) (bool, error) {
		return floorDeliver(ctx, lazy, func(body string) error { return post(ctx, body) })
	})
	if err != nil {
		return res, err
	}
	if cpu1, err = cpu.read(); err != nil {
		return res, err
	}
	res.DrainCPU, res.DrainN = cpu1.since(cpu0), n
	res.DrainedAlone = float64(n) / d.Seconds()
	rc.take()
	return res, nil
}

func floorPool(ctx context.Context, dbURL, synchronousCommit string, conns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns, cfg.MinConns = conns, conns
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = synchronousCommit
	return pgxpool.NewWithConfig(ctx, cfg)
}

// floorDeliver leases one delivery, posts it (send, when not nil) and marks it done; false
// when none was due.
func floorDeliver(ctx context.Context, pool *pgxpool.Pool, send func(body string) error) (bool, error) {
	var id int64
	var body string
	if err := pool.QueryRow(ctx, floorLease).Scan(&id, &body); errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if send != nil {
		if err := send(body); err != nil {
			return false, err
		}
	}
	_, err := pool.Exec(ctx, floorDone, id)
	return err == nil, err
}

// floorRun runs step in workers goroutines for d and counts the steps that did something; a
// worker that finds nothing to do waits a millisecond (the producers are behind).
func floorRun(ctx context.Context, d time.Duration, workers int, step func(context.Context) (bool, error)) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var n atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				did, err := step(ctx)
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
						cancel()
					}
					return
				}
				if did {
					n.Add(1)
				} else {
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return n.Load(), <-errs
}

// printFloor prints the floor beside contactd's figures of the same run: the pipeline, and
// its two halves apart. Both halves share the machine's CPU, so a pipeline delivers about
// 1 / (1/produced + 1/sent) a second (the halves' costs per delivery added up): set beside the
// pipeline's measured rate, that tells which half holds contactd back, and what its
// producers would allow with the floor's sending.
func printFloor(w io.Writer, f floorResult, wh webhookResult) {
	fmt.Fprintf(w, "the floor of a delivery here (the simplest durable pipeline, same PostgreSQL): a queue's lease and done alone %.0f/s; POSTs to the receiver alone %.0f/s\n",
		f.QueueAlone, f.HTTPAlone)
	added := func(produced, sent float64) float64 {
		if produced <= 0 || sent <= 0 {
			return 0
		}
		return 1 / (1/produced + 1/sent)
	}
	row := func(what string, contactd, floor float64) {
		share := "—"
		if contactd > 0 && floor > 0 {
			share = fmt.Sprintf("%.2f", contactd/floor)
		}
		fmt.Fprintf(w, "| %s | %.0f | %.0f | %s |\n", what, contactd, floor, share)
	}
	fmt.Fprintln(w, "\n| deliveries/s | contactd | the floor | contactd / floor |\n|---|---|---|---|")
	produced := wh.ProducedAlone * float64(wh.Subscriptions)
	row("queued by the producers alone (contactd: its subscriptions paused)", produced, f.ProducedAlone)
	row("sent alone, from a backlog", wh.DrainedAlone, f.DrainedAlone)
	row("producers and sending at once (measured)", wh.PerSecond, f.Pipeline)
	row("the same, as the halves' costs add up: 1 / (1/queued + 1/sent)", added(produced, wh.DrainedAlone), added(f.ProducedAlone, f.DrainedAlone))
	if x := added(produced, f.DrainedAlone); x > 0 {
		fmt.Fprintf(w, "contactd's producers with the floor's sending, as the costs add up: %.0f deliveries/s\n", x)
	}
}

// printDeliveryCPU prints where the CPU of a delivery went, contactd's and the floor's (nil:
// not measured): at the machine's cores all busy, the deliveries a second it allows.
func printDeliveryCPU(w io.Writer, wh webhookResult, f *floorResult) {
	fmt.Fprintln(w, "\n| CPU ms per delivery | contactd | PostgreSQL | this tool (load, receiver) | all | the machine's cores / all, deliveries/s |\n|---|---|---|---|---|---|")
	row := func(what string, u cpuUse, n int64) {
		if n <= 0 {
			return
		}
		per := func(s float64) float64 { return 1000 * s / float64(n) }
		all := per(u.Contactd + u.Postgres + u.Tool)
		fmt.Fprintf(w, "| %s | %.3f | %.3f | %.3f | %.3f | %.0f |\n", what, per(u.Contactd), per(u.Postgres), per(u.Tool), all,
			1000*float64(runtime.NumCPU())/all)
	}
	row("contactd: producers and sending at once", wh.PipelineCPU, int64(wh.Deliveries))
	row("contactd: sent alone, from a backlog", wh.DrainCPU, int64(wh.Drained))
	if f != nil {
		row("the floor: producers and sending at once", f.PipelineCPU, f.PipelineN)
		row("the floor: sent alone, from a backlog", f.DrainCPU, f.DrainN)
	}
}

// requestCeiling is the most a workload can do, as a share of a baseline doing baselineRPS on
// cores, when each of its requests also costs a delivery of deliveryMs of CPU, made on the
// same cores meanwhile, and costs no more than the baseline's request itself: every core busy,
// a baseline request took at most cores/baselineRPS of the machine, and the workload's request
// that much and its delivery.
func requestCeiling(baselineRPS float64, cores int, deliveryMs float64) float64 {
	if baselineRPS <= 0 || deliveryMs < 0 {
		return 0
	}
	requestMs := 1000 * float64(cores) / baselineRPS
	return requestMs / (requestMs + deliveryMs)
}

// printCeilings says how far the machine lets POST contact and POST tags go with the
// workloads' TagsAdded subscriber, which makes a delivery of (about) every request on the
// same cores during the slice: with a delivery at the floor's cost, and with one that cost
// only its POST to the receiver.
func printCeilings(w io.Writer, baselineInsertRPS float64, f floorResult) {
	if f.DrainN <= 0 || f.HTTPAlone <= 0 || baselineInsertRPS <= 0 {
		return
	}
	cores := runtime.NumCPU()
	floorMs := 1000 * (f.DrainCPU.Contactd + f.DrainCPU.Postgres + f.DrainCPU.Tool) / float64(f.DrainN)
	postMs := 1000 * float64(cores) / f.HTTPAlone
	fmt.Fprintf(w, "\nwhat these %d cores allow POST contact and POST tags with a delivery a request, were a request no dearer than the baseline's INSERT (at most %.3f ms of the machine at %.0f/s):\n",
		cores, 1000*float64(cores)/baselineInsertRPS, baselineInsertRPS)
	fmt.Fprintf(w, "  its delivery at the floor's cost from a backlog (%.3f ms of CPU): %.2f × baseline-insert\n",
		floorMs, requestCeiling(baselineInsertRPS, cores, floorMs))
	fmt.Fprintf(w, "  its delivery costing only its POST to the receiver (%.3f ms, nothing stored): %.2f × baseline-insert\n",
		postMs, requestCeiling(baselineInsertRPS, cores, postMs))
}
