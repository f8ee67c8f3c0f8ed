package main

import (
	"context"
	"fmt"
	"os"

	"github.com/google/uuid"

	"github.com/contactd/contactd/internal/platform/pgembed"
	"github.com/contactd/contactd/internal/platform/store"
)

// benchDB is a run's own PostgreSQL: migrated, with the account the run measures and its key.
type benchDB struct {
	url        string
	postmaster int
	st         *store.Store
	account    uuid.UUID
	apiKey     string
	// scopedKey may read and write contacts only, from loopback only
	scopedKey string
	// segmentsKey is the key of the account of 100 dynamic segments (segments.go)
	segmentsKey string
	// quietKey is the key of an account nobody subscribes to: what an account without webhooks does
	quietKey string
	dir      string
	// bin is the contactd binary that made the accounts (and makes more)
	bin   string
	close func()
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "contactbench: "+format+"\n", args...) }

// openBenchDB starts a private cluster in a new temporary directory (settings: more server
// settings) and prepares it with the contactd binary bin; close stops and removes it.
func openBenchDB(ctx context.Context, bin string, settings []string) (*benchDB, error) {
	dir, err := os.MkdirTemp("", "contactbench-")
	if err != nil {
		return nil, err
	}
	b := &benchDB{dir: dir, bin: bin, close: func() { os.RemoveAll(dir) }}
	fail := func(err error) (*benchDB, error) { b.close(); return nil, err }
	logf("starting PostgreSQL in %s", dir)
	cluster, err := pgembed.Start(ctx, pgembed.Options{Dir: dir, Settings: settings})
	if err != nil {
		return fail(err)
	}
	b.close = func() { _ = cluster.Stop(); os.RemoveAll(dir) }
	if err := cluster.EnsureDatabase(ctx, "contactd"); err != nil {
		return fail(err)
	}
	b.url = cluster.URL("contactd")
	if b.postmaster, err = postmasterPID(dir); err != nil {
		return fail(err)
	}
	if b.st, err = store.Open(ctx, b.url, store.Options{MaxConns: 8}); err != nil {
		return fail(err)
	}
	stopCluster := b.close
	b.close = func() { b.st.Close(); stopCluster() }
	if err := b.st.Migrate(ctx); err != nil {
		return fail(err)
	}
	if b.account, err = createAccount(ctx, bin, b.url, "bench"); err != nil {
		return fail(err)
	}
	if b.apiKey, err = createKey(ctx, bin, b.url, "bench", "bench"); err != nil {
		return fail(err)
	}
	if b.scopedKey, err = createKey(ctx, bin, b.url, "bench", "bench-scoped", "--scope", "contacts:read,contacts:write",
		"--allow-ip", "127.0.0.0/8"); err != nil {
		return fail(err)
	}
	if _, err := createAccount(ctx, bin, b.url, "bench-segments"); err != nil {
		return fail(err)
	}
	if b.segmentsKey, err = createKey(ctx, bin, b.url, "bench-segments", "bench-segments"); err != nil {
		return fail(err)
	}
	if _, err := createAccount(ctx, bin, b.url, "bench-quiet"); err != nil {
		return fail(err)
	}
	if b.quietKey, err = createKey(ctx, bin, b.url, "bench-quiet", "bench-quiet"); err != nil {
		return fail(err)
	}
	return b, nil
}
