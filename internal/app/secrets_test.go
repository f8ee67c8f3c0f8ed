package app_test

import (
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/contactd/contactd/internal/app"
	"github.com/contactd/contactd/internal/config"
	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/idempotency"
	"github.com/contactd/contactd/internal/platform/seal"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/subscription"
	"github.com/contactd/contactd/internal/testkit"
)

func writeKey(t *testing.T, key string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// services are contactd's services on the database at dbURL with key as the sealing key.
func services(t *testing.T, dbURL, key string) *app.Services {
	t.Helper()
	st, err := store.Open(context.Background(), dbURL, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	cfg := config.Default()
	cfg.SecretKey = key
	keys, err := testkit.SecretKeys(cfg)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := app.NewServices(cfg, st, keys, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// subscribe stores a subscription sealed under key, as serve would, and a response under an
// Idempotency-Key.
func subscribe(t *testing.T, dbURL, key, account string) {
	t.Helper()
	ctx := context.Background()
	svc := services(t, dbURL, key)
	id, err := svc.Auth.AccountByName(ctx, account)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Webhooks.Create(ctx, id, subscription.NewSubscription{URL: "https://hooks.example.com/x", EventType: event.TagsAdded}); err != nil {
		t.Fatal(err)
	}
	if got := storedResponse(t, svc, id); got != "the first answer" {
		t.Fatalf("stored response: %q", got)
	}
}

// storedResponse runs a request under the Idempotency-Key "rekey" of account, and returns the
// body answered: the first run's, stored (sealed) and replayed ever after.
func storedResponse(t *testing.T, svc *app.Services, account uuid.UUID) string {
	t.Helper()
	resp, _, err := svc.Idempotency.Do(context.Background(), account, "rekey", idempotency.Request{Method: "POST", Path: "/x"},
		func(context.Context) (idempotency.Response, bool) {
			return idempotency.Response{Status: 200, Body: []byte("the first answer")}, true
		})
	if err != nil {
		t.Fatal(err)
	}
	return string(resp.Body)
}

// The account client secret is printed alone, created on first use and kept; --rotate
// replaces it. A wrong or missing key stops every command that needs one, saying why; a
// rekey moves every secret to a new key, after which the old key is no longer needed.
// (Not parallel: CONTACTD_SECRET_KEYS_OLD is read from the environment only.)
func TestSecretKeysAndClientSecret(t *testing.T) {
	ctx := context.Background()
	db := testkit.NewDatabase(t)
	keyA, keyB := seal.NewKey(), seal.NewKey()
	fileA, fileB := writeKey(t, keyA), writeKey(t, keyB)
	run := func(file string, args ...string) (int, string, string) {
		t.Helper()
		return contactdWithKey(t, ctx, db, file, args...)
	}
	if code, _, errOut := run(fileA, "accounts", "create", "--name", "acme"); code != 0 {
		t.Fatalf("accounts create: %d %s", code, errOut)
	}
	code, first, errOut := run(fileA, "accounts", "secret", "--account", "acme")
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(first))
	if code != 0 || !strings.HasSuffix(first, "\n") || strings.Count(first, "\n") != 1 || err != nil || len(raw) < 24 {
		t.Fatalf("accounts secret: %d %q (%d bytes, %v) %s", code, first, len(raw), err, errOut)
	}
	if _, again, _ := run(fileA, "accounts", "secret", "--account", "acme"); again != first {
		t.Errorf("asked again: %q, want the same %q", again, first)
	}
	_, rotated, _ := run(fileA, "accounts", "secret", "--account", "acme", "--rotate")
	if _, again, _ := run(fileA, "accounts", "secret", "--account", "acme"); rotated == first || again != rotated {
		t.Errorf("--rotate gave %q, then %q; want a new secret that stays", rotated, again)
	}
	if code, _, errOut := run(fileA, "accounts", "secret", "--account", "nobody"); code != 1 || errOut == "" {
		t.Errorf("an unknown account: %d %s", code, errOut)
	}
	subscribe(t, db, keyA, "acme")

	// a wrong key: refused before anything runs, naming the key ids
	for _, cmd := range [][]string{{"serve", "--addr", "127.0.0.1:0"}, {"worker"}, {"keys", "list", "--account", "acme"}} {
		code, _, errOut := run(fileB, cmd...)
		if code != 1 || !strings.Contains(errOut, "sealed under key id "+seal.KeyID(mustKey(t, keyA))) ||
			!strings.Contains(errOut, "CONTACTD_SECRET_KEY is wrong") {
			t.Errorf("%s with the wrong key: exit %d: %s", cmd[0], code, errOut)
		}
	}
	// no key at all with DATABASE_URL
	var out, noKey strings.Builder
	if code := app.Main(ctx, []string{"worker", "--database-url", db}, &out, &noKey); code != 1 ||
		!strings.Contains(noKey.String(), "no secret key") || !strings.Contains(noKey.String(), "CONTACTD_SECRET_KEY") {
		t.Errorf("no key: exit %d: %s", code, noKey.String())
	}

	// moving to key B: B current, A still opening; rekey; then B alone
	t.Setenv("CONTACTD_SECRET_KEYS_OLD", keyA)
	code, _, errOut = run(fileB, "secrets", "rekey")
	if want := "resealed under key " + seal.KeyID(mustKey(t, keyB)) + ": 1 subscriptions, 1 accounts, 1 stored idempotent responses"; code != 0 || !strings.Contains(errOut, want) {
		t.Fatalf("rekey: %d %q, want %q", code, errOut, want)
	}
	if _, _, errOut := run(fileB, "secrets", "rekey"); !strings.Contains(errOut, ": 0 subscriptions, 0 accounts, 0 stored idempotent responses") {
		t.Errorf("a second rekey: %s, want nothing left to move", errOut)
	}
	t.Setenv("CONTACTD_SECRET_KEYS_OLD", "")
	if code, again, errOut := run(fileB, "accounts", "secret", "--account", "acme"); code != 0 || again != rotated {
		t.Errorf("with key B alone after the rekey: %d %q %s, want %q", code, again, errOut, rotated)
	}
	withB := services(t, db, keyB)
	if id, err := withB.Auth.AccountByName(ctx, "acme"); err != nil || storedResponse(t, withB, id) != "the first answer" {
		t.Errorf("the stored response with key B alone after the rekey: %v", err)
	}
	if code, _, _ := run(fileA, "keys", "list", "--account", "acme"); code != 1 {
		t.Errorf("with key A alone after the rekey: exit %d, want 1", code)
	}
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(seal.KeyID(mustKey(t, keyB))) {
		t.Error("key ids are 16 hex digits")
	}
}

func mustKey(t *testing.T, b64 string) []byte {
	k, err := seal.ParseKey(b64)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
