package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/contactd/contactd/internal/backup"
	"github.com/contactd/contactd/internal/pgembed"
)

var errNoBackupDir = errors.New("CONTACTD_BACKUP_DIR (--backup-dir) is not set: backups are of the embedded PostgreSQL, archived into that pgBackRest repository")

// cmdBackup backs the embedded PostgreSQL up into CONTACTD_BACKUP_DIR: a full backup when
// --full is given or none exists, else a differential one; then lists the backups.
func cmdBackup(ctx context.Context, c *cmdline) error {
	if c.cfg.BackupDir == "" {
		return errNoBackupDir
	}
	rt, err := Open(ctx, c.cfg, c.log)
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := rt.backups.Backup(ctx, rt.embedded, *c.full); err != nil {
		return err
	}
	backups, err := rt.backups.Backups(ctx, rt.embedded)
	if err != nil {
		return err
	}
	for _, b := range backups {
		fmt.Fprintf(c.stdout, "%s\t%s\t%s\t%s\n", b.Label, b.Type, b.Started.Format(time.RFC3339), b.Stopped.Format(time.RFC3339))
	}
	return nil
}

// cmdRestore restores the embedded PostgreSQL of CONTACTD_BACKUP_DIR as it was at --to into
// the new directory --into, and leaves it ready for `contactd serve --data-dir DIR`. The
// cluster in CONTACTD_DATA_DIR is neither started nor changed: it may be gone.
func cmdRestore(ctx context.Context, c *cmdline) error {
	if c.cfg.BackupDir == "" {
		return errNoBackupDir
	}
	if *c.into == "" || *c.to == "" {
		return errors.New("restore needs --to TIME (RFC 3339) and --into DIR (a new directory)")
	}
	at, err := time.Parse(time.RFC3339Nano, *c.to)
	if err != nil {
		return fmt.Errorf("--to: %q is not an RFC 3339 time like 2026-11-25T12:30:00Z", *c.to)
	}
	repo, err := backup.Open(c.cfg.BackupDir)
	if err != nil {
		return err
	}
	from, err := pgembed.Open(pgembed.Options{Dir: c.cfg.DataDir})
	if err != nil {
		return err
	}
	restored, err := repo.Restore(ctx, from, *c.into, at)
	if err != nil {
		return err
	}
	if err := restored.Stop(); err != nil {
		return err
	}
	// The sealing key is not in the backups (a copy of the backups alone opens no webhook
	// secret): the embedded cluster's key file goes along when it is still there.
	key, err := os.ReadFile(filepath.Join(c.cfg.DataDir, secretKeyFile))
	switch {
	case err == nil:
		if err := os.WriteFile(filepath.Join(*c.into, secretKeyFile), key, 0o600); err != nil {
			return err
		}
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(c.stderr, "%s has no %s: start contactd on the restored cluster with the key it had (CONTACTD_SECRET_KEY)\n",
			c.cfg.DataDir, secretKeyFile)
	default:
		return err
	}
	fmt.Fprintf(c.stderr, "restored to %s in %s: contactd serve --data-dir %[2]s\n", at.UTC().Format(time.RFC3339Nano), *c.into)
	return nil
}
