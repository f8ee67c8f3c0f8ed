// Package testkit is the test harness: one private PostgreSQL per test binary, a fresh
// database per test cloned from a migrated template, the real HTTP stack on a loopback
// port, and a client that checks every response against openapi.yaml.
package testkit

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/contactd/contactd/internal/platform/pgembed"
	"github.com/contactd/contactd/internal/platform/store"
)

const templateDB = "contactd_template"

var (
	cluster *pgembed.Cluster
	dbSeq   atomic.Int64
)

// Main starts PostgreSQL, migrates the template database, runs the tests and stops
// PostgreSQL. Use it as the TestMain of every package that needs a database.
func Main(m *testing.M) {
	os.Exit(run(m))
}

// MainWith is Main with more server settings ("name=value" each).
func MainWith(m *testing.M, settings ...string) {
	os.Exit(run(m, settings...))
}

func run(m *testing.M, settings ...string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir, err := pgembed.ScratchDir("contactd-test-pg-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// commit timestamps: the delivery invariant (CheckInvariants) orders events and the
	// subscriptions' definitions by their commits
	settings = append(settings, "track_commit_timestamp=on")
	cluster, err = pgembed.Start(ctx, pgembed.Options{Dir: dir, Ephemeral: true, Settings: settings})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testkit: start PostgreSQL:", err)
		return 1
	}
	defer cluster.Stop()
	if err := migrateTemplate(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "testkit: migrate template:", err)
		return 1
	}
	return m.Run()
}

func migrateTemplate(ctx context.Context) error {
	if err := cluster.EnsureDatabase(ctx, templateDB); err != nil {
		return err
	}
	st, err := store.Open(ctx, cluster.URL(templateDB), store.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	return st.Migrate(ctx)
}

// Cluster is the running test PostgreSQL, for tests that stop and start it.
func Cluster() *pgembed.Cluster { return cluster }

// NewDatabase creates an empty, migrated database for one test and returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	return newDatabase(t, templateDB, "")
}

// NewDatabaseFrom creates a database for one test as a copy of the database named template,
// which nothing may be connected to, and returns its URL: for a test whose cases each start
// from the same prepared data. The files are copied (STRATEGY FILE_COPY), not written through
// the WAL: a prepared template may be hundreds of megabytes.
func NewDatabaseFrom(t testing.TB, template string) string {
	t.Helper()
	return newDatabase(t, template, " STRATEGY FILE_COPY")
}

func newDatabase(t testing.TB, template, options string) string {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), dbSeq.Add(1))
	admin, err := pgx.Connect(ctx, cluster.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+template+options); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, cluster.URL("postgres"))
		if err == nil {
			_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(ctx)
		}
	})
	return cluster.URL(name)
}

// NewStore opens a store on a fresh database for one test.
func NewStore(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), NewDatabase(t), store.Options{MaxConns: 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

// Pool is shorthand for a test's raw pool, to assert database state.
func Pool(st *store.Store) *pgxpool.Pool { return st.Pool }
