// Package importer is `contactd import`: it reads a CSV export of another system (or NDJSON
// in the API's contact shape), upserts its rows in batches through the batch endpoint's code,
// shows progress, and writes the rows it rejected, with their errors, next to the file.
package importer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/apicore"
	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/csvcell"
	"github.com/contactd/contactd/internal/platform/store"
)

// Options of one import.
type Options struct {
	Account uuid.UUID
	File    string
	// Map names the CSV column of a field (ParseMap); the others are found by header name.
	Map map[string]string
	// DryRun writes nothing: each batch runs in a transaction that is rolled back.
	DryRun bool
	// BatchSize rows go in one batch (at most 1,000); Writers batches are written at once,
	// each writer taking the emails that hash to it, so one email's rows stay in file order.
	BatchSize, Writers int
	// Progress gets the progress: a bar on a terminal (Terminal), else a line every few seconds.
	Progress io.Writer
	Terminal bool
	// FieldTypes are the account's custom fields' types by key: a column named
	// customFields.KEY (as the CSV export writes it), or mapped to it, fills that field, its
	// cell read as the type says.
	FieldTypes map[string]string
	// MatchField is the key of a unique custom field rows are matched on instead of the email
	// (the batch's matchField); its rows go to one writer per value, in file order.
	MatchField string
}

// Summary is what an import did.
type Summary struct {
	Rows, Created, Updated, Unchanged, Rejected int
	Elapsed                                     time.Duration
	// RejectedFile holds the rejected rows with their errors ("" when none were).
	RejectedFile string
}

func (s Summary) String() string {
	rate := float64(s.Rows) / max(s.Elapsed.Seconds(), 1e-9)
	out := fmt.Sprintf("%d rows in %s (%.0f rows/s): %d created, %d updated, %d unchanged, %d rejected",
		s.Rows, s.Elapsed.Round(time.Millisecond), rate, s.Created, s.Updated, s.Unchanged, s.Rejected)
	if s.RejectedFile != "" {
		out += " (" + s.RejectedFile + ")"
	}
	return out
}

// row is one record of the file: its line, the item it makes, and the record as read (for
// the rejected file).
type row struct {
	line   int
	email  string
	item   json.RawMessage
	record []string
}

var errDryRun = errors.New("dry run")

// Run imports opt.File into opt.Account.
func Run(ctx context.Context, st *store.Store, batch *apicore.Batch, opt Options) (Summary, error) {
	start := time.Now()
	opt.BatchSize = min(max(opt.BatchSize, 1), 1000)
	opt.Writers = max(opt.Writers, 1)
	f, err := os.Open(opt.File)
	if err != nil {
		return Summary{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return Summary{}, err
	}
	read := &countingReader{r: f}
	records, header, err := open(bufio.NewReaderSize(read, 1<<20), opt)
	if err != nil {
		return Summary{}, err
	}
	rej := &rejected{path: opt.File + ".rejected.csv", header: header}
	defer rej.close()

	var sum Summary
	var mu sync.Mutex // guards sum
	progress := newProgress(opt.Progress, opt.Terminal, info.Size(), &read.n, func() Summary {
		mu.Lock()
		defer mu.Unlock()
		return sum
	})
	defer progress.stop()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queues := make([]chan []row, opt.Writers)
	errs := make(chan error, opt.Writers+1)
	var wg sync.WaitGroup
	origin := contact.Origin{KeyName: "contactd import", KeyPrefix: "", SourceIP: "", UserAgent: "contactd import " + filepath.Base(opt.File)}
	for w := range queues {
		queues[w] = make(chan []row, 2)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rows := range queues[w] {
				results, err := write(ctx, st, batch, opt, origin, rows)
				if err != nil {
					errs <- err
					cancel()
					for range queues[w] { // let the reader finish
					}
					return
				}
				mu.Lock()
				for i, r := range results {
					sum.Rows++
					switch r.Status {
					case api.BatchContactItemResultStatusCreated:
						sum.Created++
					case api.BatchContactItemResultStatusUpdated:
						sum.Updated++
					case api.BatchContactItemResultStatusUnchanged:
						sum.Unchanged++
					default:
						sum.Rejected++
						if err := rej.add(rows[i], describe(r.Error)); err != nil {
							mu.Unlock()
							errs <- err
							cancel()
							return
						}
					}
				}
				mu.Unlock()
			}
		}()
	}

	pending := make([][]row, opt.Writers)
	flush := func(w int) bool {
		if len(pending[w]) == 0 {
			return true
		}
		select {
		case queues[w] <- pending[w]:
			pending[w] = make([]row, 0, opt.BatchSize)
			return true
		case <-ctx.Done():
			return false
		}
	}
	var readErr error
	for {
		r, err := records()
		if err == io.EOF {
			break
		}
		if err != nil {
			readErr = err
			break
		}
		w := writerOf(r.email, opt.Writers)
		pending[w] = append(pending[w], r)
		if len(pending[w]) >= opt.BatchSize && !flush(w) {
			break
		}
	}
	for w := range queues {
		flush(w)
		close(queues[w])
	}
	wg.Wait()
	close(errs)
	sum.Elapsed = time.Since(start)
	if rej.n > 0 {
		sum.RejectedFile = rej.path
	}
	if err := <-errs; err != nil {
		return sum, err
	}
	if readErr != nil {
		return sum, readErr
	}
	return sum, rej.close()
}

// write sends one batch (a dry run: in a transaction rolled back afterwards).
func write(ctx context.Context, st *store.Store, batch *apicore.Batch, opt Options, origin contact.Origin, rows []row) ([]api.BatchContactItemResult, error) {
	items := make([]json.RawMessage, len(rows))
	for i, r := range rows {
		items[i] = r.item
	}
	if !opt.DryRun {
		return batch.Run(ctx, opt.Account, origin, contact.BatchOptions{Upsert: true, MatchField: opt.MatchField}, items, nil)
	}
	var results []api.BatchContactItemResult
	err := st.Atomic(ctx, func(ctx context.Context, _ *db.Queries) (err error) {
		if results, err = batch.Run(ctx, opt.Account, origin, contact.BatchOptions{Upsert: true, MatchField: opt.MatchField}, items, nil); err != nil {
			return err
		}
		return errDryRun
	})
	if errors.Is(err, errDryRun) {
		err = nil
	}
	return results, err
}

func writerOf(email string, writers int) int {
	h := fnv.New32a()
	h.Write([]byte(contact.EmailKey(email)))
	return int(h.Sum32() % uint32(writers))
}

// open returns the file's records as rows, and the header the rejected file repeats: CSV
// (with a header row) or NDJSON (one contact object per line), by extension, else by the
// first character.
func open(r *bufio.Reader, opt Options) (func() (row, error), []string, error) {
	ext := strings.ToLower(filepath.Ext(opt.File))
	ndjson := ext == ".ndjson" || ext == ".jsonl"
	if ext != ".csv" && !ndjson {
		first, _ := r.Peek(1)
		ndjson = len(first) == 1 && first[0] == '{'
	}
	if ndjson {
		return ndjsonRows(r), []string{"record"}, nil
	}
	c := csv.NewReader(r)
	c.FieldsPerRecord = -1
	c.ReuseRecord = false
	header, err := c.Read()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: reading the header row: %w", opt.File, err)
	}
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\ufeff") // a byte-order mark
	}
	at, err := columns(header, opt.Map, opt.FieldTypes)
	if err != nil {
		return nil, nil, err
	}
	return func() (row, error) {
		record, err := c.Read()
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return row{}, fmt.Errorf("%s: %w", opt.File, err)
			}
			return row{}, err
		}
		line, _ := c.FieldPos(0)
		it := item(record, at, opt.FieldTypes)
		raw, err := json.Marshal(it)
		if err != nil {
			return row{}, err
		}
		email, _ := it["email"].(string)
		if custom, ok := it["customFields"].(map[string]any); ok && opt.MatchField != "" && custom[opt.MatchField] != nil {
			email = "\x00" + fmt.Sprint(custom[opt.MatchField]) // one value's rows to one writer, in order
		}
		return row{line: line, email: email, item: raw, record: record}, nil
	}, header, nil
}

func ndjsonRows(r *bufio.Reader) func() (row, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	line := 0
	return func() (row, error) {
		for sc.Scan() {
			line++
			b := bytes.TrimSpace(sc.Bytes())
			if len(b) == 0 {
				continue
			}
			raw := json.RawMessage(bytes.Clone(b))
			var probe struct {
				Email string `json:"email"`
			}
			_ = json.Unmarshal(raw, &probe) // an invalid line is the batch's to refuse, with the reason
			return row{line: line, email: probe.Email, item: raw, record: []string{string(raw)}}, nil
		}
		if err := sc.Err(); err != nil {
			return row{}, err
		}
		return row{}, io.EOF
	}
}

// describe is an item's error on one line: its code, message and fields.
func describe(e *api.Error) string {
	if e == nil {
		return "failed"
	}
	s := string(e.Code) + ": " + e.Message
	if e.Data != nil && e.Data.Errors != nil {
		var fields []string
		for _, f := range *e.Data.Errors {
			field := f.Field
			if _, rest, ok := strings.Cut(field, "body.contacts."); ok {
				if _, after, ok := strings.Cut(rest, "."); ok {
					field = after
				} else {
					field = "(row)"
				}
			}
			fields = append(fields, field+": "+f.Message)
		}
		s += " (" + strings.Join(fields, "; ") + ")"
	}
	if e.Data != nil && e.Data.ContactId != nil {
		s += " (contact " + *e.Data.ContactId + ")"
	}
	return s
}

// rejected writes the rejected rows: line, error, then the row as it was.
type rejected struct {
	path   string
	header []string
	f      *os.File
	w      *csv.Writer
	n      int
}

func (r *rejected) add(row row, reason string) error {
	if r.w == nil {
		// The rows are personal data: only the importing user may read them, also when a
		// previous run left the file readable by others.
		f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return err
		}
		r.f, r.w = f, csv.NewWriter(f)
		if err := r.w.Write(append([]string{"line", "error"}, r.header...)); err != nil {
			return err
		}
	}
	r.n++
	out := append([]string{fmt.Sprint(row.line), reason}, row.record...)
	for i := range out {
		out[i] = csvcell.Neutralize(out[i]) // it is opened in a spreadsheet, to be mended
	}
	return r.w.Write(out)
}

func (r *rejected) close() error {
	if r.w == nil {
		if r.n == 0 {
			_ = os.Remove(r.path) // a previous run's rejects are stale
		}
		return nil
	}
	r.w.Flush()
	err := r.w.Error()
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	r.w = nil
	return err
}

type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
