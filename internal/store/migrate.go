package store

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	sqlfiles "github.com/contactd/contactd/sql"
)

func (s *Store) migrations() (*goose.Provider, error) {
	dir, err := fs.Sub(sqlfiles.Migrations, "migrations")
	if err != nil {
		return nil, err
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(goose.DialectPostgres, stdlib.OpenDBFromPool(s.Pool), dir,
		goose.WithSessionLocker(locker))
}

// Migrate applies every pending migration. Concurrent callers are serialised by goose's
// advisory lock, so several processes may start at once.
func (s *Store) Migrate(ctx context.Context) error {
	p, err := s.migrations()
	if err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	// River keeps its own tables and versions; its migrator is idempotent and locks too.
	rm, err := rivermigrate.New(riverpgxv5.New(s.Pool), nil)
	if err != nil {
		return err
	}
	if _, err := rm.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("apply job queue migrations: %w", err)
	}
	return nil
}

// MigrationsCurrent reports whether the database has every migration this binary knows.
func (s *Store) MigrationsCurrent(ctx context.Context) (bool, error) {
	p, err := s.migrations()
	if err != nil {
		return false, err
	}
	pending, err := p.HasPending(ctx)
	if err != nil {
		return false, err
	}
	return !pending, nil
}
