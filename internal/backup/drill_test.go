package backup_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/backup"
	"github.com/contactd/contactd/internal/delivery"
	"github.com/contactd/contactd/internal/pgembed"
	"github.com/contactd/contactd/internal/store"
	"github.com/contactd/contactd/internal/testkit"
)

// The restore drill: contactd writes on a cluster that archives its WAL with pgBackRest;
// a backup is taken, more is written, the time T is noted once those writes are
// acknowledged, more is written after T, and the cluster is restored to T into a new data
// directory. contactd started on the restored cluster has exactly the writes acknowledged
// before T; it opens the signing secrets with the same sealing key; the deliveries that were
// queued and not sent at T are sent, and the ones delivered before T are not sent again.
func TestRestoreToAPointInTime(t *testing.T) {
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
	repo, err := backup.Open(filepath.Join(base, "backup"))
	if err != nil {
		t.Fatal(err)
	}
	live, err := pgembed.Start(ctx, pgembed.Options{Dir: filepath.Join(base, "live"), Settings: repo.Settings()})
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
