package store

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	sqlfiles "github.com/contactd/contactd/sql"
)

// migrations is goose's view of the embedded migrations over a database/sql handle on the
// pool; the caller closes the handle (each holds a goroutine until closed).
func (s *Store) migrations() (*goose.Provider, *sql.DB, error) {
	dir, err := fs.Sub(sqlfiles.Migrations, "migrations")
	if err != nil {
		return nil, nil, err
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, nil, err
	}
	sqlDB := stdlib.OpenDBFromPool(s.Pool) // closing it leaves the pool open
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, dir, goose.WithSessionLocker(locker))
	if err != nil {
		sqlDB.Close()
		return nil, nil, err
	}
	return p, sqlDB, nil
}

// Migrate applies every pending migration and makes the events' partitions of the days
// ahead. Concurrent callers are serialised by advisory locks, so several processes may start
// at once.
func (s *Store) Migrate(ctx context.Context) error {
	p, sqlDB, err := s.migrations()
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	defer sqlDB.Close()
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	now := time.Now()
	if _, err := s.EnsureEventPartitions(ctx, now, now.Add(EventPartitionsAhead)); err != nil {
		return err
	}
	s.migrated.Store(true)
	return nil
}

// MigrationsCurrent reports whether the database has every migration this binary knows. Once
// it has, it is remembered: migrations only go forward under a running binary, and a readiness
// probe then costs no more than its ping.
func (s *Store) MigrationsCurrent(ctx context.Context) (bool, error) {
	if s.migrated.Load() {
		return true, nil
	}
	p, sqlDB, err := s.migrations()
	if err != nil {
		return false, err
	}
	defer sqlDB.Close()
	pending, err := p.HasPending(ctx)
	if err != nil {
		return false, err
	}
	s.migrated.Store(!pending)
	return !pending, nil
}
