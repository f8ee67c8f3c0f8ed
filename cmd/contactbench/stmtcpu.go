package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"

	"github.com/contactd/contactd/internal/platform/store"
)

// statementCPU measures the CPU PostgreSQL's backends spend in each statement over a window
// (-stmtcpu), from log_statement_stats: each protocol message's own getrusage, logged after
// its duration line, which names the statement. pg_stat_statements counts wall time, in
// which a statement waiting for a core or a lock looks as dear as one computing; this counts
// the CPU alone, with the logging's own cost on every message. Its absolute figures move
// with the machine's speed as much as any; a statement's share of the window is what
// compares between runs.
type statementCPU struct {
	st     *store.Store
	log    string // the cluster's postgres.log
	offset int64
	costs  []statementCost
}

type statementCost struct {
	name    string // the sqlc query's name, with the message when not an execute
	calls   int
	seconds float64
}

func (s *statementCPU) logging(ctx context.Context, on bool) error {
	statements := []string{`ALTER SYSTEM RESET log_statement_stats`, `ALTER SYSTEM RESET log_min_duration_statement`}
	if on {
		statements = []string{`ALTER SYSTEM SET log_statement_stats = on`, `ALTER SYSTEM SET log_min_duration_statement = 0`}
	}
	for _, sql := range append(statements, `SELECT pg_reload_conf()`) { // ALTER SYSTEM: each alone, outside a transaction
		if _, err := s.st.Pool.Exec(ctx, sql); err != nil {
			return err
		}
	}
	return nil
}

// start turns the statistics on; the backends take them from their next statement.
func (s *statementCPU) start(ctx context.Context) error {
	fi, err := os.Stat(s.log)
	if err != nil {
		return err
	}
	s.offset = fi.Size()
	return s.logging(ctx, true)
}

// stop turns them off and reads what was logged since start.
func (s *statementCPU) stop(ctx context.Context) error {
	if err := s.logging(ctx, false); err != nil {
		return err
	}
	f, err := os.Open(s.log)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(s.offset, io.SeekStart); err != nil {
		return err
	}
	s.costs, err = parseStatementStats(f)
	return err
}

var (
	logLine   = regexp.MustCompile(`^\S+ \S+ \S+ \[(\d+)\] (LOG|DETAIL):\s+(.*)`)
	durationL = regexp.MustCompile(`^duration: [\d.]+ ms\s+(parse|bind|execute|statement)[^:]*: (.*)`)
	queryName = regexp.MustCompile(`-- name: (\w+)`)
	statsL    = regexp.MustCompile(`^(PARSE|BIND|EXECUTE|QUERY) (?:MESSAGE )?STATISTICS`)
	usageL    = regexp.MustCompile(`([\d.]+) s user, ([\d.]+) s system`)
)

// parseStatementStats sums each statement's CPU: a backend logs a message's duration line
// (which names it), then its statistics, whose detail has the user and system seconds.
func parseStatementStats(r io.Reader) ([]statementCost, error) {
	named := map[string]string{} // backend -> the statement its last duration line named
	var pending string           // the statement whose statistics' detail comes next
	sums := map[string]*statementCost{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if m := logLine.FindStringSubmatch(line); m != nil {
			pid, msg := m[1], m[3]
			if d := durationL.FindStringSubmatch(msg); d != nil {
				name := d[2]
				if q := queryName.FindStringSubmatch(name); q != nil {
					name = q[1]
				} else if len(name) > 40 {
					name = name[:40]
				}
				if d[1] != "execute" {
					name = d[1] + " " + name
				}
				named[pid] = name
			} else if statsL.MatchString(msg) {
				pending = named[pid]
			}
			continue
		}
		if u := usageL.FindStringSubmatch(line); u != nil && pending != "" {
			user, _ := strconv.ParseFloat(u[1], 64)
			system, _ := strconv.ParseFloat(u[2], 64)
			c := sums[pending]
			if c == nil {
				c = &statementCost{name: pending}
				sums[pending] = c
			}
			c.calls++
			c.seconds += user + system
			pending = ""
		}
	}
	costs := make([]statementCost, 0, len(sums))
	for _, c := range sums {
		costs = append(costs, *c)
	}
	slices.SortFunc(costs, func(a, b statementCost) int {
		if a.seconds != b.seconds {
			if a.seconds > b.seconds {
				return -1
			}
			return 1
		}
		return 0
	})
	return costs, sc.Err()
}

func (s *statementCPU) print(out io.Writer) {
	var all float64
	for _, c := range s.costs {
		all += c.seconds
	}
	fmt.Fprintf(out, "PostgreSQL CPU by statement while the backlog was sent alone (log_statement_stats: %d statements and messages; the backlog's figures below include its cost):\n", len(s.costs))
	fmt.Fprintf(out, "%10s %9s %9s %6s  %s\n", "calls", "CPU ms", "us/call", "share", "statement (bind/parse: that message)")
	for _, c := range s.costs[:min(len(s.costs), 12)] {
		fmt.Fprintf(out, "%10d %9.1f %9.1f %5.1f%%  %s\n", c.calls, c.seconds*1000, c.seconds/float64(c.calls)*1e6, 100*c.seconds/all, c.name)
	}
	fmt.Fprintln(out)
}
