package app

import (
	"context"
	"log/slog"

	"github.com/contactd/contactd/internal/config"
)

// OpenServices is openServices, for the tests that drive the services on an embedded
// cluster with backups.
func OpenServices(ctx context.Context, cfg config.Config, log *slog.Logger) (*Runtime, *Services, error) {
	return openServices(ctx, cfg, log)
}

// Backup takes a backup of the runtime's embedded cluster.
func (rt *Runtime) Backup(ctx context.Context, full bool) error {
	return rt.backups.Backup(ctx, rt.embedded, full)
}
