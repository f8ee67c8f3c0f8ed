package app_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contactd/contactd/internal/app"
)

// contactd backup and contactd restore, as an operator runs them on the embedded PostgreSQL:
// a full backup, then a differential one, then a restore to a time between the two into a
// new directory, which has the account made before that time and not the one made after,
// and the sealing key to open its secrets.
func TestBackupAndRestoreCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := backupScratch(t, "contactd-backup-commands-")
	data, backups, restored := filepath.Join(base, "data"), filepath.Join(base, "backup"), filepath.Join(base, "restored")
	run := func(dataDir string, args ...string) (string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		full := append(args, "--data-dir", dataDir, "--log-format", "text")
		if args[0] == "accounts" || args[0] == "keys" {
			full = append(append([]string{args[0], args[1]}, "--data-dir", dataDir), args[2:]...)
		} else {
			full = append(full, "--backup-dir", backups)
		}
		if code := app.Main(ctx, full, &stdout, &stderr); code != 0 {
			t.Fatalf("contactd %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	run(data, "migrate")
	run(data, "accounts", "create", "--name", "before")
	if out, _ := run(data, "backup"); !strings.Contains(out, "\tfull\t") {
		t.Fatalf("the first backup: %q, want a full one listed", out)
	}
	at := time.Now()
	run(data, "accounts", "create", "--name", "after")
	if out, _ := run(data, "backup"); strings.Count(out, "\n") != 2 || !strings.Contains(out, "\tdiff\t") {
		t.Fatalf("the second backup: %q, want the full one and a differential one", out)
	}
	run(data, "restore", "--to", at.UTC().Format(time.RFC3339Nano), "--into", restored)

	if _, err := os.Stat(filepath.Join(restored, "secret-key")); err != nil {
		t.Errorf("the restored directory has no sealing key: %v", err)
	}
	run(restored, "keys", "create", "--account", "before")
	var stdout, stderr bytes.Buffer
	if code := app.Main(ctx, []string{"keys", "list", "--data-dir", restored, "--account", "after"}, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), `no account named "after"`) {
		t.Errorf("the account made after the restore's time: exit %d, %s", code, stderr.String())
	}
}

// backupScratch is a directory of its own for a test's clusters and backups, which
// PostgreSQL's user can walk into; the test fails at once without pgBackRest.
func backupScratch(t *testing.T, prefix string) string {
	t.Helper()
	if _, err := exec.LookPath("pgbackrest"); err != nil {
		t.Fatal("pgbackrest is not installed: scripts/ensure-pgbackrest.sh (make test runs it)")
	}
	base, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil { // PostgreSQL's user walks into its directories
		t.Fatal(err)
	}
	return base
}
