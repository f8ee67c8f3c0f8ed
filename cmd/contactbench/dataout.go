package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The data-out run (-dataout): one account of -contacts contacts (1,000,000 by default) and
// -events events; list pages (first, two tags, a deep cursor, a q prefix) at -c clients,
// then an export of the whole account, then the whole events feed, read as a poller would.

var firstNames = []string{"Maria", "James", "Mary", "John", "Jennifer", "Robert", "Linda", "Michael", "Elizabeth",
	"William", "Barbara", "David", "Susan", "Richard", "Jessica", "Joseph", "Sarah", "Thomas", "Karen", "Charles",
	"Nancy", "Christopher", "Lisa", "Daniel", "Betty", "Matthew", "Margaret", "Anthony", "Sandra", "Mark",
	"Ashley", "Donald", "Kimberly", "Steven", "Emily", "Paul", "Donna", "Andrew", "Michelle", "Joshua"}

var lastNames = []string{"Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez",
	"Martinez", "Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor", "Moore", "Jackson", "Martin"}

// dataOutSeed writes n contacts of the account (names from the lists above, three tags of 50
// and a segment, a phone and an address each, creation a millisecond apart) and the events,
// with COPY. Likely duplicates are seeded at known rates (dupPhone, dupEmail, dupNameAddress).
func dataOutSeed(ctx context.Context, pool *pgxpool.Pool, account uuid.UUID, n, events int) error {
	start := time.Now().UTC().Add(-time.Duration(n) * time.Millisecond).Truncate(time.Millisecond)
	ids := make([]uuid.UUID, n+1)
	rows := pgx.CopyFromFunc(func() func() ([]any, error) {
		i := 0
		return func() ([]any, error) {
			if i == n {
				return nil, nil
			}
			i++
			ids[i] = uuid.Must(uuid.NewV7())
			email := seedEmail(i)
			at := start.Add(time.Duration(i) * time.Millisecond)
			tags := []string{fmt.Sprintf("t%d", i%50), fmt.Sprintf("t%d", (i*7+3)%50), fmt.Sprintf("segment-%d", i%5)}
			return []any{account, ids[i], email, strings.ToLower(email), seedName(i), seedPhone(i),
				"Valid", tags, fmt.Sprintf("cs_do%026d", i), "seed", "ck_seed0000", "127.0.0.1", "contactbench", []byte("{}"), at, at, int32(i % 100),
				benchFieldValues(i)}, nil
		}
	}())
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"contacts"}, []string{"account_id", "contact_id", "email", "email_key",
		"name", "phone", "email_status", "tags", "consent_token", "consent_api_key_name", "consent_api_key_prefix",
		"consent_source_ip", "consent_user_agent", "consent_fields", "created_at", "updated_at", "lead_score", "custom_fields"}, rows); err != nil {
		return fmt.Errorf("seed contacts: %w", err)
	}
	props := pgx.CopyFromFunc(func() func() ([]any, error) {
		i := 0
		return func() ([]any, error) {
			if i == n {
				return nil, nil
			}
			i++
			street := seedStreet(i)
			return []any{account, uuid.Must(uuid.NewV7()), ids[i], street + ", Springfield, IL 62701", "", street, "Springfield",
				"Sangamon", "IL", "62701", strings.ToLower(street) + "||springfield|il|62701", start}, nil
		}
	}())
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"properties"}, []string{"account_id", "property_id", "contact_id",
		"raw_address", "apt_or_unit_number", "street_address", "city", "county", "state", "zip", "normalized", "created_at"}, props); err != nil {
		return fmt.Errorf("seed properties: %w", err)
	}
	payload := `{"eventId":"%s","eventType":"TagsAdded","eventDate":"2026-11-21T09:30:00.123Z","data":{"contactInfo":{"contactId":"%s","propertyId":"","emailId":"jane.doe@example.com","assignedUserEmailId":""},"tagsAddedInfo":{"tagsAdded":["vip","lead"]}}}`
	for done := 0; done < events; done += 50_000 { // one transaction per 50,000: xids as real writers leave them, roughly
		batch := min(50_000, events-done)
		evs := pgx.CopyFromFunc(func() func() ([]any, error) {
			i := 0
			return func() ([]any, error) {
				if i == batch {
					return nil, nil
				}
				i++
				id, contact := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
				return []any{account, id, "TagsAdded", contact, []byte(fmt.Sprintf(payload, id, contact)), start}, nil
			}
		}())
		if _, err := pool.CopyFrom(ctx, pgx.Identifier{"webhook_events"}, []string{"account_id", "event_id", "event_type",
			"contact_id", "payload", "occurred_at"}, evs); err != nil {
			return fmt.Errorf("seed events: %w", err)
		}
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE contacts, properties, webhook_events"); err != nil {
		return err
	}
	return prewarm(ctx, pool)
}

// The seeded likely duplicates: one contact in dupPhone has the phone of the one before it,
// one in dupEmail the Gmail address of the one before it with a +tag and without its dots,
// and one in dupNameAddress the name and address of the one before it; as many again share
// an address with the one before them under another name (no duplicate).
const dupPhone, dupEmail, dupNameAddress = 100, 50, 100

func seedName(i int) string {
	if i%dupNameAddress == 50 {
		i--
	}
	return firstNames[i%len(firstNames)] + " " + lastNames[(i/7)%len(lastNames)]
}

func seedPhone(i int) string {
	if i%dupPhone == 0 {
		i--
	}
	return fmt.Sprintf("555-%03d-%04d", (i/10000)%1000, i%10000)
}

func seedEmail(i int) string {
	first, last := strings.ToLower(firstNames[i%len(firstNames)]), strings.ToLower(lastNames[i%len(lastNames)])
	switch i % dupEmail {
	case 0:
		return fmt.Sprintf("%s.%s%d@gmail.com", first, last, i)
	case 1:
		first, last = strings.ToLower(firstNames[(i-1)%len(firstNames)]), strings.ToLower(lastNames[(i-1)%len(lastNames)])
		return fmt.Sprintf("%s%s%d+promo@gmail.com", first, last, i-1)
	}
	return fmt.Sprintf("%s.%s%d@example.com", first, last, i)
}

func seedStreet(i int) string {
	if j := i % dupNameAddress; j == 50 || j == 60 {
		i--
	}
	return fmt.Sprintf("%d Main St", i)
}

// deepCursors are list cursors past the 900,000th newest contact (past 90 % of a smaller seed).
func deepCursors(ctx context.Context, pool *pgxpool.Pool, account uuid.UUID, n int) ([]string, error) {
	rows, err := pool.Query(ctx, `SELECT created_at, contact_id FROM contacts WHERE account_id = $1
		ORDER BY created_at DESC, contact_id DESC OFFSET $2 LIMIT 100`, account, n*9/10)
	if err != nil {
		return nil, err
	}
	var out []string
	var at time.Time
	var id uuid.UUID
	_, err = pgx.ForEachRow(rows, []any{&at, &id}, func() error {
		b, _ := json.Marshal(map[string]any{"s": "createdAt", "t": at, "id": id})
		out = append(out, base64.RawURLEncoding.EncodeToString(b))
		return nil
	})
	return out, err
}

type dataOutResult struct {
	Lists        []result      `json:"lists"`
	Exported     int           `json:"exported"`
	ExportTime   time.Duration `json:"exportTime"`
	ExportRSS    int64         `json:"exportPeakRssBytes"`
	FeedEvents   int           `json:"feedEvents"`
	FeedTime     time.Duration `json:"feedTime"`
	FeedRequests int           `json:"feedRequests"`
	// every duplicate group of the account, walked in pages of 100
	DuplicateGroups int           `json:"duplicateGroups"`
	DuplicatePages  int           `json:"duplicatePages"`
	DuplicatesTime  time.Duration `json:"duplicatesTime"`
}

const duplicatesWorkload = "duplicates, each rule's first page"

// walkDuplicates reads every duplicate group of the account, as a client would.
func walkDuplicates(ctx context.Context, dr *driver, base string) (groups, pages int, err error) {
	cursor := ""
	for {
		var page struct {
			Groups     []json.RawMessage `json:"groups"`
			NextCursor string            `json:"nextCursor"`
		}
		u := base + "/contacts/duplicates?limit=100"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		if err := getJSON(ctx, dr, u, &page); err != nil {
			return groups, pages, err
		}
		pages++
		groups += len(page.Groups)
		if cursor = page.NextCursor; cursor == "" {
			return groups, pages, nil
		}
	}
}

func runDataOut(ctx context.Context, o options, out io.Writer) error {
	var settings []string
	if o.pgStats {
		settings = pgStatsSettings
	}
	b, err := openBenchDB(ctx, o.contactd, settings)
	if err != nil {
		return err
	}
	defer b.close()
	st, dbURL, postmaster, account, apiKey := b.st, b.url, b.postmaster, b.account, b.apiKey
	logf("seeding %d contacts and %d events", o.contacts, o.events)
	t0 := time.Now()
	if err := dataOutSeed(ctx, st.Pool, account, o.contacts, o.events); err != nil {
		return err
	}
	logf("seeded in %v", time.Since(t0).Round(time.Second))
	if o.hold {
		logf("holding the seeded database for inspection until interrupted: psql %q (account %s)", dbURL, account)
		<-ctx.Done()
		return nil
	}
	deep, err := deepCursors(ctx, st.Pool, account, o.contacts)
	if err != nil {
		return err
	}
	pprofAddr, err := profileAddr(o)
	if err != nil {
		return err
	}
	if o.pgStats {
		if err := resetPGStats(ctx, st); err != nil {
			return err
		}
	}
	cd, addr, err := startContactd(ctx, o.contactd, append(serveArgs(dbURL, false), "--pprof-addr", pprofAddr))
	if err != nil {
		return err
	}
	defer cd.stop()
	base := "http://" + addr + "/public/v1"
	prefixes := []string{"mar", "jen", "rob", "eli", "wil", "dav", "jes", "tho", "kar", "mic", "sar", "joh"}
	get := func(path string) request { return request{method: "GET", url: base + path, want: 200} }
	lists := []workload{
		{name: "first page", server: "contactd", next: func(*worker) request { return get("/contacts") }},
		{name: "two tags", server: "contactd", next: func(w *worker) request {
			a := w.rng.IntN(50)
			return get(fmt.Sprintf("/contacts?tag=t%d&tag=t%d", a, (a*7+3)%50))
		}},
		{name: "deep page (past 90 %)", server: "contactd", next: func(w *worker) request {
			return get("/contacts?cursor=" + url.QueryEscape(deep[w.rng.IntN(len(deep))]))
		}},
		{name: "q prefix", server: "contactd", next: func(w *worker) request {
			return get("/contacts?q=" + prefixes[w.rng.IntN(len(prefixes))])
		}},
		// every seeded contact holds benchFields' 20 values (defined below, seeded with COPY)
		{name: "fields, a range most match", server: "contactd", next: func(w *worker) request {
			return get(fmt.Sprintf("/contacts?field=seats:gte:%d", w.rng.IntN(10)))
		}},
		{name: "fields, one contact's value", server: "contactd", next: func(w *worker) request {
			return get(fmt.Sprintf("/contacts?field=referrer:eq:partner-%d", 1+w.rng.IntN(o.contacts)))
		}},
		{name: duplicatesWorkload, server: "contactd", next: func(w *worker) request {
			return get("/contacts/duplicates?limit=25&by=" + []string{"phone", "email", "nameAndAddress"}[w.rng.IntN(3)])
		}},
	}
	dr := newDriver(o.concurrency, apiKey)
	if err := defineBenchFields(ctx, dr, "http://"+addr); err != nil {
		return err
	}
	var res dataOutResult
	for _, wl := range lists {
		if err := settle(ctx, st); err != nil {
			return err
		}
		logf("%s: %v at c=%d", wl.name, o.duration, o.concurrency)
		dr.drive(ctx, wl, o.warmup)
		var profDone chan error
		if pprofAddr != "" {
			profDone = make(chan error, 1)
			go func() {
				profDone <- fetchProfile(pprofAddr, o.duration, filepath.Join(o.profileDir, strings.ReplaceAll(wl.name, " ", "-")+".pprof"))
			}()
		}
		var m measurement
		if err := dr.slice(ctx, wl, cd.proc, postmaster, o.duration, &m); err != nil {
			return err
		}
		if profDone != nil {
			if err := <-profDone; err != nil {
				return err
			}
		}
		res.Lists = append(res.Lists, m.result(wl))
	}
	logf("export of the whole account")
	if err := cd.proc.resetPeakRSS(); err != nil {
		return err
	}
	t0 = time.Now()
	if res.Exported, err = countLines(ctx, dr, base+"/contacts/export"); err != nil {
		return err
	}
	res.ExportTime = time.Since(t0)
	if res.ExportRSS, err = cd.proc.peakRSSBytes(); err != nil {
		return err
	}
	logf("duplicates, every group in pages of 100")
	t0 = time.Now()
	res.DuplicateGroups, res.DuplicatePages, err = walkDuplicates(ctx, dr, base)
	if err != nil {
		return err
	}
	res.DuplicatesTime = time.Since(t0)
	logf("events feed, pages of 1000")
	t0 = time.Now()
	cursor := ""
	for {
		var page struct {
			Events     []json.RawMessage `json:"events"`
			NextCursor string            `json:"nextCursor"`
			HasMore    bool              `json:"hasMore"`
		}
		u := base + "/events?limit=1000"
		if cursor != "" {
			u += "&after=" + url.QueryEscape(cursor)
		}
		if err := getJSON(ctx, dr, u, &page); err != nil {
			return err
		}
		res.FeedRequests++
		res.FeedEvents += len(page.Events)
		cursor = page.NextCursor
		if !page.HasMore {
			break
		}
	}
	res.FeedTime = time.Since(t0)
	if o.pgStats {
		if err := printPGStats(ctx, out, st); err != nil {
			return err
		}
	}
	printDataOut(out, o, res)
	return checkDataOut(o, res)
}

func countLines(ctx context.Context, dr *driver, u string) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	req.Header.Set("x-api-key", dr.apiKey)
	resp, err := dr.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("export: %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
	}
	return n, sc.Err()
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

func getJSON(ctx context.Context, dr *driver, u string, v any) error {
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	req.Header.Set("x-api-key", dr.apiKey)
	resp, err := dr.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: %d", u, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func printDataOut(w io.Writer, o options, r dataOutResult) {
	fmt.Fprintf(w, "contactbench dataout %s — %s — %d contacts, %d events in one account, c=%d\n\n",
		time.Now().UTC().Format("2006-01-02"), machine(), o.contacts, o.events, o.concurrency)
	fmt.Fprintln(w, "| workload | req/s | p50 | p90 | p99 | errors | contactd CPU ms/req | PostgreSQL CPU ms/req |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, l := range r.Lists {
		fmt.Fprintf(w, "| %s | %.0f | %s | %s | %s | %d | %.3f | %.3f |\n", l.Name, l.RPS, ms(l.P50), ms(l.P90), ms(l.P99),
			l.Errors, 1000*l.CPUSeconds/float64(max(1, l.Requests)), 1000*l.DBCPUSeconds/float64(max(1, l.Requests)))
	}
	fmt.Fprintf(w, "\nexport: %d contacts in %v: %.0f contacts/s; contactd peak RSS during it %d MB\n",
		r.Exported, r.ExportTime.Round(time.Millisecond), float64(r.Exported)/r.ExportTime.Seconds(), r.ExportRSS>>20)
	fmt.Fprintf(w, "events feed: %d events in %d pages in %v: %.0f events/s\n", r.FeedEvents, r.FeedRequests,
		r.FeedTime.Round(time.Millisecond), float64(r.FeedEvents)/r.FeedTime.Seconds())
	fmt.Fprintf(w, "duplicates: all %d groups in %d pages of 100 in %v: %.1f ms a page\n", r.DuplicateGroups, r.DuplicatePages,
		r.DuplicatesTime.Round(time.Millisecond), float64(r.DuplicatesTime.Milliseconds())/float64(max(1, r.DuplicatePages)))
}

// checkDataOut fails on errors or a short export or feed always, and on the targets unless
// it is a smoke run.
func checkDataOut(o options, r dataOutResult) error {
	var problems []string
	for _, l := range r.Lists {
		if l.Errors > 0 {
			problems = append(problems, fmt.Sprintf("%s: %d errors (%s)", l.Name, l.Errors, l.FirstError))
		}
		target := 25 * time.Millisecond
		if l.Name == duplicatesWorkload {
			target = 100 * time.Millisecond // an occasional review's read, not a list page
		}
		if !o.smoke && l.P99 > target {
			problems = append(problems, fmt.Sprintf("%s: p99 %v over %v", l.Name, l.P99, target))
		}
	}
	// contact i pairs with i-1: by phone at each multiple of 100, by email at each multiple of
	// 50 plus one, by name and address at each 50 past a hundred
	if want := o.contacts/dupPhone + (o.contacts-1)/dupEmail + (o.contacts+50)/dupNameAddress; r.DuplicateGroups != want {
		problems = append(problems, fmt.Sprintf("found %d duplicate groups of the %d seeded", r.DuplicateGroups, want))
	}
	if !o.smoke && r.DuplicatesTime > time.Duration(r.DuplicatePages)*25*time.Millisecond {
		problems = append(problems, fmt.Sprintf("duplicates walk %v a page of 100, over 25 ms", r.DuplicatesTime/time.Duration(max(1, r.DuplicatePages))))
	}
	if r.Exported != o.contacts || r.FeedEvents != o.events {
		problems = append(problems, fmt.Sprintf("exported %d of %d contacts, read %d of %d events", r.Exported, o.contacts, r.FeedEvents, o.events))
	}
	if !o.smoke {
		if rate := float64(r.Exported) / r.ExportTime.Seconds(); rate < 100_000 {
			problems = append(problems, fmt.Sprintf("export %.0f contacts/s, under 100,000", rate))
		}
		if r.ExportRSS > 150<<20 {
			problems = append(problems, fmt.Sprintf("export RSS %d MB, over 150", r.ExportRSS>>20))
		}
		if rate := float64(r.FeedEvents) / r.FeedTime.Seconds(); rate < 20_000 {
			problems = append(problems, fmt.Sprintf("feed %.0f events/s, under 20,000", rate))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("data out: %s", strings.Join(problems, "; "))
	}
	return nil
}
