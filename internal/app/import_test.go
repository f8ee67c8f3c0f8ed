package app_test

import (
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/internal/segment"
	"github.com/contactd/contactd/internal/testkit"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func queryInt(t *testing.T, conn *pgx.Conn, sql string) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestImportCSV(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testkit.NewDatabase(t)
	if code, _, stderr := contactd(t, ctx, dbURL, "accounts", "create", "--name", "acme"); code != 0 {
		t.Fatalf("accounts create: %d %s", code, stderr)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	// another CRM's export: its header names, a byte-order mark, a quoted field with a comma
	file := writeFile(t, "export.csv", "\ufeffEmail,Full Name,Phone Number,Tags,Street Address,Contact Owner\n"+
		"ann@example.com,Ann Lee,555-010-0001,lead; vip,\"123 N Main St Apt 4, Springfield, IL 62704\",agent@example.com\n"+
		"bob@example.com,\"Bob, Jr.\",,newsletter,,\n"+
		"not-an-email,Nobody,,,,\n"+
		"ANN@example.com,Ann Lee,,customer,,\n"+
		",No Email,,,,\n")
	code, stdout, stderr := contactd(t, ctx, dbURL, "import", "--account", "acme", file)
	if code != 3 || !strings.Contains(stdout, "5 rows") || !strings.Contains(stdout, "2 created, 1 updated, 0 unchanged, 2 rejected") {
		t.Fatalf("import: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	var name, phone, owner string
	var tags []string
	if err := conn.QueryRow(ctx, `SELECT name, phone, assigned_user_email_id, tags FROM contacts WHERE email_key = 'ann@example.com'`).
		Scan(&name, &phone, &owner, &tags); err != nil || name != "Ann Lee" || phone != "555-010-0001" || owner != "agent@example.com" ||
		strings.Join(tags, ",") != "lead,vip,customer" {
		t.Errorf("ann: %q %q %q %v %v", name, phone, owner, tags, err)
	}
	if n := queryInt(t, conn, `SELECT count(*) FROM properties`); n != 1 {
		t.Errorf("%d properties", n)
	}
	if n := queryInt(t, conn, `SELECT count(*) FROM contacts WHERE name = 'Bob, Jr.'`); n != 1 {
		t.Errorf("the quoted name: %d", n)
	}
	rejected := readCSV(t, file+".rejected.csv")
	if len(rejected) != 3 || strings.Join(rejected[0][:3], ",") != "line,error,Email" ||
		rejected[1][0] != "4" || !strings.Contains(rejected[1][1], "InvalidRequest") || !strings.Contains(rejected[1][1], "email") ||
		rejected[1][2] != "not-an-email" || rejected[2][0] != "6" {
		t.Errorf("rejected rows: %q", rejected)
	}
	events := queryInt(t, conn, `SELECT count(*) FROM webhook_events`)
	// the rejected rows are personal data: the importing user's alone, also when an earlier
	// file was left readable by everyone
	if fi, err := os.Stat(file + ".rejected.csv"); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("rejected file: %v %v, want -rw-------", fi.Mode(), err)
	}
	if err := os.Chmod(file+".rejected.csv", 0o644); err != nil {
		t.Fatal(err)
	}

	// a second run changes nothing: the same rows are unchanged, the same ones rejected
	code, stdout, _ = contactd(t, ctx, dbURL, "import", "--account", "acme", file)
	if code != 3 || !strings.Contains(stdout, "0 created, 0 updated, 3 unchanged, 2 rejected") {
		t.Errorf("again: exit %d %s", code, stdout)
	}
	if n := queryInt(t, conn, `SELECT count(*) FROM contacts`); n != 2 || queryInt(t, conn, `SELECT count(*) FROM webhook_events`) != events {
		t.Errorf("again: %d contacts, events %d then %d", n, events, queryInt(t, conn, `SELECT count(*) FROM webhook_events`))
	}
	if fi, err := os.Stat(file + ".rejected.csv"); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("rejected file rewritten: %v %v, want -rw-------", fi.Mode(), err)
	}

	// --map for headers no default knows; --dry-run writes nothing; a clean run exits 0 and
	// leaves no rejected file behind
	odd := writeFile(t, "odd.csv", "E,Who,Labels\ncat@example.com,Cat,x|y\n")
	code, stdout, _ = contactd(t, ctx, dbURL, "import", "--account", "acme", "--dry-run", "--map", `email=E,name="Who"`, odd)
	if code != 0 || !strings.Contains(stdout, "dry run") || !strings.Contains(stdout, "1 created") ||
		queryInt(t, conn, `SELECT count(*) FROM contacts`) != 2 {
		t.Errorf("dry run: exit %d %s", code, stdout)
	}
	code, stdout, _ = contactd(t, ctx, dbURL, "import", "--account", "acme", "--map", `email=E,name="Who"`, odd)
	if code != 0 || !strings.Contains(stdout, "1 created") || queryInt(t, conn, `SELECT count(*) FROM contacts WHERE name = 'Cat' AND tags = '{x,y}'`) != 1 {
		t.Errorf("mapped: exit %d %s", code, stdout)
	}
	if _, err := os.Stat(odd + ".rejected.csv"); !os.IsNotExist(err) {
		t.Errorf("a clean run left %s: %v", odd+".rejected.csv", err)
	}

	// no email column: a clear error, nothing imported
	code, _, stderr = contactd(t, ctx, dbURL, "import", "--account", "acme", writeFile(t, "x.csv", "Name\nZed\n"))
	if code != 1 || !strings.Contains(stderr, "no email column") {
		t.Errorf("no email column: exit %d %s", code, stderr)
	}
}

func TestImportNDJSON(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testkit.NewDatabase(t)
	if code, _, stderr := contactd(t, ctx, dbURL, "accounts", "create", "--name", "acme"); code != 0 {
		t.Fatalf("accounts create: %d %s", code, stderr)
	}
	file := writeFile(t, "contacts.ndjson", `{"email":"a@example.com","tags":["x"],"crmFields":{"stage":"New"}}`+"\n\n"+
		`{"email":"b@example.com","color":"red"}`+"\n"+`not json`+"\n")
	code, stdout, stderr := contactd(t, ctx, dbURL, "import", "--account", "acme", file)
	if code != 3 || !strings.Contains(stdout, "3 rows") || !strings.Contains(stdout, "1 created") || !strings.Contains(stdout, "2 rejected") {
		t.Fatalf("import: exit %d\n%s\n%s", code, stdout, stderr)
	}
	rejected := readCSV(t, file+".rejected.csv")
	if len(rejected) != 3 || rejected[1][0] != "3" || !strings.Contains(rejected[1][1], "color") || rejected[2][0] != "4" {
		t.Errorf("rejected: %q", rejected)
	}
}

// An import's batch that moves its contacts into or out of segments more often than one
// transaction may is written a page at a time (contact.BatchPage): every row lands, with every
// membership and its event.
func TestImportOfABatchThatMovesManyMemberships(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	const segments, rows = 100, 150 // 15,000 entries in one batch of the import
	for i := range segments {
		r := a.Do("POST", "/public/v1/segments", key, map[string]any{"name": "vip " + strconv.Itoa(i), "kind": "dynamic",
			"filter": map[string]any{"groups": []any{map[string]any{"conditions": []any{
				map[string]any{"attribute": "tags", "operator": "contains", "value": "vip"}}}}}})
		if r.Status != 200 {
			t.Fatalf("segment: %d %s", r.Status, r.Body)
		}
	}
	a.Backfill(t)
	if rows*segments <= segment.MaxChangesPerWrite {
		t.Fatal("the import's batch moves no more memberships than one transaction may")
	}
	var lines strings.Builder
	for i := range rows {
		lines.WriteString(`{"email":"p` + strconv.Itoa(i) + `@example.com","tags":["vip"]}` + "\n")
	}
	file := writeFile(t, "contacts.ndjson", lines.String())
	code, stdout, stderr := contactd(t, ctx, a.DatabaseURL, "import", "--account", "acme", "--writers", "1", file)
	if code != 0 || !strings.Contains(stdout, strconv.Itoa(rows)+" created") {
		t.Fatalf("import: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for what, q := range map[string]string{"memberships": `SELECT count(*) FROM segment_members`,
		"events": `SELECT count(*) FROM webhook_events WHERE event_type = 'ContactEnteredSegment'`} {
		if n := a.Count(t, q); n != rows*segments {
			t.Errorf("%s: %d, want %d", what, n, rows*segments)
		}
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// the writers reject in parallel: each row carries its line, the order is the writers'
	slices.SortFunc(rows[1:], func(a, b []string) int {
		x, _ := strconv.Atoi(a[0])
		y, _ := strconv.Atoi(b[0])
		return x - y
	})
	return rows
}

// An import keeps its heap under 128 MiB, the collector's default goal having taken a large
// one past 200 MB of RSS, unless GOMEMLIMIT sets the limit (which the runtime read at start).
// Not parallel: the limit and the environment are the process's.
func TestImportLimitsItsHeap(t *testing.T) {
	ctx := context.Background()
	dbURL := testkit.NewDatabase(t)
	if code, _, stderr := contactd(t, ctx, dbURL, "accounts", "create", "--name", "acme"); code != 0 {
		t.Fatalf("accounts create: %d %s", code, stderr)
	}
	file := writeFile(t, "one.csv", "Email\nann@example.com\n")
	unlimited := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(unlimited) })
	for _, env := range []struct {
		value string
		want  int64
	}{{"", 128 << 20}, {"1GiB", math.MaxInt64}} {
		t.Setenv("GOMEMLIMIT", env.value)
		debug.SetMemoryLimit(math.MaxInt64)
		if code, stdout, stderr := contactd(t, ctx, dbURL, "import", "--account", "acme", file); code != 0 {
			t.Fatalf("import: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
		}
		if got := debug.SetMemoryLimit(-1); got != env.want {
			t.Errorf("GOMEMLIMIT=%q: the import's limit is %d, want %d", env.value, got, env.want)
		}
	}
}
