package httpapi_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/platform/pgembed"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/testkit"
)

// With a standby (CONTACTD_DATABASE_REPLICA_URL), list pages and exports are read from it
// while it is within CONTACTD_REPLICA_MAX_LAG, and from the primary once it lags further;
// a single contact is always read from the primary. The standby's replay is paused to make
// it lag: a process that tolerates an hour of lag lists what the standby has, one that
// tolerates none stops using it and lists the primary's, and both read the new contact by
// its email; /metrics shows the lag and which one is in use. Promoted, the standby serves no
// process any more.
func TestListsReadTheStandbyWhileItKeepsUp(t *testing.T) {
	t.Parallel()
	primary, standby := primaryAndStandby(t)
	lenient := testkit.NewAPIOn(t, primary.URL("contactd"), func(c *testkit.Config) {
		c.DatabaseReplicaURL, c.ReplicaMaxLag = standby.URL("contactd"), time.Hour
	})
	strict := testkit.NewAPIOn(t, primary.URL("contactd"), func(c *testkit.Config) {
		c.DatabaseReplicaURL, c.ReplicaMaxLag, c.SecretKey = standby.URL("contactd"), 0, lenient.Cfg.SecretKey
	})
	_, key := lenient.Account("acme")
	listed := func(a *testkit.API) string { t.Helper(); return listedEmails(t, a, key) }
	exported := func(a *testkit.API) string {
		t.Helper()
		r := a.Do("GET", "/public/v1/contacts/export", key, nil)
		if r.Status != 200 {
			t.Fatalf("export: %d %s", r.Status, r.Body)
		}
		return strconv.Itoa(strings.Count(string(r.Body), `"email"`))
	}
	onStandby := func(sql string) int { t.Helper(); return onStandby(t, standby, sql) }
	if r := lenient.Do("POST", "/public/v1/contact", key, map[string]any{"email": "first@example.com"}); r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	testkit.Eventually(t, "the standby replayed the first contact and is in use", func() bool {
		return onStandby(`SELECT count(*) FROM contacts`) == 1 && lenient.Store.Replica().InUse
	})

	onStandby(`SELECT 1 FROM pg_wal_replay_pause()`)
	testkit.Eventually(t, "the standby's replay paused", func() bool {
		return onStandby(`SELECT (pg_get_wal_replay_pause_state() = 'paused')::int`) == 1
	})
	if r := lenient.Do("POST", "/public/v1/contact", key, map[string]any{"email": "second@example.com"}); r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	for _, a := range []*testkit.API{lenient, strict} {
		if r := a.Do("GET", "/public/v1/contact?emailId=second%40example.com", key, nil); r.Status != 200 {
			t.Errorf("a contact by its email, while the standby lags: %d %s", r.Status, r.Body)
		}
	}
	if got := listed(lenient); got != "first@example.com" {
		t.Errorf("listed %q within an hour's lag, want the standby's first@example.com", got)
	}
	if got := exported(lenient); got != "1" {
		t.Errorf("exported %s contacts within an hour's lag, want the standby's 1", got)
	}
	testkit.Eventually(t, "the strict process stops reading the lagging standby", func() bool {
		r := strict.Store.Replica()
		return !r.InUse && r.Lag > 0
	})
	if got := listed(strict); got != "second@example.com first@example.com" {
		t.Errorf("listed %q past the lag bound, want the primary's second and first", got)
	}
	if got := exported(strict); got != "2" {
		t.Errorf("exported %s contacts past the lag bound, want the primary's 2", got)
	}
	testkit.Eventually(t, "/metrics shows the lag, and the standby in use by one process and not by the other", func() bool {
		l, s := lenient.Do("GET", "/metrics", "", nil).Body, strict.Do("GET", "/metrics", "", nil).Body
		return strings.Contains(string(l), "contactd_db_replica_in_use 1") && strings.Contains(string(s), "contactd_db_replica_in_use 0") &&
			!strings.Contains(string(l), "contactd_db_replica_lag_seconds 0\n")
	})

	onStandby(`SELECT 1 FROM pg_wal_replay_resume()`)
	testkit.Eventually(t, "the standby caught up and serves the lenient process's list again", func() bool {
		return listed(lenient) == "second@example.com first@example.com" && lenient.Store.Replica().InUse
	})

	// promoted, the standby is a primary of a history of its own: no process reads from it
	onStandby(`SELECT pg_promote()::int`)
	testkit.Eventually(t, "the lenient process stops reading the promoted standby", func() bool {
		return !lenient.Store.Replica().InUse
	})
	if r := lenient.Do("POST", "/public/v1/contact", key, map[string]any{"email": "third@example.com"}); r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	if got := listed(lenient); got != "third@example.com second@example.com first@example.com" {
		t.Errorf("listed %q once the standby was promoted, want the primary's three", got)
	}
}

// primaryAndStandby are a primary with contactd's schema and a hot standby streaming from it.
func primaryAndStandby(t *testing.T, settings ...string) (primary, standby *pgembed.Cluster) {
	t.Helper()
	ctx := context.Background()
	base, err := pgembed.ScratchDir("contactd-replica-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil { // PostgreSQL's user walks into its directories
		t.Fatal(err)
	}
	primary, err = pgembed.Start(ctx, pgembed.Options{Dir: filepath.Join(base, "primary"), Ephemeral: true, Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { primary.Stop() })
	if err := primary.EnsureDatabase(ctx, "contactd"); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, primary.URL("contactd"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close()
	standby, err = primary.StartStandby(ctx, pgembed.Options{Dir: filepath.Join(base, "standby"), Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { standby.Stop() })
	return primary, standby
}

// onStandby runs a query of one integer on the standby.
func onStandby(t *testing.T, standby *pgembed.Cluster, sql string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, standby.URL("contactd"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// switchWAL has the primary close its WAL segment and write it out, for the standby to
// receive (a primary with a long wal_writer_delay otherwise holds what asynchronous commits
// wrote until the delay is up); the WAL after it starts on a fresh page.
func switchWAL(t *testing.T, primary *pgembed.Cluster) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, primary.URL("contactd"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_switch_wal()`); err != nil {
		t.Fatal(err)
	}
}

// listedEmails are the emails of a's first list page, in its order.
func listedEmails(t *testing.T, a *testkit.API, key string) string {
	t.Helper()
	var page api.ContactList
	if r := a.Do("GET", "/public/v1/contacts", key, nil); r.Status != 200 {
		t.Fatalf("list: %d %s", r.Status, r.Body)
	} else {
		r.JSON(t, &page)
	}
	var emails []string
	for _, c := range page.Contacts {
		emails = append(emails, c.Email)
	}
	return strings.Join(emails, " ")
}

// An erased person is not served from a standby after the erasure answered, however far
// behind the standby is: the erasure fences it, and reads go to the primary until it has
// replayed the erasure, in the process that erased at once and in the others once they hear
// the fence (a notification). With the standby's replay paused and an hour's lag allowed,
// both processes list and export without the person; resumed, the standby serves again.
// The primary commits without waiting for its WAL to be written (the test clusters'
// synchronous_commit=off) and writes it out every 10 s: an erasure's commit record is then
// past the WAL written so far, which a fence at the written position would not cover.
func TestNoErasedPersonFromAStandbyAfterTheErasure(t *testing.T) {
	t.Parallel()
	primary, standby := primaryAndStandby(t, "wal_writer_delay=10000")
	erasing := testkit.NewAPIOn(t, primary.URL("contactd"), func(c *testkit.Config) {
		c.DatabaseReplicaURL, c.ReplicaMaxLag = standby.URL("contactd"), time.Hour
	})
	other := testkit.NewAPIOn(t, primary.URL("contactd"), func(c *testkit.Config) {
		c.DatabaseReplicaURL, c.ReplicaMaxLag, c.SecretKey = standby.URL("contactd"), time.Hour, erasing.Cfg.SecretKey
	})
	_, key := erasing.Account("acme")
	gone := createContact(t, erasing, key, map[string]any{"email": "gone@example.com"}).Contact.ContactId
	createContact(t, erasing, key, map[string]any{"email": "kept@example.com"})
	switchWAL(t, primary)
	testkit.Eventually(t, "the standby replayed both contacts and both processes read it", func() bool {
		return onStandby(t, standby, `SELECT count(*) FROM contacts`) == 2 && erasing.Store.Replica().InUse && other.Store.Replica().InUse
	})
	onStandby(t, standby, `SELECT 1 FROM pg_wal_replay_pause()`)
	testkit.Eventually(t, "the standby's replay paused", func() bool {
		return onStandby(t, standby, `SELECT (pg_get_wal_replay_pause_state() = 'paused')::int`) == 1
	})
	if r := erasing.Do("POST", "/public/v1/contact/"+gone+"/erase", key, nil); r.Status != 200 {
		t.Fatalf("erase: %d %s", r.Status, r.Body)
	}
	if onStandby(t, standby, `SELECT count(*) FROM contacts`) != 2 {
		t.Fatal("the paused standby replayed the erasure: the test shows nothing")
	}
	// the case a fence at the written position misses: the standby has replayed all the WAL
	// written so far, and the erasure's commit is past it (on the page the WAL switch began)
	written := onStandby(t, primary, `SELECT (pg_current_wal_lsn() - '0/0')::bigint`)
	if replayed := onStandby(t, standby, `SELECT (pg_last_wal_replay_lsn() - '0/0')::bigint`); replayed < written {
		t.Fatalf("the primary wrote WAL the paused standby has not replayed (%d < %d): the test shows nothing", replayed, written)
	}
	exported := func(a *testkit.API) string {
		t.Helper()
		r := a.Do("GET", "/public/v1/contacts/export", key, nil)
		if r.Status != 200 {
			t.Fatalf("export: %d %s", r.Status, r.Body)
		}
		return string(r.Body)
	}
	if got := listedEmails(t, erasing, key); got != "kept@example.com" {
		t.Errorf("the erasing process listed %q right after the erasure, want kept@example.com alone", got)
	}
	if got := exported(erasing); strings.Contains(got, "gone@example.com") {
		t.Errorf("the erasing process exported the erased person right after the erasure: %s", got)
	}
	testkit.Eventually(t, "the other process heard the fence", func() bool { return !other.Store.Replica().InUse })
	if got := listedEmails(t, other, key); got != "kept@example.com" {
		t.Errorf("the other process listed %q once fenced, want kept@example.com alone", got)
	}
	if got := exported(other); strings.Contains(got, "gone@example.com") {
		t.Errorf("the other process exported the erased person once fenced: %s", got)
	}

	switchWAL(t, primary)
	onStandby(t, standby, `SELECT 1 FROM pg_wal_replay_resume()`)
	testkit.Eventually(t, "the standby replayed the erasure and serves both processes again", func() bool {
		return erasing.Store.Replica().InUse && other.Store.Replica().InUse
	})
	for _, a := range []*testkit.API{erasing, other} {
		if got := listedEmails(t, a, key); got != "kept@example.com" {
			t.Errorf("listed %q from the standby that replayed the erasure, want kept@example.com alone", got)
		}
	}
}
