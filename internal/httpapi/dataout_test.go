package httpapi_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/config"
	"github.com/contactd/contactd/internal/testkit"
)

func listPage(t *testing.T, a *testkit.API, key, query string) api.ContactList {
	t.Helper()
	r := a.Do("GET", "/public/v1/contacts?"+query, key, nil)
	if r.Status != 200 {
		t.Fatalf("list %s: %d %s", query, r.Status, r.Body)
	}
	var l api.ContactList
	r.JSON(t, &l)
	return l
}

// walk follows nextCursor from the first page to the last and returns the emails in order.
func walk(t *testing.T, a *testkit.API, key, query string) []string {
	t.Helper()
	var emails []string
	cursor := ""
	for pages := 0; ; pages++ {
		q := query
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		l := listPage(t, a, key, q)
		for _, c := range l.Contacts {
			emails = append(emails, c.Email)
		}
		if l.NextCursor == nil {
			return emails
		}
		cursor = *l.NextCursor
		if pages > 10000 {
			t.Fatal("the walk does not end")
		}
	}
}

func TestListContactsFiltersAndPages(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	for _, c := range []map[string]any{
		{"email": "jane.doe@example.com", "name": "Jane Doe", "tags": []string{"Lead", "open-house"}},
		{"email": "john@example.com", "name": "John Smith", "tags": []string{"lead"}},
		{"email": "ann@other.org", "name": "Ann Janeway", "tags": []string{"open-house"}, "assignedUserEmailId": "agent@example.com"},
		{"email": "bob@example.com", "name": "Bob", "tags": []string{"LEAD", "Open-House", "vip"}},
		{"email": "x_y%z@example.com"},
	} {
		createContact(t, a, key, c)
		time.Sleep(2 * time.Millisecond) // distinct creation times, so the order below is the order here
	}
	newestFirst := []string{"x_y%z@example.com", "bob@example.com", "ann@other.org", "john@example.com", "jane.doe@example.com"}
	if got := walk(t, a, key, "limit=2"); strings.Join(got, " ") != strings.Join(newestFirst, " ") {
		t.Errorf("walk in pages of 2: %v, want %v", got, newestFirst)
	}
	if l := listPage(t, a, key, "limit=5"); len(l.Contacts) != 5 || l.NextCursor == nil {
		t.Errorf("a full last page: %d contacts, next %v (a cursor is given whenever the page is full)", len(l.Contacts), l.NextCursor)
	}
	for query, want := range map[string]string{
		"tag=lead&tag=OPEN-HOUSE&limit=200": "bob@example.com jane.doe@example.com",
		"tag=vip":                           "bob@example.com",
		"q=jan":                             "ann@other.org jane.doe@example.com",
		"q=JOHN%40ex":                       "john@example.com",
		"q=jane+d":                          "jane.doe@example.com",
		"q=smi":                             "john@example.com",
		"q=x_y%25":                          "x_y%z@example.com",
		"q=x%25":                            "",
		"assignedUserEmailId=AGENT%40example.com":    "ann@other.org",
		"emailStatus=Pending&recordStatus=Marketing": strings.Join(newestFirst, " "),
		"emailStatus=Valid":                          "",
		"minLeadScore=1":                             "",
		"createdAfter=2099-01-01T00:00:00.000Z":      "",
	} {
		if got := strings.Join(walk(t, a, key, query), " "); got != want {
			t.Errorf("%s: %q, want %q", query, got, want)
		}
	}
	// a change moves a contact to the front of sort=updatedAt, not of the default order
	id := listPage(t, a, key, "q=john").Contacts[0].ContactId
	time.Sleep(2 * time.Millisecond)
	if r := a.Do("PATCH", "/public/v1/contact/"+id, key, map[string]any{"name": "John Smythe"}); r.Status != 200 {
		t.Fatalf("patch: %d %s", r.Status, r.Body)
	}
	if got := walk(t, a, key, "sort=updatedAt&limit=2"); got[0] != "john@example.com" || len(got) != 5 {
		t.Errorf("sort=updatedAt: %v", got)
	}
	if got := walk(t, a, key, "sort=createdAt"); strings.Join(got, " ") != strings.Join(newestFirst, " ") {
		t.Errorf("sort=createdAt after the change: %v", got)
	}
	// a form submission lifts the score above the filter
	activity(t, a, key, id, map[string]any{"type": "FormSubmission"})
	if got := walk(t, a, key, "minLeadScore=20"); strings.Join(got, " ") != "john@example.com" {
		t.Errorf("minLeadScore=20: %v", got)
	}

	next := *listPage(t, a, key, "limit=1").NextCursor
	for query, field := range map[string]string{
		"cursor=nonsense":                    "query.cursor",
		"cursor=" + next + "&sort=updatedAt": "query.cursor",
		"limit=0":                            "query.limit",
		"limit=201":                          "query.limit",
		"emailStatus=Maybe":                  "query.emailStatus",
		"sort=name":                          "query.sort",
		"createdAfter=yesterday":             "query.createdAfter",
		"minLeadScore=101":                   "query.minLeadScore",
		"tag=+":                              "query.tag",
		"q=+":                                "query.q",
		"createdAfter=2026-11-02T00:00:00.000Z&createdBefore=2026-11-01T00:00:00.000Z": "query.createdBefore",
	} {
		r := a.Do("GET", "/public/v1/contacts?"+query, key, nil)
		if e := r.Error(t); r.Status != 400 || e.Code != api.ErrorCodeInvalidRequest || e.Data == nil || e.Data.Errors == nil ||
			!strings.Contains(string(r.Body), `"field":"`+field+`"`) {
			t.Errorf("%s: %d %s, want 400 naming %s", query, r.Status, r.Body, field)
		}
	}
}

// A walk through an account while others create, change and delete contacts returns no
// contact twice, and every contact that existed unchanged for the whole walk.
func TestListWalkWithConcurrentWriters(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	const before = 120
	ids := make([]string, before)
	for i := range before {
		ids[i] = createContact(t, a, key, map[string]any{"email": fmt.Sprintf("c%03d@example.com", i)}).Contact.ContactId
	}
	changed := sync.Map{} // contacts changed during the walk (updatedAt walks may miss them)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := ids[(w*31+i*7)%before]
				changed.Store(id, true)
				a.Do("POST", "/public/v1/contact/"+id+"/tags", key, map[string]any{"tags": []string{fmt.Sprintf("w%d-%d", w, i)}})
				n := createContact(t, a, key, map[string]any{"email": fmt.Sprintf("new-%d-%d@example.com", w, i)}).Contact.ContactId
				if i%3 == 0 {
					a.Do("DELETE", "/public/v1/contact/"+n, key, nil)
				}
			}
		})
	}
	for _, sort := range []string{"createdAt", "updatedAt"} {
		seen := map[string]int{}
		for _, e := range walk(t, a, key, "limit=7&sort="+sort) {
			seen[e]++
		}
		for e, n := range seen {
			if n > 1 {
				t.Errorf("sort=%s: %s returned %d times", sort, e, n)
			}
		}
		for i, id := range ids {
			if _, moved := changed.Load(id); sort == "updatedAt" && moved {
				continue
			}
			if seen[fmt.Sprintf("c%03d@example.com", i)] != 1 {
				t.Errorf("sort=%s: c%03d, there all along, was skipped", sort, i)
			}
		}
	}
	close(stop)
	wg.Wait()
}

func TestExportContacts(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	const n = 2600 // more than a page of the export's reads
	var emails []string
	for i := range n {
		emails = append(emails, fmt.Sprintf("e%04d@example.com", i))
	}
	seed(t, a, "acme", emails)
	createContact(t, a, key, map[string]any{"email": "jane@example.com", "name": "Jane, \"JJ\" Doe",
		"tags": []string{"vip", "lead"}, "address": "123 N Main St Apt 4, Springfield, IL 62704"})

	r := a.Do("GET", "/public/v1/contacts/export", key, nil)
	lines := bytes.Split(bytes.TrimSuffix(r.Body, []byte("\n")), []byte("\n"))
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/x-ndjson" || len(lines) != n+1 {
		t.Fatalf("ndjson: %d %q, %d lines, want %d", r.Status, r.Header.Get("Content-Type"), len(lines), n+1)
	}
	var first api.Contact
	if err := json.Unmarshal(lines[0], &first); err != nil || first.Email != "jane@example.com" || len(first.Properties) != 1 {
		t.Errorf("first line (newest): %s", lines[0])
	}
	seen := map[string]bool{}
	var prev time.Time
	for i, line := range lines { // every contact once, newest first, across the export's pages
		var c api.Contact
		if err := json.Unmarshal(line, &c); err != nil || seen[c.Email] || (i > 0 && c.CreatedAt.After(prev)) {
			t.Fatalf("line %d: %s (%v; seen before: %v; after the line before it: %v)", i, line, err, seen[c.Email], c.CreatedAt.After(prev))
		}
		seen[c.Email], prev = true, c.CreatedAt.Time
	}
	if r := a.Do("GET", "/public/v1/contacts/export?tag=VIP", key, nil); strings.Count(string(r.Body), "\n") != 1 {
		t.Errorf("filtered export: %s", r.Body)
	}

	r = a.Do("GET", "/public/v1/contacts/export?q=jane", key, nil, "Accept", "text/csv")
	rows, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll()
	if err != nil || r.Header.Get("Content-Type") != "text/csv; charset=utf-8" || len(rows) != 2 {
		t.Fatalf("csv: %v %q %q", err, r.Header.Get("Content-Type"), r.Body)
	}
	row := map[string]string{}
	for i, col := range rows[0] {
		row[col] = rows[1][i]
	}
	if row["email"] != "jane@example.com" || row["name"] != `Jane, "JJ" Doe` || row["tags"] != "vip;lead" ||
		row["streetAddress"] != "123 N Main St" || row["aptOrUnitNumber"] != "4" || row["zip"] != "62704" ||
		row["county"] != "Sangamon County" || row["numOfFormSubmissions"] != "0" || row["createdAt"] != first.CreatedAt.String() {
		t.Errorf("csv row %v", row)
	}
	// a cell a spreadsheet would run as a formula is quoted (CSV injection); a phone number is not
	createContact(t, a, key, map[string]any{"email": "formula@example.com", "name": `=HYPERLINK("http://evil.example","open")`,
		"phone": "+1 (415) 555-0100", "tags": []string{"-x"}})
	r = a.Do("GET", "/public/v1/contacts/export?q=formula", key, nil, "Accept", "text/csv")
	if rows, err = csv.NewReader(bytes.NewReader(r.Body)).ReadAll(); err != nil || len(rows) != 2 {
		t.Fatalf("csv: %v %q", err, r.Body)
	}
	for i, col := range rows[0] {
		row[col] = rows[1][i]
	}
	if row["name"] != `'=HYPERLINK("http://evil.example","open")` || row["phone"] != "+1 (415) 555-0100" || row["tags"] != "'-x" {
		t.Errorf("formula cells: name %q phone %q tags %q", row["name"], row["phone"], row["tags"])
	}
	if r := a.Do("GET", "/public/v1/contacts/export?q=nobody", key, nil, "Accept", "text/csv"); r.Status != 200 || strings.Count(string(r.Body), "\n") != 1 {
		t.Errorf("an empty CSV export is its header: %d %q", r.Status, r.Body)
	}
	// an empty NDJSON export, uncompressed, writes no byte: its headers are sent at its end
	if r := a.Do("GET", "/public/v1/contacts/export?q=nobody", key, nil, "Accept-Encoding", "identity"); r.Status != 200 || len(r.Body) != 0 ||
		r.Header.Get("Content-Type") != "application/x-ndjson" || r.Header.Get("Vary") != "Accept, Accept-Encoding" {
		t.Errorf("an empty NDJSON export: %d %v %q", r.Status, r.Header, r.Body)
	}

	r = a.Do("GET", "/public/v1/contacts/export", key, nil, "Accept-Encoding", "gzip")
	zr, err := gzip.NewReader(bytes.NewReader(r.Body))
	if err != nil || r.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("gzip: %v %v", err, r.Header)
	}
	plain, _ := io.ReadAll(zr)
	if strings.Count(string(plain), "\n") != n+2 || len(r.Body) > len(plain)/3 { // and the formula contact
		t.Errorf("gzip: %d lines in %d bytes from %d", strings.Count(string(plain), "\n"), len(r.Body), len(plain))
	}
	for _, refused := range []string{"gzip;q=0", "br, gzip; q=0.0", "identity", "br"} {
		if r := a.Do("GET", "/public/v1/contacts/export", key, nil, "Accept-Encoding", refused); r.Header.Get("Content-Encoding") != "" ||
			strings.Count(string(r.Body), "\n") != n+2 {
			t.Errorf("Accept-Encoding %q: %s, %d lines", refused, r.Header.Get("Content-Encoding"), strings.Count(string(r.Body), "\n"))
		}
	}
	if r := a.Do("GET", "/public/v1/contacts/export?emailStatus=Sure", key, nil); r.Status != 400 {
		t.Errorf("a bad filter: %d %s", r.Status, r.Body)
	}
}

// An export whose client goes away stops reading the database.
func TestExportStopsWhenTheClientLeaves(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	seedMany(t, a, "acme", 30000) // megabytes of export: more than the sockets buffer
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", a.URL+"/public/v1/contacts/export", nil)
	req.Header.Set("x-api-key", key)
	resp, err := http.DefaultClient.Do(req) // raw: the test reads the stream slowly (TestExportContacts validates exports)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	exporting := func() int { return exportTransactions(t, a) }
	if exporting() == 0 { // the client reads slowly: the export waits for it, its snapshot held
		t.Fatal("no export running while the client is still reading: nothing would be checked")
	}
	cancel()
	resp.Body.Close()
	testkit.Eventually(t, "the export's transaction ending after the client left", func() bool { return exporting() == 0 })
}

// A client that stops reading its export holds one of its account's export slots (a
// database connection) only until its stall bound: meanwhile the same account's next export is
// refused at once (429, Retry-After), another account's runs, and afterwards the slot is free.
func TestStalledExportsHoldOnlyTheirShare(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t, func(c *config.Config) {
		c.Exports, c.ExportsPerAccount, c.WriteTimeout, c.RequestTimeout = 2, 1, time.Second, 0
	})
	acme, key := a.Account("acme")
	_, other := a.Account("globex")
	seedMany(t, a, "acme", 30000) // megabytes of export: more than the sockets buffer
	for i := range 10 {
		createContact(t, a, other, map[string]any{"email": fmt.Sprintf("g%d@example.com", i)})
	}
	req, _ := http.NewRequest("GET", a.URL+"/public/v1/contacts/export", nil)
	req.Header.Set("x-api-key", key)
	req.Header.Set("Accept-Encoding", "identity") // 20 MB: far more than the sockets buffer
	stalled, err := http.DefaultClient.Do(req)    // raw: read once, then never again
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Body.Close()
	if _, err := bufio.NewReader(stalled.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	exporting := func() int { return exportTransactions(t, a) }
	if exporting() != 1 {
		t.Fatal("the stalled export holds no transaction: nothing would be checked")
	}
	if r := a.Do("GET", "/public/v1/contacts/export", key, nil); r.Status != 429 || r.Error(t).Code != "TooManyRequests" || r.Header.Get("Retry-After") == "" {
		t.Errorf("the account's second export: %d %v %s", r.Status, r.Header, r.Body)
	}
	if r := a.Do("GET", "/public/v1/contacts/export", other, nil); r.Status != 200 || bytes.Count(r.Body, []byte("\n")) != 10 {
		t.Errorf("another account's export: %d, %d lines", r.Status, bytes.Count(r.Body, []byte("\n")))
	}
	testkit.Eventually(t, "the stalled export giving back its connection", func() bool { return exporting() == 0 })
	// its slot goes back after its transaction ends: a busy machine shows the moment between
	testkit.Eventually(t, "the stalled export giving back its slot", func() bool { return a.Svc.Search.ExportsRunning(acme) == 0 })
	if r := a.Do("GET", "/public/v1/contacts/export?limit=1&tag=none", key, nil); r.Status != 200 {
		t.Errorf("the account's export once the stalled one ended: %d %s", r.Status, r.Body)
	}
}

// A filtered export walks the account's contacts a batch at a time (10,000) and goes on
// until the walk ends: with matches past the first batch it has every one of them, once.
func TestFilteredExportWalksEveryBatch(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	const n = 25000 // two and a half walks
	var emails []string
	for i := range n {
		emails = append(emails, fmt.Sprintf("e%05d@example.com", i))
	}
	seed(t, a, "acme", emails)
	if _, err := a.Store.Pool.Exec(context.Background(),
		`UPDATE contacts SET tags = ARRAY['odd'] WHERE substr(email, 2, 5)::int % 2 = 1`); err != nil {
		t.Fatal(err)
	}
	r := a.Do("GET", "/public/v1/contacts/export?tag=odd", key, nil)
	if r.Status != 200 {
		t.Fatalf("export: %d %s", r.Status, r.Body)
	}
	seen := map[string]bool{}
	for _, line := range bytes.Split(bytes.TrimSuffix(r.Body, []byte("\n")), []byte("\n")) {
		var c api.Contact
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		var i int
		if _, err := fmt.Sscanf(c.Email, "e%05d@example.com", &i); err != nil || i%2 != 1 || seen[c.Email] {
			t.Errorf("exported %s: not a match, or twice", c.Email)
		}
		seen[c.Email] = true
	}
	if len(seen) != n/2 {
		t.Errorf("%d contacts exported, want all %d matches", len(seen), n/2)
	}
}

// An export that fails once it has started never looks complete: the connection breaks, so
// the client reads an error, not a clean end of a shorter file. (The export's database session
// is ended behind its back while the client, reading slowly, holds it mid-stream.)
func TestExportFailingMidwayIsNotComplete(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	seedMany(t, a, "acme", 30000) // megabytes of export: more than the sockets buffer
	for _, format := range []string{"application/x-ndjson", "text/csv"} {
		req, _ := http.NewRequest("GET", a.URL+"/public/v1/contacts/export", nil)
		req.Header.Set("x-api-key", key)
		req.Header.Set("Accept", format)
		resp, err := http.DefaultClient.Do(req) // raw: the test reads the stream slowly (TestExportContacts validates exports)
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(resp.Body)
		if _, err := r.ReadString('\n'); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %d %v", format, resp.StatusCode, err)
		}
		var killed int
		// the export's session (client backends only: a parallel worker of its query, when the
		// planner chose one, shows with a transaction too, and ends with it)
		if err := a.Store.Pool.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND xact_start IS NOT NULL AND pid <> pg_backend_pid()
			  AND backend_type = 'client backend'`).Scan(&killed); err != nil || killed != 1 {
			t.Fatalf("%s: ending the export's session: %d %v", format, killed, err)
		}
		rest, err := io.ReadAll(r)
		resp.Body.Close()
		if err == nil {
			t.Errorf("%s: the failed export ended like a complete one (%d more bytes, then a clean end)", format, len(rest))
		}
	}
}

// The same, to a client that reads as fast as the stream comes, so that no stall of its own
// holds the server's writes back: the end must still be an error. A contact in the middle of
// the export holds values the export cannot read (as a corrupt row would), which fails the
// stream after more than a megabyte has gone out.
func TestExportFailingMidwayIsNotCompleteToAnEagerClient(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	defineField(t, a, key, map[string]any{"key": "plan", "label": "Plan", "type": "text"})
	seedMany(t, a, "acme", 30000)
	if _, err := a.Store.Pool.Exec(context.Background(), `UPDATE contacts SET custom_fields = '[1]' WHERE email = 'e15000@example.com'`); err != nil {
		t.Fatal(err)
	}
	a.ExpectErrors("export") // the failure the test makes is logged
	req, _ := http.NewRequest("GET", a.URL+"/public/v1/contacts/export", nil)
	req.Header.Set("x-api-key", key)
	req.Header.Set("Accept", "text/csv")
	resp, err := http.DefaultClient.Do(req) // raw: a broken stream is the point
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || len(got) < 1<<20 {
		t.Fatalf("%d after %d bytes: want the stream broken after more than a megabyte", resp.StatusCode, len(got))
	}
	if err == nil {
		t.Errorf("the failed export ended like a complete one: %d bytes, then a clean end", len(got))
	}
}

// seedMany seeds n contacts e00000@example.com... into the account.
func seedMany(t *testing.T, a *testkit.API, account string, n int) {
	t.Helper()
	emails := make([]string, n)
	for i := range emails {
		emails[i] = fmt.Sprintf("e%05d@example.com", i)
	}
	seed(t, a, account, emails)
}

// exportTransactions counts the open transactions of the test's database but this query's:
// an export's snapshot, open or running a statement.
func exportTransactions(t *testing.T, a *testkit.API) int {
	t.Helper()
	return a.Count(t, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND xact_start IS NOT NULL AND pid <> pg_backend_pid()
		  AND backend_type = 'client backend'`)
}

// seed inserts contacts of the account straight into the table, oldest first, a
// millisecond apart (thousands of API creates would only slow the test down).
func seed(t *testing.T, a *testkit.API, account string, emails []string) {
	t.Helper()
	id, err := a.Svc.Auth.AccountByName(context.Background(), account)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Store.Pool.Exec(context.Background(), `INSERT INTO contacts (account_id, contact_id, email, email_key,
			consent_token, created_at, updated_at, consent_api_key_name, consent_api_key_prefix, consent_source_ip,
			consent_user_agent, consent_fields)
		SELECT $1, gen_random_uuid(), e, e, 'cs_seed' || n, now() - interval '1 hour' + n * interval '1 millisecond',
			now() - interval '1 hour' + n * interval '1 millisecond', 'seed', 'ck_seed', '127.0.0.1', 'seed', '{}'
		FROM unnest($2::text[]) WITH ORDINALITY AS s(e, n)`, id, emails); err != nil {
		t.Fatal(err)
	}
}

// Both ways a filtered page is found give the same pages: walking the order's index when
// matches are dense, asking the filter's index when they are sparse.
func TestListDenseAndSparseMatches(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	var emails []string
	for i := range 3000 {
		emails = append(emails, fmt.Sprintf("m%04d@example.com", i))
	}
	seed(t, a, "acme", emails)
	// every other contact is "dense"; one in 500 is "rare" as well
	if _, err := a.Store.Pool.Exec(context.Background(), `UPDATE contacts SET tags = CASE
		WHEN substr(email, 2, 4)::int % 500 = 7 THEN ARRAY['Dense', 'rare']
		WHEN substr(email, 2, 4)::int % 2 = 1 THEN ARRAY['dense'] ELSE '{}' END`); err != nil {
		t.Fatal(err)
	}
	want := func(keep func(i int) bool) string {
		var out []string
		for i := 2999; i >= 0; i-- {
			if keep(i) {
				out = append(out, emails[i])
			}
		}
		return strings.Join(out, " ")
	}
	if got := strings.Join(walk(t, a, key, "tag=rare&limit=2"), " "); got != want(func(i int) bool { return i%500 == 7 }) {
		t.Errorf("sparse: %s", got)
	}
	if got := strings.Join(walk(t, a, key, "tag=dense&limit=50"), " "); got != want(func(i int) bool { return i%2 == 1 }) {
		t.Errorf("dense: %d contacts", len(strings.Fields(got)))
	}
	if got := strings.Join(walk(t, a, key, "tag=dense&tag=rare&limit=3&sort=updatedAt"), " "); len(strings.Fields(got)) != 6 {
		t.Errorf("sparse by updatedAt: %s", got)
	}
	// tags alone or q alone at the default page size take statements of their own (planned
	// once); other page sizes the general one: the same contacts either way
	for _, tc := range []struct {
		query string
		keep  func(i int) bool
	}{
		{"tag=DENSE", func(i int) bool { return i%2 == 1 }},
		{"tag=dense&limit=37", func(i int) bool { return i%2 == 1 }},
		{"q=M00", func(i int) bool { return i < 100 }},
		{"q=m00&limit=7", func(i int) bool { return i < 100 }},
		{"q=m00&tag=dense", func(i int) bool { return i < 100 && i%2 == 1 }},
	} {
		if got := strings.Join(walk(t, a, key, tc.query), " "); got != want(tc.keep) {
			t.Errorf("%s: %d contacts: %.80s", tc.query, len(strings.Fields(got)), got)
		}
	}
}

// The tag filter is case-insensitive for any tag a contact can have: quotes, commas,
// backslashes, braces, accents, the word NULL.
func TestTagFilterAnyTag(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	tags := []string{`A,B`, `Qu"ote`, `Back\Slash`, `{Brace}`, `ÉCOLE`, `NULL`, `two words`}
	createContact(t, a, key, map[string]any{"email": "odd@example.com", "tags": tags})
	createContact(t, a, key, map[string]any{"email": "plain@example.com", "tags": []string{"plain"}})
	for _, tag := range tags {
		for _, spelled := range []string{tag, strings.ToLower(tag), strings.ToUpper(tag)} {
			if got := walk(t, a, key, "tag="+url.QueryEscape(spelled)); len(got) != 1 || got[0] != "odd@example.com" {
				t.Errorf("tag=%s: %v", spelled, got)
			}
		}
	}
	if got := walk(t, a, key, "tag=null&tag=plain"); len(got) != 0 {
		t.Errorf("two tags no contact has together: %v", got)
	}
}
