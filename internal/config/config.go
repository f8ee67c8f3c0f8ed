// Package config is contactd's configuration as data: defaults, overridden by CONTACTD_*
// environment variables (and DATABASE_URL), overridden by flags, then validated with errors
// that say what to fix.
package config

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/contactd/contactd/internal/platform/seal"
)

// Config is every setting of contactd.
type Config struct {
	Addr        string // CONTACTD_ADDR: where serve listens
	DatabaseURL string // DATABASE_URL: empty runs the embedded PostgreSQL
	DataDir     string // CONTACTD_DATA_DIR: the embedded PostgreSQL's home
	// DatabaseReplicaURL is a standby of DATABASE_URL for the reads a few seconds of staleness
	// does not hurt (lists, exports, the console's pages), while its lag is at most
	// ReplicaMaxLag; empty sends every read to the primary.
	DatabaseReplicaURL string        // CONTACTD_DATABASE_REPLICA_URL
	ReplicaMaxLag      time.Duration // CONTACTD_REPLICA_MAX_LAG
	// BackupDir is a pgBackRest repository the embedded PostgreSQL archives its WAL into,
	// for `contactd backup` and `contactd restore` (package backup); off when empty.
	BackupDir string // CONTACTD_BACKUP_DIR
	// BackupPassphrase encrypts the backup repository (environment only, like SecretKey);
	// empty: a key file kept with the embedded cluster (DataDir/backup-passphrase), made on
	// first use.
	BackupPassphrase string // CONTACTD_BACKUP_PASSPHRASE
	// BackupEvery is how often `contactd serve` takes a backup of the embedded cluster (0:
	// never), and BackupFullEvery how old the newest full backup may be before the next one is
	// full: retention keeps two, so an erased person stays in backups at most about twice that.
	BackupEvery, BackupFullEvery time.Duration // CONTACTD_BACKUP_EVERY, CONTACTD_BACKUP_FULL_EVERY
	PublicURL                    string        // CONTACTD_PUBLIC_URL: base of URLs contactd hands out (consent pages)
	LogLevel                     string        // CONTACTD_LOG_LEVEL: debug, info, warn, error
	// LogFormat is text (for people), json (for machines) or auto: text when the log goes to
	// a terminal, JSON otherwise.
	LogFormat string // CONTACTD_LOG_FORMAT
	// PprofAddr, when set, serves net/http/pprof on its own listener (keep it on loopback).
	PprofAddr string // CONTACTD_PPROF_ADDR

	MaxBodyBytes      int64 // CONTACTD_MAX_BODY_BYTES
	MaxBatchBodyBytes int64 // CONTACTD_MAX_BATCH_BODY_BYTES
	DBMaxConns        int   // CONTACTD_DB_MAX_CONNS
	// ListConcurrency is how many heavy reads (list and search pages, feed pages, duplicates, a
	// contact's events, delivery logs) query PostgreSQL at once; the rest wait their turn, the
	// accounts running the fewest first (package turns). 0: as many as CPUs, at least 2.
	ListConcurrency int // CONTACTD_LIST_CONCURRENCY
	// Exports and ExportsPerAccount bound the exports streaming at once, in the process and
	// per account: each holds a database connection for its whole stream.
	Exports           int // CONTACTD_EXPORTS
	ExportsPerAccount int // CONTACTD_EXPORTS_PER_ACCOUNT
	// BatchesPerAccount bounds the batch writes one account runs at once in the process: each
	// holds its decoded items and a core while it runs.
	BatchesPerAccount  int           // CONTACTD_BATCHES_PER_ACCOUNT
	DBStatementTimeout time.Duration // CONTACTD_DB_STATEMENT_TIMEOUT
	// DBIdleInTxTimeout ends a session left idle inside a transaction (CONTACTD_DB_IDLE_IN_TX_TIMEOUT):
	// its locks and its snapshot hold others back while it sits. Longer than WriteTimeout: an
	// export waits for its client inside its snapshot's transaction.
	DBIdleInTxTimeout time.Duration
	ReadHeaderTimeout time.Duration // CONTACTD_READ_HEADER_TIMEOUT
	ReadTimeout       time.Duration // CONTACTD_READ_TIMEOUT
	WriteTimeout      time.Duration // CONTACTD_WRITE_TIMEOUT
	// RequestTimeout bounds the work of a request (CONTACTD_REQUEST_TIMEOUT): past it, its
	// statements are cancelled and its Go work stops at its next check, so a request whose
	// client was cut off by WriteTimeout does not go on burning a core. Shorter than
	// WriteTimeout, so that its 503 still reaches the client.
	RequestTimeout  time.Duration
	IdleTimeout     time.Duration // CONTACTD_IDLE_TIMEOUT
	ShutdownTimeout time.Duration // CONTACTD_SHUTDOWN_TIMEOUT
	// ShutdownDrain is how long a stopping serve answers /readyz with 503 and keeps serving,
	// every answer closing its connection, before it stops taking connections: time for a
	// balancer's health checks to take it out, so a rolling restart fails no request.
	ShutdownDrain time.Duration // CONTACTD_SHUTDOWN_DRAIN
	// ShutdownDrainChecks ends the drain early, once /readyz has answered that many checks with
	// 503: a balancer's fall count plus one, for the check it sends only after it has acted on
	// the one that took the process out. 0: the drain lasts ShutdownDrain.
	ShutdownDrainChecks int // CONTACTD_SHUTDOWN_DRAIN_CHECKS

	RateReadsPer10s   int // CONTACTD_RATE_READS_PER_10S: per API key; 0 disables
	RateWritesPer10s  int // CONTACTD_RATE_WRITES_PER_10S: per API key; 0 disables
	RateAccountPerDay int // CONTACTD_RATE_ACCOUNT_PER_DAY: per account per UTC day; 0 disables

	WebhookAllowHTTP       bool           // CONTACTD_WEBHOOK_ALLOW_HTTP: admit http:// subscription URLs
	WebhookAllowedNetworks []netip.Prefix // CONTACTD_WEBHOOK_ALLOWED_NETWORKS: CIDRs exempt from the SSRF guard
	WebhookAllowedRaw      string
	TrustedProxies         []netip.Prefix // CONTACTD_TRUSTED_PROXIES: balancers whose X-Forwarded-For is believed
	TrustedProxiesRaw      string
	WebhookTimeout         time.Duration // CONTACTD_WEBHOOK_TIMEOUT: one delivery attempt
	WebhookWorkers         int           // CONTACTD_WEBHOOK_WORKERS: attempts at once per process
	WebhookMaxInFlight     int           // CONTACTD_WEBHOOK_MAX_IN_FLIGHT: attempts at once per receiver URL, across processes
	WebhookRescueAfter     time.Duration // CONTACTD_WEBHOOK_RESCUE_AFTER: retry attempts of a dead worker after
	EventRetention         time.Duration // CONTACTD_EVENT_RETENTION: how long the events feed keeps events
	// RedisURL, when set, makes the rate limits shared by every process (redis://host:port/db).
	RedisURL string // CONTACTD_REDIS_URL
	// NATSURL, when set, lets subscriptions target subjects of this NATS JetStream
	// (nats:<subject>), each account's under NATSSubjectPrefix.<account id>.
	NATSURL           string // CONTACTD_NATS_URL
	NATSSubjectPrefix string // CONTACTD_NATS_SUBJECT_PREFIX
	// MetricsToken, when set, lets a scraper from anywhere read /metrics with it as a bearer
	// token; unset, only clients on this machine (loopback) may.
	MetricsToken string // CONTACTD_METRICS_TOKEN
	// RedisTimeout bounds each rate-limit decision's round trips to Redis: slower, and the
	// process decides alone (counted in contactd_ratelimit_fallbacks_total).
	RedisTimeout time.Duration // CONTACTD_REDIS_TIMEOUT

	// SecretKey seals the secrets stored in the database (base64 of 32 bytes); from the
	// environment only, never a flag (flags show in ps). SecretKeyFile names a file holding it
	// instead. With neither, the embedded database keeps one in DataDir/secret-key.
	SecretKey     string // CONTACTD_SECRET_KEY
	SecretKeyFile string // CONTACTD_SECRET_KEY_FILE
	// SecretKeysOld are keys secrets may still be sealed under (comma-separated base64): they
	// open, never seal. For moving to a new key: see docs/operations.md.
	SecretKeysOld string // CONTACTD_SECRET_KEYS_OLD

	envErrs []error // environment values that did not parse, reported by Finish
}

// EnvOnly are the settings read from the environment alone: secrets (a flag would show in
// ps), and the embedded PostgreSQL's binaries (read by package pgembed).
var EnvOnly = []string{"CONTACTD_SECRET_KEY", "CONTACTD_SECRET_KEYS_OLD", "CONTACTD_PG_BIN", "CONTACTD_BACKUP_PASSPHRASE"}

// Default is the configuration with nothing set.
func Default() Config {
	return Config{
		Addr: "127.0.0.1:8080", DataDir: ".data", LogLevel: "info", LogFormat: "auto",
		MaxBodyBytes: 64 << 10, MaxBatchBodyBytes: 4 << 20, DBMaxConns: 32, DBStatementTimeout: 10 * time.Second, DBIdleInTxTimeout: time.Minute,
		ReplicaMaxLag: 5 * time.Second,
		BackupEvery:   24 * time.Hour, BackupFullEvery: 7 * 24 * time.Hour,
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second, RequestTimeout: 20 * time.Second,
		ShutdownTimeout: 30 * time.Second,
		RateReadsPer10s: 100, RateWritesPer10s: 50, RateAccountPerDay: 350_000,
		WebhookTimeout: 15 * time.Second, WebhookWorkers: 64, WebhookMaxInFlight: 4, WebhookRescueAfter: time.Minute,
		EventRetention: 30 * 24 * time.Hour, RedisTimeout: 100 * time.Millisecond, NATSSubjectPrefix: "contactd", Exports: 4, ExportsPerAccount: 2, BatchesPerAccount: 2,
	}
}

// Flags registers every setting on fs, and sets each from its environment variable, named
// after the flag (EnvName: --webhook-timeout is CONTACTD_WEBHOOK_TIMEOUT), so that a flag on
// the command line overrides its variable. A variable that does not parse is an error of
// Finish, which is called after fs.Parse.
func (c *Config) Flags(fs *flag.FlagSet, getenv func(string) string) {
	theirs := map[string]bool{} // the caller's own flags, registered before: no variables
	fs.VisitAll(func(f *flag.Flag) { theirs[f.Name] = true })
	d := *c
	fs.StringVar(&c.Addr, "addr", d.Addr, "listen address; the default is loopback only, :8080 listens on every interface")
	fs.StringVar(&c.DatabaseURL, "database-url", d.DatabaseURL, "PostgreSQL URL; empty runs an embedded PostgreSQL")
	fs.StringVar(&c.DataDir, "data-dir", d.DataDir, "embedded PostgreSQL directory")
	fs.StringVar(&c.DatabaseReplicaURL, "database-replica-url", d.DatabaseReplicaURL, "a standby of the database for lists, exports and the console's reads; empty: every read on the primary")
	fs.DurationVar(&c.ReplicaMaxLag, "replica-max-lag", d.ReplicaMaxLag, "the standby serves reads while it is at most this far behind the primary")
	fs.StringVar(&c.BackupDir, "backup-dir", d.BackupDir, "pgBackRest repository the embedded PostgreSQL archives its WAL into (contactd backup, contactd restore); off when empty")
	fs.DurationVar(&c.BackupEvery, "backup-every", d.BackupEvery, "with --backup-dir: how often serve takes a backup (0: never)")
	fs.DurationVar(&c.BackupFullEvery, "backup-full-every", d.BackupFullEvery, "with --backup-dir: the age of the newest full backup past which the next one is full")
	fs.StringVar(&c.PublicURL, "public-url", d.PublicURL, "base URL clients reach contactd at")
	fs.StringVar(&c.PprofAddr, "pprof-addr", d.PprofAddr, "serve net/http/pprof on this address, e.g. 127.0.0.1:6060; off when empty")
	fs.StringVar(&c.LogLevel, "log-level", d.LogLevel, "debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", d.LogFormat, "text, json, or auto: text on a terminal, JSON otherwise")
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", d.MaxBodyBytes, "request body limit")
	fs.Int64Var(&c.MaxBatchBodyBytes, "max-batch-body-bytes", d.MaxBatchBodyBytes, "request body limit of the batch operations")
	fs.IntVar(&c.DBMaxConns, "db-max-conns", d.DBMaxConns, "database pool size")
	fs.IntVar(&c.ListConcurrency, "list-concurrency", d.ListConcurrency, "heavy reads (list and search pages, feed pages, duplicates, a contact's events, delivery logs) that query at once; the rest wait, the accounts running the fewest first; 0: as many as CPUs, at least 2")
	fs.IntVar(&c.Exports, "exports", d.Exports, "exports streaming at once in this process, each holding a database connection; more answer 429")
	fs.IntVar(&c.ExportsPerAccount, "exports-per-account", d.ExportsPerAccount, "exports one account may stream at once; more answer 429")
	fs.IntVar(&c.BatchesPerAccount, "batches-per-account", d.BatchesPerAccount, "batch writes (POST /contacts/batch) one account may run at once in this process; more answer 429")
	fs.DurationVar(&c.DBStatementTimeout, "db-statement-timeout", d.DBStatementTimeout, "longest a statement may run before PostgreSQL cancels it")
	fs.DurationVar(&c.DBIdleInTxTimeout, "db-idle-in-tx-timeout", d.DBIdleInTxTimeout, "longest a session may sit idle inside a transaction before PostgreSQL ends it (longer than --write-timeout)")
	fs.DurationVar(&c.ReadHeaderTimeout, "read-header-timeout", d.ReadHeaderTimeout, "longest a client may take to send a request's headers")
	fs.DurationVar(&c.ReadTimeout, "read-timeout", d.ReadTimeout, "longest a client may take to send a whole request")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", d.WriteTimeout, "longest a write of an answer may wait for the client (an export's every write)")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", d.RequestTimeout, "longest a request's work may run (an export's stream excepted: --write-timeout bounds each of its parts); past it, it is stopped and answers 503 (shorter than --write-timeout; 0: off)")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", d.IdleTimeout, "how long an idle keep-alive connection stays open")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", d.ShutdownTimeout, "how long a stop waits for requests and deliveries under way")
	fs.DurationVar(&c.ShutdownDrain, "shutdown-drain", d.ShutdownDrain, "serve: how long a stop first answers /readyz with 503 while still serving (behind a balancer: a few of its health-check intervals)")
	fs.IntVar(&c.ShutdownDrainChecks, "shutdown-drain-checks", d.ShutdownDrainChecks, "serve: end the drain once /readyz has answered this many checks with 503 (one balancer: its fall count plus one); 0: the whole drain")
	fs.IntVar(&c.RateReadsPer10s, "rate-reads-per-10s", d.RateReadsPer10s, "reads per API key per sliding 10 s, 0 disables")
	fs.IntVar(&c.RateWritesPer10s, "rate-writes-per-10s", d.RateWritesPer10s, "writes per API key per sliding 10 s, 0 disables")
	fs.IntVar(&c.RateAccountPerDay, "rate-account-per-day", d.RateAccountPerDay, "requests per account per UTC day, 0 disables")
	fs.BoolVar(&c.WebhookAllowHTTP, "webhook-allow-http", false, "admit http:// webhook URLs, for local development")
	fs.DurationVar(&c.WebhookTimeout, "webhook-timeout", d.WebhookTimeout, "one delivery attempt")
	fs.IntVar(&c.WebhookWorkers, "webhook-workers", d.WebhookWorkers, "delivery attempts at once")
	fs.IntVar(&c.WebhookMaxInFlight, "webhook-max-in-flight", d.WebhookMaxInFlight, "attempts one receiver URL may have at once, across processes")
	fs.DurationVar(&c.WebhookRescueAfter, "webhook-rescue-after", d.WebhookRescueAfter, "retry an attempt whose worker died after this")
	fs.DurationVar(&c.EventRetention, "event-retention", d.EventRetention, "how long the events feed keeps events, e.g. 720h")
	fs.DurationVar(&c.RedisTimeout, "redis-timeout", d.RedisTimeout, "bound on each rate-limit decision's Redis round trips; slower, the process limits alone")
	fs.StringVar(&c.RedisURL, "redis-url", d.RedisURL, "Redis shared by every process for the rate limits, e.g. redis://127.0.0.1:6379/0 or unix:///run/redis.sock?db=0; empty: each process limits alone")
	fs.StringVar(&c.NATSURL, "nats-url", d.NATSURL, "NATS server(s) with JetStream that nats:<subject> subscriptions publish to, e.g. nats://127.0.0.1:4222; empty: HTTP subscriptions only")
	fs.StringVar(&c.NATSSubjectPrefix, "nats-subject-prefix", d.NATSSubjectPrefix, "first token of every subject contactd publishes to, before the account's id")
	fs.StringVar(&c.SecretKeyFile, "secret-key-file", d.SecretKeyFile, "file holding the key that seals stored secrets, instead of CONTACTD_SECRET_KEY")
	fs.StringVar(&c.MetricsToken, "metrics-token", "", "bearer token that lets a scraper from anywhere read /metrics; unset: loopback clients only")
	fs.StringVar(&c.TrustedProxiesRaw, "trusted-proxies", "", "comma-separated CIDRs of the proxies whose X-Forwarded-For names the client")
	fs.StringVar(&c.WebhookAllowedRaw, "webhook-allowed-networks", "", "comma-separated CIDRs webhooks may reach despite the SSRF guard")
	c.SecretKey, c.SecretKeysOld = getenv("CONTACTD_SECRET_KEY"), getenv("CONTACTD_SECRET_KEYS_OLD")
	c.BackupPassphrase = getenv("CONTACTD_BACKUP_PASSPHRASE")
	fs.VisitAll(func(f *flag.Flag) {
		if theirs[f.Name] {
			return
		}
		name := EnvName(f.Name)
		f.Usage += " (" + name + ")"
		if v := getenv(name); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				c.envErrs = append(c.envErrs, fmt.Errorf("%s: %q is not a %s", name, v, kindOf(f.Value)))
			}
		}
	})
}

// EnvName is the environment variable of a setting's flag: CONTACTD_ and the flag in capitals,
// DATABASE_URL for --database-url (the name every PostgreSQL tool knows).
func EnvName(flagName string) string {
	if flagName == "database-url" {
		return "DATABASE_URL"
	}
	return "CONTACTD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// kindOf names what a flag's value must look like, for an error.
func kindOf(v flag.Value) string {
	switch v.(flag.Getter).Get().(type) {
	case time.Duration:
		return "duration like 10s"
	case bool:
		return "boolean (true or false)"
	default:
		return "whole number"
	}
}

// ParseNetworks reads comma-separated CIDRs; a bare address is its own /32 or /128.
func ParseNetworks(raw string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(raw, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return nil, fmt.Errorf("%q is not a CIDR like 127.0.0.0/8 or an address", s)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Finish derives and validates what the flags left raw.
func (c *Config) Finish() error {
	errs := append([]error(nil), c.envErrs...)
	var err error
	if c.WebhookAllowedNetworks, err = ParseNetworks(c.WebhookAllowedRaw); err != nil {
		errs = append(errs, fmt.Errorf("CONTACTD_WEBHOOK_ALLOWED_NETWORKS: %w", err))
	}
	if c.TrustedProxies, err = ParseNetworks(c.TrustedProxiesRaw); err != nil {
		errs = append(errs, fmt.Errorf("CONTACTD_TRUSTED_PROXIES: %w", err))
	}
	if c.BackupDir != "" && c.DatabaseURL != "" {
		errs = append(errs, errors.New("CONTACTD_BACKUP_DIR: backs up the embedded PostgreSQL only; a server of DATABASE_URL is backed up by its operator (docs/operations.md, Backups)"))
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		errs = append(errs, fmt.Errorf("CONTACTD_ADDR: %q is not HOST:PORT (e.g. :8080)", c.Addr))
	}
	if c.PublicURL == "" && err == nil {
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "localhost"
		}
		c.PublicURL = "http://" + net.JoinHostPort(host, port)
	}
	if u, err := url.Parse(c.PublicURL); err != nil || !u.IsAbs() {
		errs = append(errs, fmt.Errorf("CONTACTD_PUBLIC_URL: %q is not an absolute URL", c.PublicURL))
	}
	if c.MaxBodyBytes < 1024 {
		errs = append(errs, errors.New("CONTACTD_MAX_BODY_BYTES: must be at least 1024"))
	}
	if c.MaxBatchBodyBytes < c.MaxBodyBytes {
		errs = append(errs, errors.New("CONTACTD_MAX_BATCH_BODY_BYTES: must be at least CONTACTD_MAX_BODY_BYTES"))
	}
	if c.RateReadsPer10s < 0 || c.RateWritesPer10s < 0 || c.RateAccountPerDay < 0 {
		errs = append(errs, errors.New("CONTACTD_RATE_*: limits must be 0 (off) or positive"))
	}
	if c.Exports < 1 || c.ExportsPerAccount < 1 || c.ExportsPerAccount > c.Exports {
		errs = append(errs, errors.New("CONTACTD_EXPORTS and CONTACTD_EXPORTS_PER_ACCOUNT: at least 1, and no more per account than in all"))
	}
	if c.BatchesPerAccount < 1 {
		errs = append(errs, errors.New("CONTACTD_BATCHES_PER_ACCOUNT: must be at least 1"))
	}
	if c.ListConcurrency < 0 {
		errs = append(errs, errors.New("CONTACTD_LIST_CONCURRENCY: must not be negative"))
	}
	if !natsTokens.MatchString(c.NATSSubjectPrefix) {
		errs = append(errs, fmt.Errorf("CONTACTD_NATS_SUBJECT_PREFIX: %q is not subject tokens (letters, digits, - and _, joined by dots)", c.NATSSubjectPrefix))
	}
	if c.ShutdownDrain < 0 || c.ShutdownDrainChecks < 0 {
		errs = append(errs, errors.New("CONTACTD_SHUTDOWN_DRAIN and CONTACTD_SHUTDOWN_DRAIN_CHECKS: must be 0 (off) or positive"))
	}
	if c.DBIdleInTxTimeout <= c.WriteTimeout {
		errs = append(errs, errors.New("CONTACTD_DB_IDLE_IN_TX_TIMEOUT: must be longer than CONTACTD_WRITE_TIMEOUT (an export waits for its client inside its transaction)"))
	}
	if c.RequestTimeout < 0 || c.RequestTimeout > 0 && c.RequestTimeout >= c.WriteTimeout {
		errs = append(errs, errors.New("CONTACTD_REQUEST_TIMEOUT: must be 0 (off) or shorter than CONTACTD_WRITE_TIMEOUT (its 503 must still reach the client)"))
	}
	if c.DBMaxConns < 2 {
		errs = append(errs, errors.New("CONTACTD_DB_MAX_CONNS: must be at least 2"))
	}
	if c.RedisTimeout <= 0 {
		errs = append(errs, errors.New("CONTACTD_REDIS_TIMEOUT: must be positive"))
	}
	if c.WebhookMaxInFlight < 1 {
		errs = append(errs, errors.New("CONTACTD_WEBHOOK_MAX_IN_FLIGHT: must be at least 1"))
	}
	if c.WebhookTimeout <= 0 || c.WebhookWorkers < 1 {
		errs = append(errs, errors.New("CONTACTD_WEBHOOK_TIMEOUT and CONTACTD_WEBHOOK_WORKERS must be positive"))
	}
	if c.WebhookRescueAfter <= c.WebhookTimeout+10*time.Second {
		errs = append(errs, errors.New("CONTACTD_WEBHOOK_RESCUE_AFTER must exceed CONTACTD_WEBHOOK_TIMEOUT by more than 10s, or live attempts could be repeated"))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("CONTACTD_LOG_LEVEL: %q is not debug, info, warn or error", c.LogLevel))
	}
	if c.SecretKey != "" {
		if _, err := seal.ParseKey(c.SecretKey); err != nil {
			errs = append(errs, fmt.Errorf("CONTACTD_SECRET_KEY: %v", err))
		}
	}
	if _, err := seal.ParseKeys(c.OldSecretKeys()); err != nil {
		errs = append(errs, fmt.Errorf("CONTACTD_SECRET_KEYS_OLD: %v", err))
	}
	if c.EventRetention < time.Hour {
		errs = append(errs, errors.New("CONTACTD_EVENT_RETENTION: must be at least 1h"))
	}
	switch c.LogFormat {
	case "auto", "text", "json":
	default:
		errs = append(errs, fmt.Errorf("CONTACTD_LOG_FORMAT: %q is not auto, text or json", c.LogFormat))
	}
	return errors.Join(errs...)
}

// OldSecretKeys is SecretKeysOld split into keys.
func (c *Config) OldSecretKeys() []string {
	var out []string
	for _, k := range strings.Split(c.SecretKeysOld, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

// natsTokens is a NATS subject without wildcards.
var natsTokens = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)
