package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/erasure"
	"github.com/contactd/contactd/internal/platform/seal"
	"github.com/contactd/contactd/internal/testkit"
)

// An erased person's email and phone keep them out of an import too, until `contactd
// suppressions remove` lifts each; a rekey moves the suppression list's key with the other
// secrets, and the new key alone still keeps them out.
func TestSuppressionsImportLiftAndRekey(t *testing.T) {
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
	svc := services(t, db, keyA)
	account, err := svc.Auth.AccountByName(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	phone := "+1 555-010-7777"
	c, _, err := svc.Contacts.Create(ctx, account, contact.CreateInput{Email: "Gone@Example.com", Phone: &phone})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Erasures.Erase(ctx, account, c.ID.String(), erasure.Requester{KeyPrefix: "cli", KeyName: "test"}); err != nil {
		t.Fatal(err)
	}
	file := writeFile(t, "people.csv", "Email,Phone\ngone@example.com,\nnew@example.com,(555) 010-7777\nfine@example.com,\n")
	imports := func(key, want string, rejected ...string) {
		t.Helper()
		code, stdout, stderr := run(key, "import", "--account", "acme", file)
		if !strings.Contains(stdout, want) || (code == 3) != (len(rejected) > 0) {
			t.Fatalf("import: exit %d, want %q\n%s%s", code, want, stdout, stderr)
		}
		if len(rejected) == 0 {
			return
		}
		rows := readCSV(t, file+".rejected.csv")
		for i, line := range rejected {
			if len(rows) != len(rejected)+1 || rows[i+1][0] != line || !strings.Contains(rows[i+1][1], "ContactSuppressed") {
				t.Errorf("rejected rows %q, want lines %v as ContactSuppressed", rows, rejected)
			}
		}
	}
	imports(fileA, "1 created, 0 updated, 0 unchanged, 2 rejected", "2", "3")

	t.Setenv("CONTACTD_SECRET_KEYS_OLD", keyA)
	if code, _, errOut := run(fileB, "secrets", "rekey"); code != 0 || !strings.Contains(errOut, ", 1 suppression list key") {
		t.Fatalf("rekey: %d %s", code, errOut)
	}
	t.Setenv("CONTACTD_SECRET_KEYS_OLD", "")
	imports(fileB, "0 created, 0 updated, 1 unchanged, 2 rejected", "2", "3")

	for _, bad := range [][]string{{"--account", "acme"}, {"--account", "acme", "--email", "a@b.co", "--phone", "1"}, {"--email", "a@b.co"}} {
		if code, _, errOut := run(fileB, append([]string{"suppressions", "remove"}, bad...)...); code != 1 || errOut == "" {
			t.Errorf("suppressions remove %v: exit %d %s", bad, code, errOut)
		}
	}
	if code, _, errOut := run(fileB, "suppressions", "remove", "--account", "acme", "--email", " GONE@example.com"); code != 0 {
		t.Fatalf("lifting the email: %d %s", code, errOut)
	}
	if code, _, errOut := run(fileB, "suppressions", "remove", "--account", "acme", "--email", "gone@example.com"); code != 1 ||
		!strings.Contains(errOut, "does not suppress this email") {
		t.Errorf("lifting it again: %d %s", code, errOut)
	}
	imports(fileB, "1 created, 0 updated, 1 unchanged, 1 rejected", "3")
	if code, _, errOut := run(fileB, "suppressions", "remove", "--account", "acme", "--phone", "555.010.7777"); code != 0 {
		t.Fatalf("lifting the phone: %d %s", code, errOut)
	}
	imports(fileB, "1 created, 0 updated, 2 unchanged, 0 rejected")
}
