package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/internal/auth"
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
	dir         string
	close       func()
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "contactbench: "+format+"\n", args...) }

// openBenchDB starts a private cluster in a new temporary directory (settings: more server
// settings) and prepares it; close stops and removes it.
func openBenchDB(ctx context.Context, settings []string) (*benchDB, error) {
	dir, err := os.MkdirTemp("", "contactbench-")
	if err != nil {
		return nil, err
	}
	b := &benchDB{dir: dir, close: func() { os.RemoveAll(dir) }}
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
	keys := auth.NewService(b.st, time.Now)
	if b.account, err = keys.CreateAccount(ctx, "bench"); err != nil {
		return fail(err)
	}
	if b.apiKey, err = keys.CreateKey(ctx, b.account, "bench"); err != nil {
		return fail(err)
	}
	if b.scopedKey, err = keys.CreateKeyWith(ctx, b.account, auth.KeyOptions{Name: "bench-scoped",
		Scopes: []string{"contacts:read", "contacts:write"}, Networks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}); err != nil {
		return fail(err)
	}
	segments, err := keys.CreateAccount(ctx, "bench-segments")
	if err != nil {
		return fail(err)
	}
	if b.segmentsKey, err = keys.CreateKey(ctx, segments, "bench-segments"); err != nil {
		return fail(err)
	}
	return b, nil
}
