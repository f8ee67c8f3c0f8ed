package event_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestOutboxWritersAreListed finds every statement of sql/queries and every function of the
// migrations that inserts into webhook_events, and checks the package doc lists exactly those:
// a new writer of events is one the package knows of, and builds its columns with Prepare.
func TestOutboxWritersAreListed(t *testing.T) {
	var writers []string
	queries, err := filepath.Glob("../../sql/queries/*.sql")
	if err != nil || len(queries) == 0 {
		t.Fatalf("sql/queries: %v", err)
	}
	for _, f := range queries {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range strings.Split(string(src), "-- name: ")[1:] {
			if insertsEvents.MatchString(q) {
				writers = append(writers, strings.Fields(q)[0])
			}
		}
	}
	// our SQL functions that write events, as the migrations leave them (in order: a later
	// migration may drop one)
	functions := map[string]bool{}
	migrations, _ := filepath.Glob("../../sql/migrations/*.sql")
	for _, f := range migrations {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		up, _, _ := strings.Cut(string(src), "-- +goose Down")
		for _, m := range functionDDL.FindAllStringSubmatch(up, -1) { // in order: drop, then create again
			if m[1] != "" {
				functions[m[1]] = insertsEvents.MatchString(m[2])
			} else {
				delete(functions, m[3])
			}
		}
	}
	for name, writes := range functions {
		if writes {
			writers = append(writers, name)
		}
	}
	pkg, err := parser.ParseFile(token.NewFileSet(), "events.go", nil, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	listed := regexp.MustCompile(`(?m)^  - (\w+)`).FindAllStringSubmatch(pkg.Doc.Text(), -1)
	var documented []string
	for _, m := range listed {
		documented = append(documented, m[1])
	}
	slices.Sort(writers)
	slices.Sort(documented)
	if len(writers) < 5 || !slices.Equal(writers, documented) {
		t.Errorf("statements writing webhook_events: %v\nthe package doc lists: %v", writers, documented)
	}
}

var (
	insertsEvents = regexp.MustCompile(`(?i)INSERT\s+INTO\s+webhook_events\b`)
	functionDDL   = regexp.MustCompile(`(?is)CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(\w+)(.*?)\$\$;|DROP\s+FUNCTION\s+(?:IF\s+EXISTS\s+)?(\w+)`)
)

// TestDeliveriesComeOnlyFromThePlan finds every statement of sql/queries that inserts into
// webhook_deliveries and checks it is one of the statements the fan-out's plan goes through
// (fanout.go): each takes the planned pairs as its only source of subscriptions, and queues
// them only at the plan's version of the account's subscriptions. No statement evaluates a
// filter in PostgreSQL any more: a new writer cannot decide who gets an event on its own.
func TestDeliveriesComeOnlyFromThePlan(t *testing.T) {
	queries, err := filepath.Glob("../../sql/queries/*.sql")
	if err != nil || len(queries) == 0 {
		t.Fatalf("sql/queries: %v", err)
	}
	var writers []string
	for _, f := range queries {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range strings.Split(string(src), "-- name: ")[1:] {
			name := strings.Fields(q)[0]
			if strings.Contains(q, "webhook_filter_matches(") {
				t.Errorf("%s evaluates a filter in PostgreSQL", name)
			}
			if !insertsDeliveries.MatchString(q) {
				continue
			}
			writers = append(writers, name)
			if regexp.MustCompile(`(?i)(FROM|JOIN)\s+webhook_subscriptions\b`).MatchString(q) {
				t.Errorf("%s reads the subscriptions itself while queueing deliveries", name)
			}
			if !strings.Contains(q, "@delivery_subscription_ids::uuid[]") || !atThePlansVersion.MatchString(q) {
				t.Errorf("%s does not queue the plan's deliveries at the plan's version", name)
			}
		}
	}
	slices.Sort(writers)
	if want := []string{"ContactCreate", "ContactCreateMany", "EventsRecord", "TagsSwapMany"}; !slices.Equal(writers, want) {
		t.Errorf("statements queueing deliveries %v, want %v (fanout.go lists them)", writers, want)
	}
}

var (
	insertsDeliveries = regexp.MustCompile(`(?i)INSERT\s+INTO\s+webhook_deliveries\b`)
	// the account's version against the plan's: one plan's, or each change's of a group
	atThePlansVersion = regexp.MustCompile(`a\.subscriptions_version = @subscriptions_version::bigint|` +
		`(?s)unnest\(@subscriptions_versions::bigint\[\]\) AS subscriptions_version.*a\.subscriptions_version = i\.subscriptions_version`)
)
