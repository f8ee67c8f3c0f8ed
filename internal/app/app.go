// Package app wires contactd together from a Config: the database (external or embedded),
// the domain services and the HTTP server. Only this package knows every concrete type.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/internal/auth"
	"github.com/contactd/contactd/internal/config"
	"github.com/contactd/contactd/internal/console"
	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/contact/search"
	"github.com/contactd/contactd/internal/delivery"
	"github.com/contactd/contactd/internal/enrich"
	"github.com/contactd/contactd/internal/erasure"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/field"
	"github.com/contactd/contactd/internal/httpapi"
	"github.com/contactd/contactd/internal/idempotency"
	"github.com/contactd/contactd/internal/platform/backup"
	"github.com/contactd/contactd/internal/platform/metrics"
	"github.com/contactd/contactd/internal/platform/pgembed"
	"github.com/contactd/contactd/internal/platform/queue"
	"github.com/contactd/contactd/internal/platform/seal"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/platform/turns"
	"github.com/contactd/contactd/internal/ratelimit"
	"github.com/contactd/contactd/internal/segment"
	"github.com/contactd/contactd/internal/subscription"
	"github.com/contactd/contactd/internal/suppression"
)

// Now is the clock of contactd: UTC, at the millisecond precision the API shows, so what is
// stored and what is returned are the same instant.
func Now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// Runtime is an open database, embedded or not.
type Runtime struct {
	Store    *store.Store
	embedded *pgembed.Cluster
	backups  *backup.Repo // the embedded cluster's, when CONTACTD_BACKUP_DIR is set
	log      *slog.Logger
}

// Open connects to cfg.DatabaseURL, or starts the embedded PostgreSQL when it is empty.
func Open(ctx context.Context, cfg config.Config, log *slog.Logger) (*Runtime, error) {
	rt := &Runtime{log: log}
	url := cfg.DatabaseURL
	if url == "" {
		opt := pgembed.Options{Dir: cfg.DataDir}
		if cfg.BackupDir != "" {
			repo, err := openBackups(cfg)
			if err != nil {
				return nil, err
			}
			rt.backups, opt.Settings = &repo, repo.Settings(0)
		}
		c, err := pgembed.Start(ctx, opt)
		if err != nil {
			return nil, err
		}
		rt.embedded = c
		if rt.backups != nil {
			if err := rt.backups.Attach(c); err != nil {
				rt.Close()
				return nil, err
			}
		}
		if err := c.EnsureDatabase(ctx, "contactd"); err != nil {
			rt.Close()
			return nil, err
		}
		url = c.URL("contactd")
		log.Info("embedded PostgreSQL started", slog.String("dir", cfg.DataDir), slog.Int("port", c.Port))
	}
	st, err := store.Open(ctx, url, StoreOptions(cfg))
	if err != nil {
		rt.Close()
		return nil, err
	}
	rt.Store = st
	return rt, nil
}

// StoreOptions are the database pool's options of cfg.
func StoreOptions(cfg config.Config) store.Options {
	return store.Options{MaxConns: int32(cfg.DBMaxConns), StatementTimeout: cfg.DBStatementTimeout, IdleInTxTimeout: cfg.DBIdleInTxTimeout,
		ReplicaURL: cfg.DatabaseReplicaURL, ReplicaMaxLag: cfg.ReplicaMaxLag}
}

// Embedded reports whether the database is the embedded one.
func (rt *Runtime) Embedded() bool { return rt.embedded != nil }

// Close closes the pool, then stops the embedded PostgreSQL, last.
func (rt *Runtime) Close() {
	if rt.Store != nil {
		rt.Store.Close()
	}
	if rt.embedded != nil {
		if err := rt.embedded.Stop(); err != nil {
			rt.log.Error("stop embedded PostgreSQL", slog.Any("error", err))
		}
	}
}

// Services are the domain services over one store.
type Services struct {
	// Drain runs when serve stops: /readyz answers 503 from then on.
	Drain    Drain
	Auth     *auth.Service
	Contacts *contact.Service
	// Search lists, searches and exports contacts, and reports duplicates.
	Search *search.Service
	// Erasures forgets people; Suppressions keeps them out afterwards.
	Erasures     *erasure.Service
	Suppressions *suppression.List
	Webhooks     *subscription.Service
	// Fields defines the accounts' custom fields.
	Fields     *field.Service
	Segments   *segment.Service
	Deliveries *delivery.Service
	Enrich     *enrich.Service
	Metrics    *metrics.Metrics
	// Subscribers caches which event types each account subscribes to.
	Subscribers *event.Subscribers
	// Filtered counts the events subscriptions' filters leave out, into their rows.
	Filtered *event.FilterTally
	// Periodic runs the maintenance tasks, once per interval across all processes.
	Periodic *queue.Periodic
	// Secrets keeps the signing secrets, sealed.
	Secrets *subscription.Secrets
	// Events is the events feed.
	Events *event.Feed
	// Idempotency keeps the responses of writes sent with an Idempotency-Key.
	Idempotency *idempotency.Service
	// Store is the database the services work on.
	Store *store.Store
	// Console is the browser console at /console.
	Console *console.Console
	log     *slog.Logger
	// Turns are the heavy reads' turns, shared by every account (package turns).
	Turns *turns.Turns
	// RateClock is the clock of the request rate limits counted in the process (without
	// Redis, whose clock counts shared ones): time.Now when nil; a test moves it past a window.
	RateClock func() time.Time
}

// NewServices builds the domain services over st, sealing secrets with keys. Workers are not
// started.
func NewServices(cfg config.Config, st *store.Store, keys *seal.Keyring, log *slog.Logger) (*Services, error) {
	m := metrics.New()
	m.WatchPool(st.Pool)
	st.ObserveGroups(m.ObserveGroup)
	m.WatchGroupsRefused(st.GroupsRefused)
	m.WatchQueue(queueDepth(st))
	m.WatchArchiver(archiver(st))
	if st.Replica().Configured {
		m.WatchReplica(func() (bool, time.Duration) { r := st.Replica(); return r.InUse, r.Lag })
	}
	secrets := subscription.NewSecrets(st, keys, Now)
	keyring := auth.NewService(st, Now)
	reads := turns.New(search.ReadTurns(cfg.ListConcurrency)) // the heavy reads', shared by every account
	eventFeed := event.NewFeed(st, cfg.EventRetention, Now, log, reads)
	filtered := event.NewFilterTally(st, m.FilteredOut)
	deliveries := delivery.New(st, delivery.Options{
		Timeout: cfg.WebhookTimeout, AllowedNetworks: cfg.WebhookAllowedNetworks, Workers: cfg.WebhookWorkers,
		MaxInFlight: cfg.WebhookMaxInFlight, RescueAfter: cfg.WebhookRescueAfter, Now: Now, Log: log, Metrics: m, Secrets: secrets,
		Live: keyring.IsLive, Filtered: filtered, NATSURL: cfg.NATSURL, NATSSubjectPrefix: cfg.NATSSubjectPrefix, Turns: reads,
	})
	subs := event.NewSubscribers(st, Now)
	events := event.NewEmitter(deliveries, subs, filtered)
	enricher := enrich.New(st, events, enrich.Options{Resolver: net.DefaultResolver, Now: Now, Log: log})
	idem := idempotency.New(st, keys, Now, log)
	suppressions := suppression.New(st, keys, Now)
	fields := field.NewService(st, Now)
	segments := segment.NewService(st, fields, events, Now)
	contacts := contact.NewService(st, events, Now, contact.Options{PublicURL: cfg.PublicURL, Suppressions: suppressions,
		Verdicts: enricher, Fields: fields, Segments: segments})
	searcher := search.New(st, contacts, search.Options{Turns: reads, Exports: cfg.Exports, ExportsPerAccount: cfg.ExportsPerAccount,
		Fields: fields})
	enricher.KeepSegments(contacts)
	subscriptions := subscription.NewService(st, events, secrets, Now,
		subscription.URLRules{AllowHTTP: cfg.WebhookAllowHTTP, AllowNATS: cfg.NATSURL != ""})
	cons, err := console.New(console.Deps{Store: st, Auth: keyring, Contacts: contacts, Search: searcher, Fields: fields, Segments: segments,
		Webhooks: subscriptions, Deliveries: deliveries, Events: eventFeed, Log: log, Now: Now, PublicURL: cfg.PublicURL})
	if err != nil {
		return nil, err
	}
	return &Services{
		Auth:         keyring,
		Contacts:     contacts,
		Search:       searcher,
		Erasures:     erasure.New(st, contacts, events, suppressions, erasureJournal(cfg), Now),
		Suppressions: suppressions,
		Webhooks:     subscriptions,
		Fields:       fields,
		Segments:     segments,
		Secrets:      secrets,
		Deliveries:   deliveries,
		Enrich:       enricher,
		Metrics:      m,
		Subscribers:  subs,
		Filtered:     filtered,
		Periodic:     queue.NewPeriodic(st, Now, log, deliveries.SweepTask(), eventFeed.PruneTask(), idem.PruneTask(), cons.PruneTask()),
		Events:       eventFeed,
		Idempotency:  idem,
		Store:        st,
		Console:      cons,
		Turns:        reads,
		log:          log,
	}, nil
}

// segmentPoll is how often a process looks for segments to backfill that another process
// saved, or whose backfill's process went away.
const segmentPoll = 5 * time.Second

// StartWorkers runs the background workers: webhook deliveries, enrichment, segment
// backfills and the periodic maintenance tasks.
func (s *Services) StartWorkers() {
	s.Deliveries.Start()
	s.Enrich.Start()
	s.Segments.Start(s.Contacts, segmentPoll, s.log)
	s.Periodic.Start()
	s.Filtered.Start(time.Second)
}

// StopWorkers lets work in progress finish within ctx; what does not is cancelled and picked
// up again when its lease ends (deliveries, enrichment).
func (s *Services) StopWorkers(ctx context.Context) error {
	var wg sync.WaitGroup
	var enrichErr, periodicErr error
	wg.Go(func() { enrichErr = s.Enrich.Stop(ctx) })
	wg.Go(s.Segments.Stop)
	wg.Go(func() { periodicErr = s.Periodic.Stop(ctx) })
	err := s.Deliveries.Stop(ctx)
	wg.Wait()
	return errors.Join(err, enrichErr, periodicErr, s.Filtered.Stop(ctx))
}

// Listen keeps the in-process caches (API keys, subscribed event types) in step with changes
// made by any process, until ctx ends; without it they stay off. Run it in its own goroutine.
func (s *Services) Listen(ctx context.Context, st *store.Store, log *slog.Logger) {
	followers := []store.Follower{s.Auth.Follower(), s.Subscribers.Follower()}
	for _, f := range followers[:2] {
		followers = append(followers, heard{channel: f.Channel(), metrics: s.Metrics})
	}
	followers = append(followers, st.ReplicaFences())
	store.Listen(ctx, st.Pool, log, followers...)
}

// heard counts in /metrics the notifications heard on a channel, and says whether they are
// being heard: an operator (and the cluster test) sees that one process's change reached the
// others by notification, and when a process's caches are off.
type heard struct {
	channel string
	metrics *metrics.Metrics
}

func (h heard) Channel() string   { return h.channel }
func (h heard) Notified(string)   { h.metrics.NotificationHeard(h.channel) }
func (h heard) Listening(up bool) { h.metrics.NotificationsListening(h.channel, up) }

// queueDepth counts, for /metrics, the Pending webhook deliveries as the "webhooks" queue
// and the contacts due for enrichment as the "enrichment" queue (available: due now;
// scheduled: due later, after a failure or while a worker holds them).
func queueDepth(st *store.Store) metrics.QueueDepth {
	return func(ctx context.Context) (map[[2]string]float64, error) {
		rows, err := st.Pool.Query(ctx, `SELECT '`+delivery.QueueName+`', CASE WHEN next_attempt_at <= now() THEN 'available' ELSE 'scheduled' END, count(*)
			FROM webhook_deliveries WHERE status = 'Pending' GROUP BY 1, 2
			UNION ALL
			SELECT 'enrichment', CASE WHEN enrich_due_at <= now() THEN 'available' ELSE 'scheduled' END, count(*)
			FROM contacts WHERE enrich_due_at IS NOT NULL GROUP BY 1, 2`)
		if err != nil {
			return nil, err
		}
		out := map[[2]string]float64{}
		var queue, state string
		var n int64
		_, err = pgx.ForEachRow(rows, []any{&queue, &state, &n}, func() error {
			out[[2]string{queue, state}] = float64(n)
			return nil
		})
		return out, err
	}
}

// archiver reads, for /metrics, the database's WAL archiving: with backups on, whether
// pgBackRest takes the segments.
func archiver(st *store.Store) func(context.Context) (metrics.Archiver, error) {
	return func(ctx context.Context) (a metrics.Archiver, err error) {
		err = st.Pool.QueryRow(ctx, `SELECT archived_count, failed_count,
			coalesce(last_failed_time > coalesce(last_archived_time, '-infinity'), false) FROM pg_stat_archiver`).
			Scan(&a.Archived, &a.Failed, &a.Failing)
		return a, err
	}
}

// Handler builds the HTTP handler of the API over st.
func Handler(cfg config.Config, st *store.Store, svc *Services, log *slog.Logger) (http.Handler, error) {
	limits := ratelimit.Limits{ReadsPer10s: cfg.RateReadsPer10s, WritesPer10s: cfg.RateWritesPer10s, AccountPerDay: cfg.RateAccountPerDay}
	var limiter ratelimit.Allower
	if cfg.RedisURL != "" {
		shared, err := ratelimit.NewShared(cfg.RedisURL, limits, ratelimit.SharedOptions{
			Timeout: cfg.RedisTimeout, Log: log, Fallback: svc.Metrics.RateLimitFallback})
		if err != nil {
			return nil, fmt.Errorf("CONTACTD_REDIS_URL: %w", err)
		}
		limiter = shared
	} else if svc.RateClock != nil {
		limiter = ratelimit.New(limits, svc.RateClock)
	}
	return httpapi.New(httpapi.Config{MaxBodyBytes: cfg.MaxBodyBytes, MaxBatchBodyBytes: cfg.MaxBatchBodyBytes, RateLimits: limits,
		TrustedProxies: cfg.TrustedProxies, ExportStall: cfg.WriteTimeout, RequestTimeout: cfg.RequestTimeout, BatchesPerAccount: cfg.BatchesPerAccount,
		MetricsToken: cfg.MetricsToken}, httpapi.Deps{
		Log: log, Auth: svc.Auth, Contacts: svc.Contacts, Search: svc.Search, Erasures: svc.Erasures, Webhooks: svc.Webhooks, Fields: svc.Fields, Segments: svc.Segments, Events: svc.Events, Deliveries: svc.Deliveries, Limiter: limiter,
		Idempotency: svc.Idempotency, Extra: svc.Console.Register,
		Ready:   svc.Drain.Ready(newReadiness(st).check),
		Metrics: svc.Metrics,
	})
}
