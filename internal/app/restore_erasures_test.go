package app_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/internal/app"
	"github.com/contactd/contactd/internal/config"
	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/erasure"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/subscription"
	"github.com/contactd/contactd/internal/suppression"
	"github.com/contactd/contactd/internal/testkit"
)

// A restore to a time before an erasure does not bring the person back: `contactd restore`
// applies the erasure journal to the restored cluster before anything serves from it. Erased
// after T and restored to T, the person is gone again (row, events, answers), suppressed, and
// the deliveries about them pending at T send tombstones; a person made and erased after T,
// whom the restored cluster never had, is suppressed too. Applying the journal twice changes
// nothing.
func TestErasuresSurviveARestore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := backupScratch(t, "contactd-restore-erasures-")
	data, backups, restored := filepath.Join(base, "data"), filepath.Join(base, "backup"), filepath.Join(base, "restored")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := config.Default()
	cfg.DataDir, cfg.BackupDir = data, backups
	testkit.LocalDelivery(&cfg)
	if err := cfg.Finish(); err != nil {
		t.Fatal(err)
	}
	rc := testkit.NewReceiver(t)

	rt, svc, err := app.OpenServices(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	account, err := svc.Auth.CreateAccount(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []event.EventType{event.TagsAdded, event.ContactErased} {
		if _, err := svc.Webhooks.Create(ctx, account, subscription.NewSubscription{URL: rc.URL, EventType: typ}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.Backup(ctx, true); err != nil {
		t.Fatal(err)
	}
	name, phone := "Gone Person", "+1 555 010 4242"
	gone, _, err := svc.Contacts.Create(ctx, account, contact.CreateInput{Email: "gone.person@example.org", Name: &name, Phone: &phone, Tags: []string{"vip"}})
	if err != nil {
		t.Fatal(err)
	}
	kept, _, err := svc.Contacts.Create(ctx, account, contact.CreateInput{Email: "kept@example.org", Tags: []string{"vip"}})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now() // the deliveries of both creates are pending: no worker runs
	by := erasure.Requester{KeyPrefix: "cli", KeyName: "dpo"}
	first, err := svc.Erasures.Erase(ctx, account, gone.ID.String(), by)
	if err != nil {
		t.Fatal(err)
	}
	late, _, err := svc.Contacts.Create(ctx, account, contact.CreateInput{Email: "late@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := svc.Erasures.Erase(ctx, account, late.ID.String(), by)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Backup(ctx, false); err != nil { // archives the WAL past both erasures
		t.Fatal(err)
	}
	rt.Close()
	journal, err := os.ReadFile(filepath.Join(backups, "erasure-journal"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"gone.person", "Gone Person", "4242", "late@", "kept@"} {
		if bytes.Contains(journal, []byte(v)) {
			t.Errorf("the erasure journal holds %q", v)
		}
	}

	var stdout, stderr bytes.Buffer
	if code := app.Main(ctx, []string{"restore", "--to", at.UTC().Format(time.RFC3339Nano), "--into", restored,
		"--data-dir", data, "--backup-dir", backups, "--log-format", "text"}, &stdout, &stderr); code != 0 {
		t.Fatalf("restore: exit %d\n%s", code, stderr.String())
	} else if !strings.Contains(stderr.String(), "erasure journal: 2 of 2 erasures applied again") {
		t.Errorf("restore said %q, want the journal's two erasures applied again", stderr.String())
	}

	cfg.DataDir, cfg.BackupDir = restored, ""
	rt, svc, err = app.OpenServices(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	count := func(query string, args ...any) int {
		t.Helper()
		var n int
		if err := rt.Store.Pool.QueryRow(ctx, query, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	id := gone.ID.String()
	if _, err := svc.Contacts.Get(ctx, account, &id, nil, nil); !errors.Is(err, contact.ErrNotFound) {
		t.Errorf("the erased contact after the restore: %v, want not found", err)
	}
	keptID := kept.ID.String()
	if _, err := svc.Contacts.Get(ctx, account, &keptID, nil, nil); err != nil {
		t.Errorf("the bystander after the restore: %v", err)
	}
	for _, v := range []string{"gone.person@example.org", "Gone Person", "010 4242"} {
		if n := count(`SELECT count(*) FROM webhook_events WHERE payload::text LIKE '%' || $1 || '%'`, v); n != 0 {
			t.Errorf("%q is in %d events of the restored cluster", v, n)
		}
	}
	if n := count(`SELECT count(*) FROM erasures WHERE erasure_id = ANY($1)`, []uuid.UUID{first.ID, second.ID}); n != 2 {
		t.Errorf("%d erasure records, want both journalled ones", n)
	}
	for _, email := range []string{"gone.person@example.org", "late@example.org"} {
		if _, _, err := svc.Contacts.Create(ctx, account, contact.CreateInput{Email: email}); !errors.Is(err, suppression.ErrSuppressed) {
			t.Errorf("create %s after the restore: %v, want it suppressed", email, err)
		}
	}
	if n, err := svc.Erasures.Reapply(ctx, mustEntries(t, filepath.Join(backups, "erasure-journal"))); err != nil || n != 0 {
		t.Errorf("the journal applied a second time: %d, %v; want nothing done", n, err)
	}

	pending := count(`SELECT count(*) FROM webhook_deliveries WHERE status = 'Pending'`)
	if pending != 3 { // the two creates' TagsAdded at T, and the ContactErased the journal said again
		t.Fatalf("%d deliveries pending after the restore, want 3", pending)
	}
	svc.StartWorkers()
	var erasedSaid bool
	for range pending {
		got := rc.Next(t)
		for _, v := range []string{"gone.person", "Gone Person", "4242"} {
			if bytes.Contains(got.Body, []byte(v)) {
				t.Errorf("a delivery after the restore carries %q: %s", v, got.Body)
			}
		}
		erasedSaid = erasedSaid || bytes.Contains(got.Body, []byte(first.ID.String()))
	}
	stop, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := svc.StopWorkers(stop); err != nil {
		t.Fatal(err)
	}
	if !erasedSaid {
		t.Error("no ContactErased with the journalled erasure's id reached the receiver")
	}
}

func mustEntries(t *testing.T, path string) []erasure.JournalEntry {
	t.Helper()
	entries, err := erasure.OpenJournal(path).Entries()
	if err != nil {
		t.Fatal(err)
	}
	return entries
}
