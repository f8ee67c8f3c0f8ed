package suppression_test

import (
	"context"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/platform/seal"
	"github.com/contactd/contactd/internal/suppression"
	"github.com/contactd/contactd/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// The suppression list reads an email as the duplicate finder does: EmailCanon is SQL's
// contact_email_canon (migration 00027) on every kind of address it knows.
func TestEmailCanonAgreesWithSQL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testkit.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, key := range []string{"jane.roe@gmail.com", "j.a.n.e.roe+news+more@googlemail.com", "jane.roe+x@outlook.com",
		"jane.roe@hotmail.com", "jr+@icloud.com", "+only@proton.me", "jane.roe+news@example.com", "no-at-sign",
		"jane@pm.me", "a.b@me.com", "x+y@mac.com", "x.y+z@fastmail.com", "q@live.com", "q+w@protonmail.com"} {
		var sql *string
		if err := conn.QueryRow(ctx, "SELECT contact_email_canon($1)", key).Scan(&sql); err != nil {
			t.Fatal(err)
		}
		want := ""
		if sql != nil {
			want = *sql
		}
		if got := suppression.EmailCanon(key); got != want {
			t.Errorf("EmailCanon(%q) = %q, SQL %q", key, got, want)
		}
	}
}

func TestPhoneE164(t *testing.T) {
	t.Parallel()
	for phone, want := range map[string]string{
		"555-010-2030": "+15550102030", "(555) 010-2030": "+15550102030", "555.010.2030": "+15550102030",
		"+1 555 010 2030": "+15550102030", "15550102030": "+15550102030", "+01 (555) 010-2030": "+15550102030",
		"+44 555 010 2030": "+445550102030", "+4 555 010 2030": "+45550102030", "no digits": "",
	} {
		if got := suppression.PhoneE164(&phone); got != want {
			t.Errorf("PhoneE164(%q) = %q, want %q", phone, got, want)
		}
	}
	if got := suppression.PhoneE164(nil); got != "" {
		t.Errorf("no phone: %q", got)
	}
}

// A phone is compared by its digits without a US country code: the list's entries from
// before E.164 forms were added kept only that form, so a phone typed with +1 must still meet
// the entry of the same phone typed without it. Other numbers keep every digit.
func TestPhoneKey(t *testing.T) {
	t.Parallel()
	for phone, want := range map[string]string{
		"+1 (555) 010-2030": "5550102030", "15550102030": "5550102030", "555-010-2030": "5550102030",
		"25550102030": "25550102030", "+44 555 010 2030": "445550102030", "+1 555 010 203": "1555010203",
		"no digits": "",
	} {
		if got := suppression.PhoneKey(&phone); got != want {
			t.Errorf("PhoneKey(%q) = %q, want %q", phone, got, want)
		}
	}
	if got := suppression.PhoneKey(nil); got != "" {
		t.Errorf("no phone: %q", got)
	}
}

func keyring(t *testing.T) *seal.Keyring {
	t.Helper()
	k, err := base64.StdEncoding.DecodeString(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	ring, err := seal.NewKeyring(k)
	if err != nil {
		t.Fatal(err)
	}
	return ring
}

// A digest is the database's secret key's and the account's: two processes of one database
// agree on it; another database, or another account, gets another digest of the same email
// (a list copied elsewhere, or one account's entries, tell nothing of the others).
func TestDigestsAreTheDatabasesAndTheAccounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, ring := testkit.NewStore(t), keyring(t)
	one, two, elsewhere := suppression.New(st, ring, time.Now), suppression.New(st, ring, time.Now), suppression.New(testkit.NewStore(t), keyring(t), time.Now)
	account, other := uuid.New(), uuid.New()
	digest := func(l *suppression.List, account uuid.UUID) string {
		t.Helper()
		e, err := l.Entries(ctx, account, "jane@example.com", nil)
		if err != nil || len(e) != 1 {
			t.Fatalf("entries %v, %v", e, err)
		}
		return string(e[0].Digest)
	}
	first := digest(one, account)
	if digest(two, account) != first || digest(one, account) != first {
		t.Error("two processes of one database, or one twice, digest an email differently")
	}
	if digest(elsewhere, account) == first {
		t.Error("another database's key gives the same digest")
	}
	if digest(one, other) == first {
		t.Error("another account gets the same digest")
	}
}

// A list whose key cannot be read, or does not open, answers an error, never digests made
// without the key; so do its readers when the database cannot answer.
func TestAListWithoutItsKeyFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testkit.NewStore(t)
	if _, err := suppression.New(st, keyring(t), time.Now).Entries(ctx, uuid.New(), "jane@example.com", nil); err != nil {
		t.Fatal(err) // the key is made, sealed with this keyring
	}
	account := uuid.New()
	phone := "555-010-2030"
	wrong := suppression.New(st, keyring(t), time.Now)
	if e, err := wrong.Entries(ctx, account, "jane@example.com", &phone); err == nil {
		t.Errorf("entries with a key sealed under another keyring: %d, no error", len(e))
	}
	if e, err := wrong.EntriesOf(ctx, account, []string{"jane@example.com"}, nil); err == nil {
		t.Errorf("entries of emails with a key sealed under another keyring: %d, no error", len(e))
	}
	if e, err := wrong.EntriesOf(ctx, account, nil, []string{phone}); err == nil {
		t.Errorf("entries of phones with a key sealed under another keyring: %d, no error", len(e))
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	// a request its client abandoned is told apart by its error (logged as abandoned, not as a failure)
	if _, err := suppression.New(testkit.NewStore(t), keyring(t), time.Now).Entries(canceled, account, "jane@example.com", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("entries when the key cannot be read, the request abandoned: %v, want context.Canceled", err)
	}
	if _, err := suppression.Matching(canceled, db.New(st.Pool), account, [][]byte{{1}}); err == nil {
		t.Error("matching when the database cannot answer: no error")
	}
}
