package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"golang.org/x/term"

	"github.com/contactd/contactd/internal/apicore"
	"github.com/contactd/contactd/internal/importer"
)

// errRowsRejected ends an import that finished with rejected rows: exit status 3.
var errRowsRejected = errors.New("some rows were rejected")

// importMemoryLimit is the heap an import keeps to unless GOMEMLIMIT says otherwise. Its
// live heap is mostly the batches in flight, and the collector's default goal of twice that
// took a 1,000,000-row import past its RSS target (`make bench-bulk`); under this limit it
// stays under at the same rate, and a much lower one costs the collector a share of the rate.
const importMemoryLimit = 128 << 20

// cmdImport upserts the contacts of a file into an account, through the batch endpoint's code.
func cmdImport(ctx context.Context, c *cmdline) error {
	args := c.args
	if *c.account == "" || len(args) != 1 {
		return errors.New("usage: contactd import --account NAME [--map field=Column,...] [--match-field KEY] [--dry-run] FILE")
	}
	mapping, err := importer.ParseMap(*c.mapping)
	if err != nil {
		return err
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(importMemoryLimit)
	}
	return withServices(ctx, c, func(s *Services) error {
		id, err := s.Auth.AccountByName(ctx, *c.account)
		if err != nil {
			return err
		}
		batch, err := apicore.NewBatch(s.Contacts)
		if err != nil {
			return err
		}
		fields, err := s.Fields.List(ctx, id, true)
		if err != nil {
			return err
		}
		types := make(map[string]string, len(fields))
		for _, f := range fields {
			types[f.Key] = string(f.Type)
		}
		opt := importer.Options{Account: id, File: args[0], Map: mapping, DryRun: *c.dryRun,
			BatchSize: *c.batchSize, Writers: *c.writers, Progress: c.stderr, FieldTypes: types, MatchField: *c.matchField}
		if term.IsTerminal(int(os.Stderr.Fd())) {
			opt.Progress, opt.Terminal = os.Stderr, true // a bar redraws its line: not through the log's line buffer
		}
		sum, err := importer.Run(ctx, s.Store, batch, opt)
		what := "imported"
		if *c.dryRun {
			what = "dry run, nothing written"
		}
		fmt.Fprintf(c.stdout, "%s: %s\n", what, sum)
		if err == nil && sum.Rejected > 0 {
			err = fmt.Errorf("%w: %d, with their errors in %s", errRowsRejected, sum.Rejected, sum.RejectedFile)
		}
		return err
	})
}
