package suppression_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

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
