package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/gen/db"
)

// Planned is plannedDB for the external tests.
func Planned(inner db.DBTX) db.DBTX { return plannedDB{inner} }

// PipelinedOn is what Pipelined gives its fn's queries, for statements the tests write.
func PipelinedOn(s *Store) db.DBTX { return &pipelinedDB{inner: plannedDB{s.Pool}} }

// PipelinedOnConn is PipelinedOn on one connection.
func PipelinedOnConn(conn *pgx.Conn) db.DBTX { return &pipelinedDB{inner: plannedDB{conn}} }

// PlannedStatements is how many statements conn keeps scan plans for.
func PlannedStatements(conn *pgx.Conn) int {
	m, _ := conn.PgConn().CustomData()[plansKey].(map[string]*statementPlans)
	return len(m)
}

// MigrateDownTo reverts the migrations after version.
func MigrateDownTo(ctx context.Context, s *Store, version int64) error {
	p, sqlDB, err := s.migrations()
	if err != nil {
		return err
	}
	defer sqlDB.Close()
	s.migrated.Store(false)
	_, err = p.DownTo(ctx, version)
	return err
}
