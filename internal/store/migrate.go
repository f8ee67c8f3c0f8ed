package store

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

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
