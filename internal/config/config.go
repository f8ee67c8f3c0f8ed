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
	"strconv"
	"strings"
	"time"

	"github.com/contactd/contactd/internal/seal"
)

// Config is every setting of contactd.
type Config struct {
	Addr        string // CONTACTD_ADDR: where serve listens
	DatabaseURL string // DATABASE_URL: empty runs the embedded PostgreSQL
	DataDir     string // CONTACTD_DATA_DIR: the embedded PostgreSQL's home
	PublicURL   string // CONTACTD_PUBLIC_URL: base of URLs contactd hands out (consent pages)
	LogLevel    string // CONTACTD_LOG_LEVEL: debug, info, warn, error
	// LogFormat is text (for people), json (for machines) or auto: text when the log goes to
	// a terminal, JSON otherwise.
	LogFormat string // CONTACTD_LOG_FORMAT
	// PprofAddr, when set, serves net/http/pprof on its own listener (keep it on loopback).
	PprofAddr string // CONTACTD_PPROF_ADDR

	MaxBodyBytes      int64 // CONTACTD_MAX_BODY_BYTES
	MaxBatchBodyBytes int64 // CONTACTD_MAX_BATCH_BODY_BYTES
	DBMaxConns        int   // CONTACTD_DB_MAX_CONNS
	// ListConcurrency is how many list and search pages query PostgreSQL at once; the rest
	// wait their turn in order. 0: as many as CPUs, at least 2.
	ListConcurrency int // CONTACTD_LIST_CONCURRENCY
	// Exports and ExportsPerAccount bound the exports streaming at once, in the process and
	// per account: each holds a database connection for its whole stream.
	Exports            int           // CONTACTD_EXPORTS
	ExportsPerAccount  int           // CONTACTD_EXPORTS_PER_ACCOUNT
	DBStatementTimeout time.Duration // CONTACTD_DB_STATEMENT_TIMEOUT
	ReadHeaderTimeout  time.Duration // CONTACTD_READ_HEADER_TIMEOUT
	ReadTimeout        time.Duration // CONTACTD_READ_TIMEOUT
	WriteTimeout       time.Duration // CONTACTD_WRITE_TIMEOUT
	IdleTimeout        time.Duration // CONTACTD_IDLE_TIMEOUT
	ShutdownTimeout    time.Duration // CONTACTD_SHUTDOWN_TIMEOUT

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
var EnvOnly = []string{"CONTACTD_SECRET_KEY", "CONTACTD_SECRET_KEYS_OLD", "CONTACTD_PG_BIN"}

// Default is the configuration with nothing set.
func Default() Config {
	return Config{
		Addr: "127.0.0.1:8080", DataDir: ".data", LogLevel: "info", LogFormat: "auto",
		MaxBodyBytes: 64 << 10, MaxBatchBodyBytes: 4 << 20, DBMaxConns: 32, DBStatementTimeout: 10 * time.Second,
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second,
		ShutdownTimeout: 30 * time.Second,
		RateReadsPer10s: 100, RateWritesPer10s: 50, RateAccountPerDay: 350_000,
		WebhookTimeout: 15 * time.Second, WebhookWorkers: 64, WebhookMaxInFlight: 4, WebhookRescueAfter: time.Minute,
		EventRetention: 30 * 24 * time.Hour, RedisTimeout: 100 * time.Millisecond, Exports: 4, ExportsPerAccount: 2,
	}
}

// Flags registers every setting on fs, with defaults taken from the environment, so that a
// flag overrides its variable. Call Finish after fs.Parse.
func (c *Config) Flags(fs *flag.FlagSet, getenv func(string) string) {
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	d := *c
	fs.StringVar(&c.Addr, "addr", env("CONTACTD_ADDR", d.Addr), "listen address; the default is loopback only, :8080 listens on every interface (CONTACTD_ADDR)")
	fs.StringVar(&c.DatabaseURL, "database-url", env("DATABASE_URL", d.DatabaseURL), "PostgreSQL URL; empty runs an embedded PostgreSQL (DATABASE_URL)")
	fs.StringVar(&c.DataDir, "data-dir", env("CONTACTD_DATA_DIR", d.DataDir), "embedded PostgreSQL directory (CONTACTD_DATA_DIR)")
	fs.StringVar(&c.PublicURL, "public-url", env("CONTACTD_PUBLIC_URL", d.PublicURL), "base URL clients reach contactd at (CONTACTD_PUBLIC_URL)")
	fs.StringVar(&c.PprofAddr, "pprof-addr", env("CONTACTD_PPROF_ADDR", d.PprofAddr), "serve net/http/pprof on this address, e.g. 127.0.0.1:6060; off when empty (CONTACTD_PPROF_ADDR)")
	fs.StringVar(&c.LogLevel, "log-level", env("CONTACTD_LOG_LEVEL", d.LogLevel), "debug, info, warn or error (CONTACTD_LOG_LEVEL)")
	fs.StringVar(&c.LogFormat, "log-format", env("CONTACTD_LOG_FORMAT", d.LogFormat), "text, json, or auto: text on a terminal, JSON otherwise (CONTACTD_LOG_FORMAT)")
	intVar := func(p any, name, envVal string, def int64, usage string) { c.intVar(fs, p, name, envVal, def, usage) }
	durVar := func(p *time.Duration, name, envVal string, def time.Duration, usage string) {
		c.durVar(fs, p, name, envVal, def, usage)
	}
	intVar(&c.MaxBodyBytes, "max-body-bytes", env("CONTACTD_MAX_BODY_BYTES", ""), d.MaxBodyBytes, "request body limit (CONTACTD_MAX_BODY_BYTES)")
	intVar(&c.MaxBatchBodyBytes, "max-batch-body-bytes", env("CONTACTD_MAX_BATCH_BODY_BYTES", ""), d.MaxBatchBodyBytes, "request body limit of the batch operations (CONTACTD_MAX_BATCH_BODY_BYTES)")
	intVar(&c.DBMaxConns, "db-max-conns", env("CONTACTD_DB_MAX_CONNS", ""), int64(d.DBMaxConns), "database pool size (CONTACTD_DB_MAX_CONNS)")
	intVar(&c.ListConcurrency, "list-concurrency", env("CONTACTD_LIST_CONCURRENCY", ""), int64(d.ListConcurrency), "list and search pages that query at once, the rest wait in order; 0: as many as CPUs, at least 2 (CONTACTD_LIST_CONCURRENCY)")
	intVar(&c.Exports, "exports", env("CONTACTD_EXPORTS", ""), int64(d.Exports), "exports streaming at once in this process, each holding a database connection; more answer 429 (CONTACTD_EXPORTS)")
	intVar(&c.ExportsPerAccount, "exports-per-account", env("CONTACTD_EXPORTS_PER_ACCOUNT", ""), int64(d.ExportsPerAccount), "exports one account may stream at once; more answer 429 (CONTACTD_EXPORTS_PER_ACCOUNT)")
	durVar(&c.DBStatementTimeout, "db-statement-timeout", env("CONTACTD_DB_STATEMENT_TIMEOUT", ""), d.DBStatementTimeout, "(CONTACTD_DB_STATEMENT_TIMEOUT)")
	durVar(&c.ReadHeaderTimeout, "read-header-timeout", env("CONTACTD_READ_HEADER_TIMEOUT", ""), d.ReadHeaderTimeout, "(CONTACTD_READ_HEADER_TIMEOUT)")
	durVar(&c.ReadTimeout, "read-timeout", env("CONTACTD_READ_TIMEOUT", ""), d.ReadTimeout, "(CONTACTD_READ_TIMEOUT)")
	durVar(&c.WriteTimeout, "write-timeout", env("CONTACTD_WRITE_TIMEOUT", ""), d.WriteTimeout, "(CONTACTD_WRITE_TIMEOUT)")
	durVar(&c.IdleTimeout, "idle-timeout", env("CONTACTD_IDLE_TIMEOUT", ""), d.IdleTimeout, "(CONTACTD_IDLE_TIMEOUT)")
	durVar(&c.ShutdownTimeout, "shutdown-timeout", env("CONTACTD_SHUTDOWN_TIMEOUT", ""), d.ShutdownTimeout, "(CONTACTD_SHUTDOWN_TIMEOUT)")
	intVar(&c.RateReadsPer10s, "rate-reads-per-10s", env("CONTACTD_RATE_READS_PER_10S", ""), int64(d.RateReadsPer10s), "reads per API key per sliding 10 s, 0 disables (CONTACTD_RATE_READS_PER_10S)")
	intVar(&c.RateWritesPer10s, "rate-writes-per-10s", env("CONTACTD_RATE_WRITES_PER_10S", ""), int64(d.RateWritesPer10s), "writes per API key per sliding 10 s, 0 disables (CONTACTD_RATE_WRITES_PER_10S)")
	intVar(&c.RateAccountPerDay, "rate-account-per-day", env("CONTACTD_RATE_ACCOUNT_PER_DAY", ""), int64(d.RateAccountPerDay), "requests per account per UTC day, 0 disables (CONTACTD_RATE_ACCOUNT_PER_DAY)")
	c.boolVar(fs, &c.WebhookAllowHTTP, "webhook-allow-http", env("CONTACTD_WEBHOOK_ALLOW_HTTP", ""), "admit http:// webhook URLs, for local development (CONTACTD_WEBHOOK_ALLOW_HTTP)")
	durVar(&c.WebhookTimeout, "webhook-timeout", env("CONTACTD_WEBHOOK_TIMEOUT", ""), d.WebhookTimeout, "one delivery attempt (CONTACTD_WEBHOOK_TIMEOUT)")
	intVar(&c.WebhookWorkers, "webhook-workers", env("CONTACTD_WEBHOOK_WORKERS", ""), int64(d.WebhookWorkers), "delivery attempts at once (CONTACTD_WEBHOOK_WORKERS)")
	intVar(&c.WebhookMaxInFlight, "webhook-max-in-flight", env("CONTACTD_WEBHOOK_MAX_IN_FLIGHT", ""), int64(d.WebhookMaxInFlight), "attempts one receiver URL may have at once, across processes (CONTACTD_WEBHOOK_MAX_IN_FLIGHT)")
	durVar(&c.WebhookRescueAfter, "webhook-rescue-after", env("CONTACTD_WEBHOOK_RESCUE_AFTER", ""), d.WebhookRescueAfter, "retry an attempt whose worker died after this (CONTACTD_WEBHOOK_RESCUE_AFTER)")
	durVar(&c.EventRetention, "event-retention", env("CONTACTD_EVENT_RETENTION", ""), d.EventRetention, "how long the events feed keeps events, e.g. 720h (CONTACTD_EVENT_RETENTION)")
	durVar(&c.RedisTimeout, "redis-timeout", env("CONTACTD_REDIS_TIMEOUT", ""), d.RedisTimeout, "bound on each rate-limit decision's Redis round trips; slower, the process limits alone (CONTACTD_REDIS_TIMEOUT)")
	fs.StringVar(&c.RedisURL, "redis-url", env("CONTACTD_REDIS_URL", d.RedisURL), "Redis shared by every process for the rate limits, e.g. redis://127.0.0.1:6379/0; empty: each process limits alone (CONTACTD_REDIS_URL)")
	c.SecretKey, c.SecretKeysOld = getenv("CONTACTD_SECRET_KEY"), getenv("CONTACTD_SECRET_KEYS_OLD")
	fs.StringVar(&c.SecretKeyFile, "secret-key-file", env("CONTACTD_SECRET_KEY_FILE", d.SecretKeyFile), "file holding the key that seals stored secrets, instead of CONTACTD_SECRET_KEY (CONTACTD_SECRET_KEY_FILE)")
	fs.StringVar(&c.MetricsToken, "metrics-token", env("CONTACTD_METRICS_TOKEN", ""), "bearer token that lets a scraper from anywhere read /metrics; unset: loopback clients only (CONTACTD_METRICS_TOKEN)")
	fs.StringVar(&c.TrustedProxiesRaw, "trusted-proxies", env("CONTACTD_TRUSTED_PROXIES", ""), "comma-separated CIDRs of the proxies whose X-Forwarded-For names the client (CONTACTD_TRUSTED_PROXIES)")
	fs.StringVar(&c.WebhookAllowedRaw, "webhook-allowed-networks", env("CONTACTD_WEBHOOK_ALLOWED_NETWORKS", ""), "comma-separated CIDRs webhooks may reach despite the SSRF guard (CONTACTD_WEBHOOK_ALLOWED_NETWORKS)")
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
	if c.ListConcurrency < 0 {
		errs = append(errs, errors.New("CONTACTD_LIST_CONCURRENCY: must not be negative"))
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

// intVar binds an int or int64 setting.
func (c *Config) intVar(fs *flag.FlagSet, p any, name, envVal string, def int64, usage string) {
	set := func(v int64) {
		switch p := p.(type) {
		case *int:
			*p = int(v)
		case *int64:
			*p = v
		}
	}
	set(def)
	if envVal != "" {
		v, err := strconv.ParseInt(envVal, 10, 64)
		if err != nil {
			c.envErrs = append(c.envErrs, fmt.Errorf("%s: %q is not an integer", envName(name), envVal))
		}
		set(v)
	}
	fs.Func(name, fmt.Sprintf("%s (default %d)", usage, def), func(s string) error {
		v, err := strconv.ParseInt(s, 10, 64)
		set(v)
		return err
	})
}

func (c *Config) durVar(fs *flag.FlagSet, p *time.Duration, name, envVal string, def time.Duration, usage string) {
	*p = def
	if envVal != "" {
		v, err := time.ParseDuration(envVal)
		if err != nil {
			c.envErrs = append(c.envErrs, fmt.Errorf("%s: %q is not a duration like 10s", envName(name), envVal))
		}
		*p = v
	}
	fs.DurationVar(p, name, *p, usage)
}

func (c *Config) boolVar(fs *flag.FlagSet, p *bool, name, envVal, usage string) {
	var v bool
	if envVal != "" {
		var err error
		if v, err = strconv.ParseBool(envVal); err != nil {
			c.envErrs = append(c.envErrs, fmt.Errorf("%s: %q is not true or false", envName(name), envVal))
		}
	}
	fs.BoolVar(p, name, v, usage)
}

func envName(flagName string) string {
	return "CONTACTD_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}
