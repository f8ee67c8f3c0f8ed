// Package metrics is contactd's Prometheus instrumentation: requests and latency per
// operation and status, webhook attempts by outcome, the database pool and the job queue.
// A nil *Metrics records nothing, so code under test needs no registry.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds the collectors of one process.
type Metrics struct {
	registry       *prometheus.Registry
	requests       *prometheus.CounterVec
	latency        *prometheus.HistogramVec
	attempts       *prometheus.CounterVec
	attemptLatency prometheus.Histogram
	groupSize      *prometheus.HistogramVec
	rlFallbacks    prometheus.Counter
	heard          *prometheus.CounterVec
	listening      *prometheus.GaugeVec
	filtered       prometheus.Counter
	unevaluated    prometheus.Counter
}

// New returns the process's metrics, with the Go runtime and process collectors.
func New() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contactd_http_requests_total", Help: "HTTP requests by API operation and status code.",
		}, []string{"operation", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "contactd_http_request_duration_seconds", Help: "HTTP request latency by API operation and status code.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
		}, []string{"operation", "status"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "contactd_webhook_attempts_total",
			Help: "Webhook delivery attempts by outcome: success (2xx), failure (other status), gone (410), error (no response).",
		}, []string{"outcome"}),
		attemptLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "contactd_webhook_attempt_duration_seconds", Help: "Time to the receiver's answer or the failure.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 15},
		}),
		groupSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "contactd_db_group_size",
			Help:    "Statements per group sent to PostgreSQL together (one round trip and one commit), by group.",
			Buckets: []float64{1, 2, 4, 8, 16, 32},
		}, []string{"group"}),
	}
	m.rlFallbacks = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "contactd_ratelimit_fallbacks_total",
		Help: "Rate-limit decisions this process made alone because Redis (CONTACTD_REDIS_URL) did not answer.",
	})
	m.heard = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "contactd_notifications_heard_total",
		Help: "Notifications this process heard from other processes' changes (key revocations, subscription changes), by channel: its caches forget on each.",
	}, []string{"channel"})
	m.listening = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "contactd_notifications_listening",
		Help: "1 while this process hears other processes' changes on the channel (its cache on), 0 while it does not (its cache off: every read goes to the database), by channel.",
	}, []string{"channel"})
	m.filtered = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "contactd_webhook_events_filtered_total",
		Help: "Events a subscription's payload filter left out (no delivery, no attempt), one per subscription.",
	})
	m.unevaluated = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "contactd_webhook_events_unevaluated_total",
		Help: "Events a subscription's payload filter could not be evaluated on (more JSON values than a filter reads): not delivered, one per subscription.",
	})
	m.registry.MustRegister(m.requests, m.latency, m.attempts, m.attemptLatency, m.groupSize, m.rlFallbacks, m.heard, m.listening, m.filtered, m.unevaluated,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// ObserveRequest counts one HTTP request; operation is the spec's operationId or "other".
func (m *Metrics) ObserveRequest(operation string, status int, d time.Duration) {
	if m == nil {
		return
	}
	s := strconv.Itoa(status)
	m.requests.WithLabelValues(operation, s).Inc()
	m.latency.WithLabelValues(operation, s).Observe(d.Seconds())
}

// Attempt outcomes.
const (
	OutcomeSuccess = "success"
	OutcomeFailure = "failure"
	OutcomeGone    = "gone"
	OutcomeError   = "error"
)

// ObserveAttempt counts one webhook delivery attempt.
func (m *Metrics) ObserveAttempt(outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.attempts.WithLabelValues(outcome).Inc()
	m.attemptLatency.Observe(d.Seconds())
}

// RateLimitFallback counts a rate-limit decision made without Redis.
func (m *Metrics) RateLimitFallback() {
	if m != nil {
		m.rlFallbacks.Inc()
	}
}

// FilteredOut counts the events that subscriptions' filters left out (filtered) and those
// they could not be evaluated on (unevaluated: not delivered either).
func (m *Metrics) FilteredOut(filtered, unevaluated int) {
	if m != nil {
		m.filtered.Add(float64(filtered))
		m.unevaluated.Add(float64(unevaluated))
	}
}

// NotificationHeard counts a notification heard on channel.
func (m *Metrics) NotificationHeard(channel string) {
	if m != nil {
		m.heard.WithLabelValues(channel).Inc()
	}
}

// NotificationsListening records whether notifications on channel are being heard.
func (m *Metrics) NotificationsListening(channel string, up bool) {
	if m != nil {
		v := 0.0
		if up {
			v = 1
		}
		m.listening.WithLabelValues(channel).Set(v)
	}
}

// ObserveGroup records the size of a group of statements sent together.
func (m *Metrics) ObserveGroup(group string, size int) {
	if m == nil {
		return
	}
	m.groupSize.WithLabelValues(group).Observe(float64(size))
}

// WatchPool exports the pool's statistics at each scrape.
func (m *Metrics) WatchPool(pool *pgxpool.Pool) {
	m.registry.MustRegister(poolCollector{pool})
}

// WatchGroupsRefused exports how many groups of statements PostgreSQL refused, each of whose
// statements was then sent again alone (refused, read at each scrape).
func (m *Metrics) WatchGroupsRefused(refused func() uint64) {
	m.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "contactd_db_groups_refused_total",
		Help: "Groups of statements PostgreSQL refused (one statement's error, or a statement cancelled), each of whose statements was then sent again alone.",
	}, func() float64 { return float64(refused()) }))
}

// WatchReplica exports the database standby's state at each scrape: its lag at the last
// look, and whether reads go to it.
func (m *Metrics) WatchReplica(state func() (inUse bool, lag time.Duration)) {
	m.registry.MustRegister(replicaCollector(state))
}

var (
	replicaLagDesc = prometheus.NewDesc("contactd_db_replica_lag_seconds",
		"How far the standby of CONTACTD_DATABASE_REPLICA_URL is behind the primary, at the last look (once a second).", nil, nil)
	replicaInUseDesc = prometheus.NewDesc("contactd_db_replica_in_use",
		"1 while lists, exports and the console's reads go to the standby; 0 while it lags past CONTACTD_REPLICA_MAX_LAG or does not answer.", nil, nil)
)

type replicaCollector func() (bool, time.Duration)

func (c replicaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- replicaLagDesc
	ch <- replicaInUseDesc
}

func (c replicaCollector) Collect(ch chan<- prometheus.Metric) {
	inUse, lag := c()
	used := 0.0
	if inUse {
		used = 1
	}
	ch <- prometheus.MustNewConstMetric(replicaLagDesc, prometheus.GaugeValue, lag.Seconds())
	ch <- prometheus.MustNewConstMetric(replicaInUseDesc, prometheus.GaugeValue, used)
}

// QueueDepth counts the jobs waiting or running, by queue and state.
type QueueDepth func(ctx context.Context) (map[[2]string]float64, error)

// WatchQueue exports the job queue's depth, counted at most once a second.
func (m *Metrics) WatchQueue(depth QueueDepth) {
	m.registry.MustRegister(&queueCollector{cached[map[[2]string]float64]{read: depth}})
}

var (
	poolDescs = map[string]*prometheus.Desc{
		"total":    prometheus.NewDesc("contactd_db_pool_connections", "Connections in the pool by state.", []string{"state"}, nil),
		"max":      prometheus.NewDesc("contactd_db_pool_max_connections", "The pool's size limit.", nil, nil),
		"acquires": prometheus.NewDesc("contactd_db_pool_acquires_total", "Connections acquired from the pool.", nil, nil),
		"waits":    prometheus.NewDesc("contactd_db_pool_empty_acquires_total", "Acquires that had to wait for a connection.", nil, nil),
		"wait":     prometheus.NewDesc("contactd_db_pool_acquire_seconds_total", "Time spent acquiring connections.", nil, nil),
	}
	queueDesc = prometheus.NewDesc("contactd_job_queue_depth", "Work not yet finished, by queue and state: Pending webhook deliveries (queue webhooks) and contacts due for enrichment (queue enrichment); available is due now, scheduled later or leased.", []string{"queue", "state"}, nil)
)

type poolCollector struct{ pool *pgxpool.Pool }

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range poolDescs {
		ch <- d
	}
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stat()
	ch <- prometheus.MustNewConstMetric(poolDescs["total"], prometheus.GaugeValue, float64(s.AcquiredConns()), "acquired")
	ch <- prometheus.MustNewConstMetric(poolDescs["total"], prometheus.GaugeValue, float64(s.IdleConns()), "idle")
	ch <- prometheus.MustNewConstMetric(poolDescs["total"], prometheus.GaugeValue, float64(s.ConstructingConns()), "constructing")
	ch <- prometheus.MustNewConstMetric(poolDescs["max"], prometheus.GaugeValue, float64(s.MaxConns()))
	ch <- prometheus.MustNewConstMetric(poolDescs["acquires"], prometheus.CounterValue, float64(s.AcquireCount()))
	ch <- prometheus.MustNewConstMetric(poolDescs["waits"], prometheus.CounterValue, float64(s.EmptyAcquireCount()))
	ch <- prometheus.MustNewConstMetric(poolDescs["wait"], prometheus.CounterValue, s.AcquireDuration().Seconds())
}

// cached is a reading taken at a scrape and reused by the scrapes of the next second, so
// scraping often (or by many scrapers) costs the database one query a second at most.
type cached[T any] struct {
	read func(ctx context.Context) (T, error)
	mu   sync.Mutex // one reading at a time; the scrapes meanwhile wait for it
	at   time.Time
	last T
}

// fresh is how long a reading answers the scrapes that follow it.
const fresh = time.Second

func (c *cached[T]) get() (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.at) >= fresh {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		v, err := c.read(ctx)
		cancel()
		if err != nil {
			return v, err
		}
		c.at, c.last = time.Now(), v
	}
	return c.last, nil
}

type queueCollector struct{ cached[map[[2]string]float64] }

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- queueDesc }

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	depths, err := c.get()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(queueDesc, err)
		return
	}
	for k, v := range depths {
		ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, v, k[0], k[1])
	}
}

// Archiver is PostgreSQL's WAL archiving as pg_stat_archiver reports it.
type Archiver struct {
	Archived, Failed int64
	// Failing is set while the latest attempt to archive a segment failed: PostgreSQL keeps
	// the segment in pg_wal and tries again, and nothing after the last archived segment can
	// be restored.
	Failing bool
}

// WatchArchiver exports the database's WAL archiving, read at most once a second.
func (m *Metrics) WatchArchiver(read func(ctx context.Context) (Archiver, error)) {
	m.registry.MustRegister(&archiverCollector{cached[Archiver]{read: read}})
}

var archiverDescs = [...]*prometheus.Desc{
	prometheus.NewDesc("contactd_wal_archived_total", "WAL segments PostgreSQL archived (archive_command succeeded), since its statistics were reset.", nil, nil),
	prometheus.NewDesc("contactd_wal_archive_failures_total", "Attempts to archive a WAL segment that failed (PostgreSQL retries the segment).", nil, nil),
	prometheus.NewDesc("contactd_wal_archive_failing", "1 while the latest attempt to archive a WAL segment failed: writes go on, their WAL accumulates in pg_wal, and a restore cannot reach past the last archived segment (pgBackRest's log says why).", nil, nil),
}

type archiverCollector struct{ cached[Archiver] }

func (c *archiverCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range archiverDescs {
		ch <- d
	}
}

func (c *archiverCollector) Collect(ch chan<- prometheus.Metric) {
	a, err := c.get()
	if err != nil {
		for _, d := range archiverDescs {
			ch <- prometheus.NewInvalidMetric(d, err)
		}
		return
	}
	failing := 0.0
	if a.Failing {
		failing = 1
	}
	ch <- prometheus.MustNewConstMetric(archiverDescs[0], prometheus.CounterValue, float64(a.Archived))
	ch <- prometheus.MustNewConstMetric(archiverDescs[1], prometheus.CounterValue, float64(a.Failed))
	ch <- prometheus.MustNewConstMetric(archiverDescs[2], prometheus.GaugeValue, failing)
}
