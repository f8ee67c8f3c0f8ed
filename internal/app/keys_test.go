package app_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/contactd/contactd/internal/testkit"
)

func TestKeysCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testkit.NewDatabase(t)
	if code, _, stderr := contactd(t, ctx, db, "accounts", "create", "--name", "acme"); code != 0 {
		t.Fatalf("accounts create: %d %s", code, stderr)
	}
	if code, _, stderr := contactd(t, ctx, db, "sandbox", "reset", "--account", "acme"); code != 0 || !strings.Contains(stderr, "no sandbox yet") {
		t.Errorf("reset before any test key: %d %s", code, stderr)
	}
	code, key, stderr := contactd(t, ctx, db, "keys", "create", "--account", "acme", "--name", "reader", "--scope", "contacts:read,events:read",
		"--expires", "90d", "--allow-ip", "10.0.0.0/8", "--allow-ip", "192.0.2.7", "--test")
	key = strings.TrimSpace(key)
	if code != 0 || !regexp.MustCompile(`^ck_test_[0-9A-Za-z]{43}$`).MatchString(key) {
		t.Fatalf("keys create --test: %d %q %s", code, key, stderr)
	}
	code, out, _ := contactd(t, ctx, db, "keys", "list", "--account", "acme")
	row := regexp.MustCompile(regexp.QuoteMeta(key[:16]) + `\s+reader\s+test\s+contacts:read,events:read\s+\d{4}-\d\d-\d\dT\S+Z\s+10\.0\.0\.0/8,192\.0\.2\.7/32\s`)
	if code != 0 || !row.MatchString(out) {
		t.Errorf("keys list:\n%s", out)
	}
	for _, bad := range [][]string{
		{"--scope", "contacts:admin"}, {"--expires", "yesterday"}, {"--expires", "2001-01-01"}, {"--allow-ip", "10.0.0.0/33"},
	} {
		args := append([]string{"keys", "create", "--account", "acme"}, bad...)
		if code, _, stderr := contactd(t, ctx, db, args...); code != 1 || !strings.Contains(stderr, bad[0]) {
			t.Errorf("%v: %d %s", bad, code, stderr)
		}
	}
	if code, _, stderr := contactd(t, ctx, db, "keys", "expire", key[:16], "--expires", "24h"); code != 0 || !strings.Contains(stderr, "expires at") {
		t.Errorf("keys expire: %d %s", code, stderr)
	}
	// a prefix that names no active key is an error, not a silent success: an operator
	// revoking a leaked key must know when nothing was revoked
	for _, args := range [][]string{{"keys", "revoke", "ck_test_nobody00"}, {"keys", "expire", "ck_test_nobody00", "--expires", "24h"}} {
		if code, _, stderr := contactd(t, ctx, db, args...); code != 1 || !strings.Contains(stderr, "no active key with prefix") {
			t.Errorf("%v: %d %s", args, code, stderr)
		}
	}
	if code, out, stderr := contactd(t, ctx, db, "accounts", "secret", "--account", "acme", "--test"); code != 0 || len(strings.TrimSpace(out)) < 40 {
		t.Errorf("the sandbox's client secret: %d %q %s", code, out, stderr)
	}
	if code, _, stderr := contactd(t, ctx, db, "sandbox", "reset", "--account", "acme"); code != 0 || !strings.Contains(stderr, "test keys kept") {
		t.Errorf("sandbox reset: %d %s", code, stderr)
	}
}
