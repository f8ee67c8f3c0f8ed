package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// The bulk run (contactbench bulk): -bulk-contacts new contacts (tags and an address each) written with
// POST /contacts/batch, 1,000 per request at -c clients; then the same rows — read back from
// the tables the batches wrote — written into the same tables by one COPY per table, as the
// ceiling to compare with; then `contactd import` of a generated CSV of -import-rows rows,
// timed, with its peak RSS.

type bulkResult struct {
	Contacts            int
	BatchTime, CopyTime time.Duration
	// the same rows by COPY in as many streams as the batches' clients
	CopyStreamsTime       time.Duration
	ImportRows            int
	ImportTime            time.Duration
	ImportRSS             int64
	ImportCreated         int
	BatchRate, CopyRate   float64
	ImportRate, CopyRatio float64
	CopyStreamsRate       float64
	CopyStreamsRatio      float64
}

func bulkAddress(i int) string {
	streets := []string{"N Main St", "E Capitol Ave", "W Monroe St", "S Grand Ave", "Lincoln Ave"}
	return fmt.Sprintf("%d %s, Springfield, IL 6270%d", 100+i%900, streets[i%len(streets)], 1+i%4)
}

func bulkItem(prefix string, i int) map[string]any {
	return map[string]any{
		"email":   fmt.Sprintf("%s%d@example.com", prefix, i),
		"name":    firstNames[i%len(firstNames)] + " " + lastNames[(i/7)%len(lastNames)],
		"phone":   fmt.Sprintf("555-%03d-%04d", i%1000, i%10000),
		"tags":    []string{fmt.Sprintf("t%d", i%50), "import"},
		"address": bulkAddress(i),
	}
}

func runBulk(ctx context.Context, o options, out io.Writer) error {
	var settings []string
	if o.pgStats {
		settings = pgStatsSettings
	}
	b, err := openBenchDB(ctx, o.contactd, settings)
	if err != nil {
		return err
	}
	defer b.close()
	// a bulk load is the operator's own: its clients' batches all run at once
	args := append(serveArgs(b.url, false), "--batches-per-account", strconv.Itoa(max(1, o.concurrency)))
	pprofAddr, err := profileAddr(o)
	if err != nil {
		return err
	}
	if pprofAddr != "" {
		args = append(args, "--pprof-addr", pprofAddr)
	}
	cd, addr, err := startContactd(ctx, o.contactd, args)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			cd.stop()
		}
	}()
	res := bulkResult{Contacts: o.bulkContacts, ImportRows: o.importRows}

	// 1. batches over HTTP
	batches := (o.bulkContacts + 999) / 1000
	logf("batch upsert: %d contacts in %d batches of 1,000 at c=%d", o.bulkContacts, batches, o.concurrency)
	bodies := make([][]byte, batches)
	for n := range batches {
		items := make([]any, 0, 1000)
		for i := n * 1000; i < min((n+1)*1000, o.bulkContacts); i++ {
			items = append(items, bulkItem("bulk", i))
		}
		bodies[n], _ = json.Marshal(map[string]any{"mode": "upsert", "contacts": items})
	}
	var next atomic.Int64
	var created atomic.Int64
	errs := make(chan error, o.concurrency)
	client := &http.Client{Timeout: 2 * time.Minute}
	if o.pgStats {
		if err := resetPGStats(ctx, b.st); err != nil {
			return err
		}
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	if pprofAddr != "" { // contactd's CPU during the batches
		go func() {
			if err := fetchProfile(pprofAddr, 5*time.Second, filepath.Join(o.profileDir, "batch.pprof")); err != nil {
				logf("%v", err)
			}
		}()
	}
	for range o.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := int(next.Add(1) - 1); n < batches; n = int(next.Add(1) - 1) {
				req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/public/v1/contacts/batch", bytes.NewReader(bodies[n]))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("x-api-key", b.apiKey)
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				var r struct {
					Results []struct {
						Status string `json:"status"`
					} `json:"results"`
				}
				err = json.NewDecoder(resp.Body).Decode(&r)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					errs <- fmt.Errorf("batch %d: %d %v", n, resp.StatusCode, err)
					return
				}
				for _, x := range r.Results {
					if x.Status == "created" {
						created.Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	res.BatchTime = time.Since(t0)
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	if int(created.Load()) != o.bulkContacts {
		return fmt.Errorf("batches created %d of %d contacts", created.Load(), o.bulkContacts)
	}
	if o.pgStats { // the batches' statements only
		if err := printPGStats(ctx, out, b.st); err != nil {
			return err
		}
	}
	cd.stop() // its enrichment workers would compete with what follows
	stopped = true

	// 2. the same rows by COPY, into a second account
	logf("COPY of the same rows, one stream, then %d", o.concurrency)
	if res.CopyTime, err = copySameRows(ctx, b, 1); err != nil {
		return err
	}
	if res.CopyStreamsTime, err = copySameRows(ctx, b, o.concurrency); err != nil {
		return err
	}

	// 3. contactd import of a CSV
	logf("contactd import of %d CSV rows", o.importRows)
	if res.ImportTime, res.ImportRSS, res.ImportCreated, err = importCSV(ctx, o, b); err != nil {
		return err
	}

	res.BatchRate = float64(o.bulkContacts) / res.BatchTime.Seconds()
	res.CopyRate = float64(o.bulkContacts) / res.CopyTime.Seconds()
	res.CopyRatio = res.BatchRate / res.CopyRate
	res.CopyStreamsRate = float64(o.bulkContacts) / res.CopyStreamsTime.Seconds()
	res.CopyStreamsRatio = res.BatchRate / res.CopyStreamsRate
	res.ImportRate = float64(o.importRows) / res.ImportTime.Seconds()
	fmt.Fprintf(out, "contactbench bulk %s — %s\n\n", time.Now().Format(time.DateOnly), machine())
	fmt.Fprintln(out, "| workload | contacts | time | contacts/s | |")
	fmt.Fprintln(out, "|---|---|---|---|---|")
	fmt.Fprintf(out, "| POST /contacts/batch, 1,000 per request, c=%d (tags, address, TagsAdded event) | %d | %s | %.0f | %.2f of COPY, %.2f of COPY in %d streams |\n",
		o.concurrency, o.bulkContacts, res.BatchTime.Round(time.Millisecond), res.BatchRate, res.CopyRatio, res.CopyStreamsRatio, o.concurrency)
	fmt.Fprintf(out, "| COPY of the same rows into the same tables (contacts, properties, webhook_events) | %d | %s | %.0f | |\n",
		o.bulkContacts, res.CopyTime.Round(time.Millisecond), res.CopyRate)
	fmt.Fprintf(out, "| the same COPY in %d streams side by side, a transaction each | %d | %s | %.0f | |\n",
		o.concurrency, o.bulkContacts, res.CopyStreamsTime.Round(time.Millisecond), res.CopyStreamsRate)
	fmt.Fprintf(out, "| contactd import of a CSV (email, name, phone, tags, address) | %d | %s | %.0f | peak RSS %d MB |\n\n",
		o.importRows, res.ImportTime.Round(time.Millisecond), res.ImportRate, res.ImportRSS>>20)
	checks := []struct {
		what string
		ok   bool
	}{
		{"batch upsert >= 20,000 contacts/s", res.BatchRate >= 20_000},
		{"batch upsert >= 0.25 of COPY", res.CopyRatio >= 0.25},
		{fmt.Sprintf("import of %d rows in under 2 minutes", o.importRows), res.ImportTime < 2*time.Minute},
		{"import peak RSS under 200 MB", res.ImportRSS < 200<<20},
	}
	for _, c := range checks {
		mark := "met"
		if !c.ok {
			mark = "NOT met"
		}
		fmt.Fprintf(out, "- %s: %s\n", c.what, mark)
	}
	if o.jsonOut != "" {
		raw, _ := json.MarshalIndent(res, "", "  ")
		return os.WriteFile(o.jsonOut, raw, 0o644)
	}
	return nil
}

// copySameRows reads what the batches wrote and times writing the same rows, under another
// account (new consent tokens: they are unique), in streams transactions side by side: each
// copies its share of the contacts, then their properties and events, one COPY per table.
// One stream is COPY as fast as one connection goes; as many as the batches' clients is what
// the same rows cost PostgreSQL on every core.
func copySameRows(ctx context.Context, b *benchDB, streams int) (time.Duration, error) {
	other, err := createAccount(ctx, b.bin, b.url, fmt.Sprintf("copy-%d", streams))
	if err != nil {
		return 0, err
	}
	pool := b.st.Pool
	read := func(sql string, args ...any) ([]string, [][]any, error) {
		rows, err := pool.Query(ctx, sql, args...)
		if err != nil {
			return nil, nil, err
		}
		defer rows.Close()
		var cols []string
		for _, f := range rows.FieldDescriptions() {
			cols = append(cols, f.Name)
		}
		var all [][]any
		for rows.Next() {
			v, err := rows.Values()
			if err != nil {
				return nil, nil, err
			}
			v[0] = other
			all = append(all, v)
		}
		return cols, all, rows.Err()
	}
	type table struct {
		name    string
		cols    []string
		rows    [][]any
		contact int // the column of the row's contact, which picks its stream
	}
	var tables []table
	for _, t := range []struct {
		name, sql string
		args      []any
		contact   int
	}{
		{"contacts", `SELECT account_id, contact_id, email, email_key, name, phone, tags, consent_token || $2 AS consent_token,
			consent_api_key_name, consent_api_key_prefix, consent_source_ip, consent_user_agent, consent_fields,
			created_at, updated_at, enrich_due_at, active_properties, addresses_parsed_by
			FROM contacts WHERE account_id = $1`, []any{b.account, fmt.Sprintf("c%d", streams)}, 1},
		{"properties", `SELECT account_id, property_id, contact_id, raw_address, apt_or_unit_number, street_address,
			city, county, state, zip, normalized, created_at FROM properties WHERE account_id = $1`, []any{b.account}, 2},
		{"webhook_events", `SELECT account_id, event_id, event_type, contact_id, payload, occurred_at
			FROM webhook_events WHERE account_id = $1`, []any{b.account}, 3},
	} {
		cols, rows, err := read(t.sql, t.args...)
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", t.name, err)
		}
		tables = append(tables, table{t.name, cols, rows, t.contact})
	}
	stream := map[[16]byte]int{}
	for i, r := range tables[0].rows {
		id, ok := r[1].([16]byte)
		if !ok {
			return 0, fmt.Errorf("a contact's id read as %T", r[1])
		}
		stream[id] = i % streams
	}
	shares := make([][][][]any, streams) // stream, table, rows
	for s := range shares {
		shares[s] = make([][][]any, len(tables))
	}
	for ti, t := range tables {
		for _, r := range t.rows {
			id, _ := r[t.contact].([16]byte) // an event without a contact goes with the first
			s := stream[id]
			shares[s][ti] = append(shares[s][ti], r)
		}
	}
	if _, err := pool.Exec(ctx, "CHECKPOINT"); err != nil {
		return 0, err
	}
	t0 := time.Now()
	errs := make(chan error, streams)
	for s := range streams {
		go func() {
			errs <- pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				for ti, t := range tables {
					if _, err := tx.CopyFrom(ctx, pgx.Identifier{t.name}, t.cols, pgx.CopyFromRows(shares[s][ti])); err != nil {
						return fmt.Errorf("copy %s: %w", t.name, err)
					}
				}
				return nil
			})
		}()
	}
	for range streams {
		if e := <-errs; e != nil && err == nil {
			err = e
		}
	}
	return time.Since(t0), err
}

// importCSV writes a CSV of o.importRows contacts and runs `contactd import` on it into a
// third account.
func importCSV(ctx context.Context, o options, b *benchDB) (time.Duration, int64, int, error) {
	if _, err := createAccount(ctx, o.contactd, b.url, "import"); err != nil {
		return 0, 0, 0, err
	}
	dir, err := os.MkdirTemp("", "contactbench-import-")
	if err != nil {
		return 0, 0, 0, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "contacts.csv")
	f, err := os.Create(path)
	if err != nil {
		return 0, 0, 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fmt.Fprintln(w, "Email,Full Name,Phone,Tags,Address")
	for i := range o.importRows {
		it := bulkItem("imp", i)
		tags := it["tags"].([]string)
		fmt.Fprintf(w, "%s,%s,%s,%s;%s,\"%s\"\n", it["email"], it["name"], it["phone"], tags[0], tags[1], it["address"])
	}
	if err := w.Flush(); err != nil {
		return 0, 0, 0, err
	}
	f.Close()
	cmd := exec.CommandContext(ctx, o.contactd, "import", "--account", "import", "--database-url", b.url, path)
	cmd.Env = append(os.Environ(), "CONTACTD_SECRET_KEY="+runSecretKey, "CONTACTD_LOG_FORMAT=json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, 0, err
	}
	// the peak RSS from /proc while it runs: a child's rusage would count the pages of this
	// process it shared between fork and exec
	done, peak := make(chan struct{}), make(chan int64)
	go func() {
		p, rss := proc{pid: cmd.Process.Pid}, int64(0)
		for {
			if n, err := p.peakRSSBytes(); err == nil {
				rss = max(rss, n)
			}
			select {
			case <-done:
				peak <- rss
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	err = cmd.Wait()
	elapsed := time.Since(t0)
	close(done)
	rss := <-peak
	if err != nil {
		return 0, 0, 0, fmt.Errorf("contactd import: %v\n%s%s", err, stdout.Bytes(), stderr.Bytes())
	}
	var n int
	if err := b.st.Pool.QueryRow(ctx, `SELECT count(*) FROM contacts c JOIN accounts a USING (account_id) WHERE a.name = 'import'`).Scan(&n); err != nil {
		return 0, 0, 0, err
	}
	if n != o.importRows {
		return 0, 0, 0, fmt.Errorf("import stored %d of %d rows: %s", n, o.importRows, stdout.Bytes())
	}
	logf("%s", bytes.TrimSpace(stdout.Bytes()))
	return elapsed, rss, n, nil
}
