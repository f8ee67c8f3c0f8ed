package backup_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/contactd/contactd/internal/platform/backup"
	"github.com/contactd/contactd/internal/platform/pgembed"
	"github.com/contactd/contactd/internal/testkit"
)

// A repository that cannot take the WAL (here, made unwritable): writes go on and are
// acknowledged, their WAL kept in pg_wal, while /metrics says archiving is failing and
// counts the failures; once the repository takes writes again, the WAL kept meanwhile is
// archived (a restore can reach the writes made during the failure) and /metrics says so.
func TestArchiveUnableToPush(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("pgbackrest"); err != nil {
		t.Fatal("pgbackrest is not installed: scripts/ensure-pgbackrest.sh (make test runs it)")
	}
	ctx := context.Background()
	base := scratch(t)
	repo, err := backup.Open(filepath.Join(base, "backup"), filepath.Join(base, "live"), "a passphrase")
	if err != nil {
		t.Fatal(err)
	}
	live, err := pgembed.Start(ctx, pgembed.Options{Dir: filepath.Join(base, "live"), Settings: repo.Settings(0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Stop() })
	if err := repo.Attach(live); err != nil {
		t.Fatal(err)
	}
	if err := repo.Backup(ctx, live, true); err != nil {
		t.Fatal(err)
	}
	a := testkit.NewAPIOn(t, migrated(t, live))
	_, key := a.Account("acme")
	metric := func(name string) int {
		t.Helper()
		m := regexp.MustCompile(`(?m)^` + name + ` (\d+)$`).FindStringSubmatch(string(a.Do("GET", "/metrics", "", nil).Body))
		if m == nil {
			t.Fatalf("/metrics has no %s", name)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	write := func(email string) {
		t.Helper()
		if r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": email}); r.Status != 200 {
			t.Fatalf("create %s: %d %s", email, r.Status, r.Body)
		}
	}
	write("before@example.com")
	if err := repo.Archive(ctx, live); err != nil {
		t.Fatal(err)
	}
	if failing, failures := metric("contactd_wal_archive_failing"), metric("contactd_wal_archive_failures_total"); failing != 0 || failures != 0 {
		t.Fatalf("archiving that works: failing %d, %d failures", failing, failures)
	}

	store := filepath.Join(repo.Dir, "repo")
	info, err := os.Stat(store)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(store, 0); err != nil {
		t.Fatal(err)
	}
	restored := false
	t.Cleanup(func() {
		if !restored {
			os.Chmod(store, info.Mode().Perm())
		}
	})
	for i := range 3 {
		write(fmt.Sprintf("during-%d@example.com", i))
		if _, err := a.Store.Pool.Exec(ctx, "SELECT pg_switch_wal()"); err != nil { // a finished segment to archive
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, "/metrics saying archiving is failing", func() bool {
		return metric("contactd_wal_archive_failing") == 1 && metric("contactd_wal_archive_failures_total") > 0
	})
	write("still-acknowledged@example.com")

	if err := os.Chmod(store, info.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
	restored = true
	if err := repo.Archive(ctx, live); err != nil { // the segments kept meanwhile, then this one
		t.Fatalf("archiving after the repository came back: %v", err)
	}
	testkit.Eventually(t, "/metrics saying archiving works again", func() bool { return metric("contactd_wal_archive_failing") == 0 })
}
