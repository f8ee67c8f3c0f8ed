package layers

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// derivedWriters are the only writers of the tables a change of a contact derives: its events
// and their deliveries, its segment memberships and its unique custom values. Each is a
// statement of sql/queries or a function the migrations leave; a new one must be added here,
// with its reason, or the test fails.
var derivedWriters = map[string]map[string]string{
	"webhook_events": {
		"record_events":        "the one definition of recording events with their planned deliveries",
		"EventsRedact":         "an erased contact's events become tombstones",
		"SandboxReset":         "a sandbox reset empties the account",
		"accounts_delete_data": "an account's deletion",
	},
	"webhook_deliveries": {
		"record_events":          "the one definition of recording events with their planned deliveries",
		"DeliveryClaim":          "the dispatcher leases due deliveries",
		"DeliveryRecordAttempt":  "an attempt's outcome",
		"DeliverySucceedMany":    "a group's successful attempts",
		"DeliveryRequeue":        "a failed delivery sent again by hand",
		"DeliveriesOrphanedFail": "a pending delivery whose event the retention removed",
		"DeliveriesPrune":        "the feed's retention",
		"SandboxReset":           "a sandbox reset empties the account",
		"accounts_delete_data":   "an account's deletion",
	},
	"segment_members": {
		"ContactCreate":             "a new contact's memberships, in the statement that inserts it",
		"TagsSwapMany":              "the memberships a tag change moves, in the statement that makes it",
		"SegmentMembersSet":         "the changes of a write, or of a backfill page (segment.Service)",
		"SegmentMemberAdd":          "a snapshot segment's member added by hand",
		"SegmentMemberRemove":       "a snapshot segment's member removed by hand",
		"SegmentMembersDelete":      "a deleted segment's members",
		"SegmentMembersOfNoContact": "a backfill's last step: members whose contact is gone",
		"SandboxReset":              "a sandbox reset empties the account",
	},
	"contact_unique_values": {
		"UniqueValuesClaim":   "a write's claims of its unique values",
		"UniqueValuesRelease": "a write's releases",
		"UniqueValuesMove":    "a merge's primary takes its duplicates' values",
	},
}

// recordEventsCallers are the statements that call record_events, each with the version of
// the account's subscriptions its plan was made at: the fan-out decides who gets an event
// (event.Audience.Plan), and a statement queues its plan only while the subscriptions are
// those it was made from.
var recordEventsCallers = []string{"ContactCreate", "ContactCreateMany", "EnrichFinishMany", "EventsRecord", "TagsSwapMany"}

var (
	functionDDL = regexp.MustCompile(`(?is)CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(\w+)(.*?)\$\$;|DROP\s+FUNCTION\s+(?:IF\s+EXISTS\s+)?(\w+)`)
	// the account's version against the plan's: one plan's, or each change's of a group
	atThePlansVersion = regexp.MustCompile(`a\.subscriptions_version = @subscriptions_version::bigint|` +
		`(?s)unnest\(@subscriptions_versions::bigint\[\]\) AS subscriptions_version.*a\.subscriptions_version = (i|f)\.subscriptions_version`)
)

func writes(table string) *regexp.Regexp {
	return regexp.MustCompile(`(?i)(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+` + table + `\b`)
}

// TestDerivedTablesHaveTheirWritersOnly: nothing but the listed statements and functions
// writes the events, the deliveries, the segment memberships or the unique values; events
// and deliveries are inserted by record_events alone, which is called only by statements
// that check the plan's version; no filter is evaluated in PostgreSQL; and no Go code writes
// those tables with SQL of its own.
func TestDerivedTablesHaveTheirWritersOnly(t *testing.T) {
	statements := map[string]string{} // name -> text, statements and live functions alike
	files, err := filepath.Glob("../../sql/queries/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("sql/queries: %v", err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range strings.Split(string(src), "-- name: ")[1:] {
			statements[strings.Fields(q)[0]] = q
		}
	}
	migrations, _ := filepath.Glob("../../sql/migrations/*.sql")
	functions := map[string]string{}
	for _, f := range migrations { // in order: a later migration may drop or replace one
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		up, _, _ := strings.Cut(string(src), "-- +goose Down")
		for _, m := range functionDDL.FindAllStringSubmatch(up, -1) {
			if m[1] != "" {
				functions[m[1]] = m[2]
			} else {
				delete(functions, m[3])
			}
		}
	}
	maps.Copy(statements, functions)
	if len(functions) < 3 || statements["record_events"] == "" {
		t.Fatalf("functions the migrations leave: %v, want record_events among them", slices.Sorted(maps.Keys(functions)))
	}

	for _, table := range slices.Sorted(maps.Keys(derivedWriters)) {
		re := writes(table)
		var found []string
		for name, q := range statements {
			if re.MatchString(q) {
				found = append(found, name)
			}
		}
		slices.Sort(found)
		if want := slices.Sorted(maps.Keys(derivedWriters[table])); !slices.Equal(found, want) {
			t.Errorf("writers of %s: %v\nlisted: %v", table, found, want)
		}
	}
	inserts := regexp.MustCompile(`(?i)INSERT\s+INTO\s+(webhook_events|webhook_deliveries)\b`)
	var callers []string
	for name, q := range statements {
		if name != "record_events" && inserts.MatchString(q) {
			t.Errorf("%s inserts events or deliveries itself: call record_events", name)
		}
		if strings.Contains(q, "webhook_filter_matches(") {
			t.Errorf("%s evaluates a filter in PostgreSQL", name)
		}
		if !strings.Contains(q, "record_events(") || name == "record_events" {
			continue
		}
		callers = append(callers, name)
		if regexp.MustCompile(`(?i)(FROM|JOIN)\s+webhook_subscriptions\b`).MatchString(q) {
			t.Errorf("%s reads the subscriptions itself while recording events", name)
		}
		if !atThePlansVersion.MatchString(q) {
			t.Errorf("%s does not record at the plan's version of the subscriptions", name)
		}
	}
	slices.Sort(callers)
	if !slices.Equal(callers, recordEventsCallers) {
		t.Errorf("statements calling record_events: %v, want %v", callers, recordEventsCallers)
	}

	// Go code (not tests, not the generated queries) writes none of them with SQL of its own
	anyTable := regexp.MustCompile(`(?i)(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(webhook_events|webhook_deliveries|segment_members|contact_unique_values)\b`)
	for _, root := range []string{"..", "../../cmd"} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
				strings.Contains(filepath.ToSlash(path), "/testkit/") {
				return err
			}
			b, err := os.ReadFile(path)
			if err == nil && anyTable.Match(b) {
				t.Errorf("%s writes a derived table with SQL of its own", path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
