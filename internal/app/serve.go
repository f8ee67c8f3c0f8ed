package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/contactd/contactd/internal/config"
	"github.com/contactd/contactd/internal/platform/tracing"
)

// Serve runs the API and the delivery workers until ctx is done, then drains in-flight
// requests and attempts (bounded by cfg.ShutdownTimeout) before closing the database.
func Serve(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer) error {
	stopTracing, err := startTracing(ctx, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	rt, svc, err := openServices(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer rt.Close()
	svc.StartWorkers()
	defer stopWorkers(cfg, svc, log)
	if rt.Embedded() {
		if err := printDevKey(ctx, cfg, svc, stdout); err != nil {
			return err
		}
	}
	h, err := Handler(cfg, rt.Store, svc, log)
	if err != nil {
		return err
	}
	lctx, stopListening := context.WithCancel(context.WithoutCancel(ctx))
	defer stopListening()
	go svc.Listen(lctx, rt.Store, log)
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	if cfg.PprofAddr != "" {
		stop, err := servePprof(cfg.PprofAddr, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	srv := &http.Server{Handler: svc.Drain.Handler(h), ReadHeaderTimeout: cfg.ReadHeaderTimeout, ReadTimeout: cfg.ReadTimeout,
		WriteTimeout: cfg.WriteTimeout, IdleTimeout: cfg.IdleTimeout,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	log.Info("contactd listening", slog.String("addr", ln.Addr().String()), slog.String("public_url", cfg.PublicURL))
	errc := make(chan error, 1)
	served := make(chan struct{})
	go func() { errc <- srv.Serve(ln); close(served) }()
	select {
	case <-served:
		return <-errc
	case <-ctx.Done():
	}
	if cfg.ShutdownDrain > 0 {
		log.Info("stopping: /readyz says so, serving on meanwhile", slog.Duration("drain", cfg.ShutdownDrain),
			slog.Int("drain_checks", cfg.ShutdownDrainChecks))
		svc.Drain.Run(cfg.ShutdownDrain, cfg.ShutdownDrainChecks, served)
		log.Info("drained", slog.Int64("checks_answered", svc.Drain.Checks()))
	}
	log.Info("shutting down: draining in-flight requests", slog.Duration("timeout", cfg.ShutdownTimeout))
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Work runs only the workers (deliveries, enrichment, maintenance) until ctx is done.
func Work(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	stopTracing, err := startTracing(ctx, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	return withServicesOf(ctx, cfg, log, func(svc *Services) error {
		svc.StartWorkers()
		log.Info("contactd workers running", slog.Int("workers", cfg.WebhookWorkers))
		<-ctx.Done()
		stopWorkers(cfg, svc, log)
		return nil
	})
}

// stopWorkers lets running attempts finish within the shutdown timeout; the rest are
// cancelled and retried later.
func stopWorkers(cfg config.Config, svc *Services, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := svc.StopWorkers(ctx); err != nil {
		log.Warn("stop workers", slog.Any("error", err))
	}
}

// printDevKey gives the embedded development database a dev account and prints its key. The
// key is kept in the data directory (mode 0600) so every `make run` can print it again; it
// is a development convenience that only exists with the embedded database.
func printDevKey(ctx context.Context, cfg config.Config, svc *Services, stdout io.Writer) error {
	keyFile := filepath.Join(cfg.DataDir, "dev-api-key")
	if b, err := os.ReadFile(keyFile); err == nil {
		fmt.Fprintf(stdout, "dev API key: %s\n", strings.TrimSpace(string(b)))
		return nil
	}
	id, err := svc.Auth.AccountByName(ctx, "dev")
	if err != nil {
		if id, err = svc.Auth.CreateAccount(ctx, "dev"); err != nil {
			return err
		}
	}
	key, err := svc.Auth.CreateKey(ctx, id, "dev")
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "dev API key: %s\n", key)
	return nil
}

// servePprof serves the runtime profiles on a listener of their own, never on the API's: an
// operator switch for measuring (cmd/contactbench -profile), off by default.
func servePprof(addr string, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pprof listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Warn("pprof enabled", slog.String("addr", ln.Addr().String()))
	go func() { _ = srv.Serve(ln) }()
	return func() { _ = srv.Close() }, nil
}

// startTracing starts OpenTelemetry tracing when the environment asks for it
// (OTEL_EXPORTER_OTLP_ENDPOINT, see internal/platform/tracing), and returns what flushes and stops it.
func startTracing(ctx context.Context, log *slog.Logger) (func(), error) {
	version := "(devel)"
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		version = info.Main.Version
	}
	shutdown, err := tracing.Setup(ctx, "contactd", version)
	if err != nil {
		return nil, fmt.Errorf("tracing (OTEL_EXPORTER_OTLP_ENDPOINT): %w", err)
	}
	if tracing.Configured() {
		log.Info("tracing on: spans go to the OTLP/HTTP collector of OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			log.Warn("tracing: flushing the last spans", slog.Any("error", err))
		}
	}, nil
}
