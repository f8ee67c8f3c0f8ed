package backup_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/delivery"
	"github.com/contactd/contactd/internal/platform/backup"
	"github.com/contactd/contactd/internal/platform/pgembed"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/testkit"
)

// The restore drill: contactd writes on a cluster that archives its WAL with pgBackRest;
// a backup is taken, more is written, the time T is noted once those writes are
// acknowledged, more is written after T, and the cluster is restored to T into a new data
// directory. contactd started on the restored cluster has exactly the writes acknowledged
// before T; it opens the signing secrets with the same sealing key; the deliveries that were
// queued and not sent at T are sent, and the ones delivered before T are not sent again.
func TestRestoreToAPointInTime(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("pgbackrest"); err != nil {
		t.Fatal("pgbackrest is not installed: scripts/ensure-pgbackrest.sh (make test runs it)")
	}
	ctx := context.Background()
	base, err := os.MkdirTemp("", "contactd-restore-drill-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() { // the clusters' logs and pgBackRest's, for whoever looks into it
			t.Logf("kept %s", base)
			return
		}
		os.RemoveAll(base)
	})
	if err := os.Chmod(base, 0o755); err != nil { // PostgreSQL's user walks into its directories
		t.Fatal(err)
	}
	repo, err := backup.Open(filepath.Join(base, "backup"), filepath.Join(base, "live"), "drill passphrase")
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
	url := migrated(t, live)

	a := testkit.NewAPIOn(t, url, testkit.LocalDelivery)
	_, key := a.Account("acme")
	rc := testkit.NewReceiver(t)
	var sub api.WebhookSubscription
	if r := a.Do("POST", "/public/v1/webhooks", key, map[string]any{"url": rc.URL, "eventType": "TagsAdded"}); r.Status != 200 {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	} else {
		r.JSON(t, &sub)
	}
	create := func(api *testkit.API, batch string) []string {
		t.Helper()
		var emails []string
		for i := range 3 {
			email := batch + strconv.Itoa(i) + "@example.com"
			if r := api.Do("POST", "/public/v1/contact", key, map[string]any{"email": email, "tags": []string{batch}}); r.Status != 200 {
				t.Fatalf("create %s: %d %s", email, r.Status, r.Body)
			}
			emails = append(emails, email)
		}
		return emails
	}
	verified := func(d testkit.Delivered) string {
		t.Helper()
		ts, _ := strconv.ParseInt(d.Header.Get("webhook-timestamp"), 10, 64)
		want, err := delivery.Sign(*sub.Secret, d.Header.Get("webhook-id"), ts, d.Body)
		if err != nil || !strings.Contains(d.Header.Get("webhook-signature"), want) {
			t.Errorf("a delivery not signed with the subscription's secret: %s (%v)", d.Header.Get("webhook-signature"), err)
		}
		return string(d.Body)
	}

	// before the backup: delivered. At least once: on a loaded machine an attempt can time out
	// after the receiver took it, and be made again; the duplicates carry the same webhook-id.
	a.StartWorkers()
	before := create(a, "a")
	deliveredBefore := map[string]bool{}
	for len(deliveredBefore) < len(before) {
		d := rc.Next(t)
		verified(d)
		deliveredBefore[d.Header.Get("webhook-id")] = true
	}
	testkit.Eventually(t, "the first contacts' deliveries recorded as delivered", func() bool {
		return a.Count(t, `SELECT count(*) FROM webhook_deliveries WHERE status = 'Succeeded'`) == 3
	})
	a.DeliveriesSettled(t)
	drainDuplicates := func() {
		t.Helper()
		for {
			select {
			case d := <-rc.Got:
				if !deliveredBefore[d.Header.Get("webhook-id")] {
					t.Errorf("an unexpected delivery before the backup: %s", d.Body)
				}
			default:
				return
			}
		}
	}
	drainDuplicates()
	if err := repo.Backup(ctx, live, true); err != nil {
		t.Fatal(err)
	}
	// after the backup, before T: queued for a paused subscription, not sent
	if r := a.Do("PATCH", "/public/v1/webhooks/"+sub.SubscriptionId, key, map[string]any{"paused": true}); r.Status != 200 {
		t.Fatalf("pause: %d %s", r.Status, r.Body)
	}
	queued := create(a, "b")
	at := time.Now()
	// after T: lost to the restore
	after := create(a, "c")
	if err := repo.Archive(ctx, live); err != nil {
		t.Fatal(err)
	}
	if n := a.Count(t, `SELECT count(*) FROM contacts`); n != 9 {
		t.Fatalf("%d contacts on the live cluster, want 9", n)
	}

	restored, err := repo.Restore(ctx, live, filepath.Join(base, "restored"), at)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { restored.Stop() })
	b := testkit.NewAPIOn(t, restored.URL("contactd"), testkit.LocalDelivery, func(c *testkit.Config) { c.SecretKey = a.Cfg.SecretKey })
	var emails []string
	rows, err := b.Store.Pool.Query(ctx, `SELECT email FROM contacts ORDER BY email`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			t.Fatal(err)
		}
		emails = append(emails, e)
	}
	if want := append(slices.Clone(before), queued...); !slices.Equal(emails, want) {
		t.Fatalf("restored to T: contacts %v, want %v (not %v, written after T)", emails, want, after)
	}
	if n := b.Count(t, `SELECT count(*) FROM webhook_deliveries WHERE status = 'Pending'`); n != 3 {
		t.Errorf("restored to T: %d deliveries pending, want the 3 queued while paused", n)
	}

	if r := b.Do("PATCH", "/public/v1/webhooks/"+sub.SubscriptionId, key, map[string]any{"paused": false}); r.Status != 200 {
		t.Fatalf("resume: %d %s", r.Status, r.Body)
	}
	b.StartWorkers()
	got := map[string]bool{} // the queued contacts delivered (again and again, at least once)
	for len(got) < len(queued) {
		d := rc.Next(t)
		body := verified(d)
		if deliveredBefore[d.Header.Get("webhook-id")] {
			t.Fatalf("after the restore, a delivery made before T was sent again: %s", body)
		}
		matched := false
		for _, e := range queued {
			if strings.Contains(body, e) {
				got[e], matched = true, true
			}
		}
		if !matched {
			t.Fatalf("after the restore, an unexpected delivery: %s", body)
		}
	}
	testkit.Eventually(t, "every restored delivery delivered", func() bool {
		return b.Count(t, `SELECT count(*) FROM webhook_deliveries WHERE status <> 'Succeeded'`) == 0
	})
	b.DeliveryWorkersLooked(t)
	for { // the deliveries made before T were not sent again (the queued ones may come twice)
		select {
		case d := <-rc.Got:
			if deliveredBefore[d.Header.Get("webhook-id")] || !slices.ContainsFunc(queued, func(e string) bool { return strings.Contains(string(d.Body), e) }) {
				t.Errorf("after the restore, an unexpected delivery: %s", d.Body)
			}
			continue
		default:
		}
		break
	}
}

// migrated creates and migrates contactd's database on c, and returns its URL.
func migrated(t *testing.T, c *pgembed.Cluster) string {
	t.Helper()
	ctx := context.Background()
	if err := c.EnsureDatabase(ctx, "contactd"); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, c.URL("contactd"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return c.URL("contactd")
}

// scratch is a directory for a test's clusters and repository, that PostgreSQL's user can walk
// into, removed afterwards unless the test failed.
func scratch(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("", "contactd-backups-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kept %s", base)
			return
		}
		os.RemoveAll(base)
	})
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	return base
}

// Backups as a careful operator keeps them: the repository is encrypted (pgBackRest reports
// its cipher, and no file of it holds a contact's email, while the live cluster's WAL does);
// its passphrase is not in it; three full backups leave two (what the oldest held is gone);
// and writes are archived by the timer alone, with no forced switch (at most archive_timeout
// of acknowledged writes is only in the live cluster), then restored to a time between them
// through a differential backup.
func TestBackupsEncryptedAgedOutAndArchivedOnTheTimer(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("pgbackrest"); err != nil {
		t.Fatal("pgbackrest is not installed: scripts/ensure-pgbackrest.sh (make test runs it)")
	}
	ctx := context.Background()
	base := scratch(t)
	const passphrase = "a passphrase kept with the cluster"
	repo, err := backup.Open(filepath.Join(base, "backup"), filepath.Join(base, "live"), passphrase)
	if err != nil {
		t.Fatal(err)
	}
	live, err := pgembed.Start(ctx, pgembed.Options{Dir: filepath.Join(base, "live"), Settings: repo.Settings(archiveTimer)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Stop() })
	if err := repo.Attach(live); err != nil {
		t.Fatal(err)
	}
	a := testkit.NewAPIOn(t, migrated(t, live))
	_, key := a.Account("acme")
	create := func(email string) {
		t.Helper()
		if r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": email}); r.Status != 200 {
			t.Fatalf("create %s: %d %s", email, r.Status, r.Body)
		}
	}
	create("in-every-backup@example.com")
	for i := range 3 {
		if err := repo.Backup(ctx, live, true); err != nil {
			t.Fatal(err)
		}
		create(fmt.Sprintf("between-%d@example.com", i))
	}
	backups, err := repo.Backups(ctx, live)
	if err != nil {
		t.Fatal(err)
	}
	var fulls []string
	for _, b := range backups {
		if b.Type == "full" {
			fulls = append(fulls, b.Label)
		}
	}
	if len(fulls) != 2 {
		t.Errorf("after three full backups the repository keeps %v, want the last two", fulls)
	}
	// the schedule: the next backup is full once the newest full is a week old
	for _, c := range []struct {
		later time.Duration
		want  bool
	}{{0, false}, {6 * 24 * time.Hour, false}, {8 * 24 * time.Hour, true}} {
		if due, err := repo.FullDue(ctx, live, 7*24*time.Hour, time.Now().Add(c.later)); err != nil || due != c.want {
			t.Errorf("%s later, a full backup due: %v (%v), want %v", c.later, due, err, c.want)
		}
	}
	if err := repo.Archive(ctx, live); err != nil {
		t.Fatal(err)
	}
	if !repo.Encrypted() {
		t.Error("the repository is not encrypted")
	}
	if found := grepTree(t, repo.Dir, "in-every-backup@example.com", passphrase); len(found) > 0 {
		t.Errorf("the repository holds in clear: %v", found)
	}
	if found := grepTree(t, filepath.Join(base, "live", "data", "pg_wal"), "in-every-backup@example.com"); len(found) == 0 {
		t.Error("the live cluster's WAL does not hold the email either: the search proves nothing")
	}

	// a differential backup, a write after it, archived on the timer alone
	if err := repo.Backup(ctx, live, false); err != nil {
		t.Fatal(err)
	}
	create("after-the-differential@example.com")
	at := time.Now()
	create("after-T@example.com") // a commit past T: what tells recovery it has reached T
	var segment string
	if err := a.Store.Pool.QueryRow(ctx, "SELECT pg_walfile_name(pg_current_wal_lsn())").Scan(&segment); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	testkit.Eventually(t, "the writes' WAL segment archived by archive_timeout", func() bool {
		var archived *string
		if err := a.Store.Pool.QueryRow(ctx, "SELECT last_archived_wal FROM pg_stat_archiver").Scan(&archived); err != nil {
			t.Fatal(err)
		}
		return archived != nil && *archived >= segment
	})
	t.Logf("archived %s on the timer %s after the writes (archive_timeout %s)", segment, time.Since(written).Round(time.Second), archiveTimer)
	backups, err = repo.Backups(ctx, live)
	if err != nil || backups[len(backups)-1].Type != "diff" {
		t.Fatalf("the newest backup: %v %v, want the differential", backups, err)
	}
	restored, err := repo.Restore(ctx, live, filepath.Join(base, "restored"), at)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { restored.Stop() })
	var n int
	if err := restoredCount(ctx, restored, &n); err != nil || n != 5 {
		t.Errorf("restored through the differential: %d contacts (%v), want the 5 written before T (not the one after)", n, err)
	}
}

// archiveTimer is the timer drill's archive_timeout: the mechanism is the same at
// backup.ArchiveTimeout (a minute), which would make the test wait a minute.
const archiveTimer = 10 * time.Second

// restoredCount counts the restored cluster's contacts.
func restoredCount(ctx context.Context, c *pgembed.Cluster, n *int) error {
	st, err := store.Open(ctx, c.URL("contactd"), store.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	return st.Pool.QueryRow(ctx, "SELECT count(*) FROM contacts").Scan(n)
}

// grepTree lists the files under dir holding any of needles.
func grepTree(t *testing.T, dir string, needles ...string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() { // a directory, or pgBackRest's link to the latest backup
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, n := range needles {
			if strings.Contains(string(b), n) {
				found = append(found, path+": "+n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
