package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/contactd/contactd/internal/config"
	"github.com/contactd/contactd/internal/erasure"
	"github.com/contactd/contactd/internal/platform/backup"
	"github.com/contactd/contactd/internal/platform/pgembed"
	"github.com/contactd/contactd/internal/platform/queue"
	"github.com/contactd/contactd/internal/platform/token"
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
	repo, err := openBackups(c.cfg)
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
	// The sealing key and the backups' passphrase are not in the backups (a copy of the
	// backups alone opens nothing): the embedded cluster's files go along.
	if pass, err := os.ReadFile(filepath.Join(c.cfg.DataDir, backupPassphraseFile)); err == nil {
		if err := os.WriteFile(filepath.Join(*c.into, backupPassphraseFile), pass, 0o600); err != nil {
			return err
		}
	}
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
	if err := eraseAgain(ctx, c, *c.into); err != nil {
		return err
	}
	fmt.Fprintf(c.stderr, "restored to %s in %s: contactd serve --data-dir %[2]s\n", at.UTC().Format(time.RFC3339Nano), *c.into)
	return nil
}

// eraseAgain applies the erasure journal to the cluster restored into dir, before anything
// serves from it: the people erased after the restore's time stay erased and suppressed,
// and the deliveries pending about them send tombstones.
func eraseAgain(ctx context.Context, c *cmdline, dir string) error {
	entries, err := erasureJournal(c.cfg).Entries()
	if err != nil || len(entries) == 0 {
		return err
	}
	cfg := c.cfg
	cfg.DataDir, cfg.BackupDir = dir, "" // not archived: the repository is the source cluster's
	return withServicesOf(ctx, cfg, c.log, func(svc *Services) error {
		n, err := svc.Erasures.Reapply(ctx, entries)
		if err != nil {
			return fmt.Errorf("apply the erasure journal to the restored cluster: %w", err)
		}
		fmt.Fprintf(c.stderr, "erasure journal: %d of %d erasures applied again\n", n, len(entries))
		return nil
	})
}

// backupPassphraseFile keeps, with the embedded cluster, the passphrase its backups are
// encrypted with, when CONTACTD_BACKUP_PASSPHRASE is not set: never in the repository.
const backupPassphraseFile = "backup-passphrase"

// openBackups is the repository of CONTACTD_BACKUP_DIR for the embedded cluster of
// CONTACTD_DATA_DIR, its passphrase the environment's or the cluster's file (made on first
// use, mode 0600).
func openBackups(cfg config.Config) (backup.Repo, error) {
	pass := cfg.BackupPassphrase
	if pass == "" {
		path := filepath.Join(cfg.DataDir, backupPassphraseFile)
		b, err := os.ReadFile(path)
		switch {
		case err == nil:
			pass = strings.TrimSpace(string(b))
		case errors.Is(err, fs.ErrNotExist):
			pass = token.Base62(43)
			if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
				return backup.Repo{}, err
			}
			if err := os.WriteFile(path, []byte(pass+"\n"), 0o600); err != nil {
				return backup.Repo{}, fmt.Errorf("create the backup passphrase file: %w", err)
			}
		default:
			return backup.Repo{}, err
		}
	}
	return backup.Open(cfg.BackupDir, cfg.DataDir, pass)
}

// BackupTask takes the embedded cluster's backups on a schedule: every CONTACTD_BACKUP_EVERY,
// a full one once the newest is CONTACTD_BACKUP_FULL_EVERY old, else a differential one.
// Retention keeps two full backups, so what one held ages out of the repository once two more
// have ended. Nil without a repository or a schedule.
func (rt *Runtime) BackupTask(cfg config.Config) *queue.Task {
	if rt.backups == nil || cfg.BackupEvery <= 0 {
		return nil
	}
	return &queue.Task{Name: "backup", Every: cfg.BackupEvery, Run: func(ctx context.Context) error {
		full, err := rt.backups.FullDue(ctx, rt.embedded, cfg.BackupFullEvery, Now())
		if err != nil {
			return err
		}
		return rt.backups.Backup(ctx, rt.embedded, full)
	}}
}

// erasureJournal is the journal of erasures kept beside the backups, which a restore applies
// again (erasure.Journal); nil without backups.
func erasureJournal(cfg config.Config) *erasure.Journal {
	if cfg.BackupDir == "" || cfg.DatabaseURL != "" {
		return nil
	}
	return erasure.OpenJournal(filepath.Join(cfg.BackupDir, erasureJournalFile))
}

// erasureJournalFile is the journal's name in CONTACTD_BACKUP_DIR.
const erasureJournalFile = "erasure-journal"
