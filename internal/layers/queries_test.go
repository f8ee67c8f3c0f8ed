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

// owners are the packages whose statements each file of sql/queries holds.
var owners = map[string]string{
	"accounts.sql":             "internal/auth",
	"activities.sql":           "internal/contact",
	"consents.sql":             "internal/contact",
	"contact_field_values.sql": "internal/contact",
	"console.sql":              "internal/console",
	"contacts.sql":             "internal/contact",
	"contacts_list.sql":        "internal/contact/search",
	"deliveries.sql":           "internal/delivery",
	"duplicates.sql":           "internal/contact/search",
	"enrich.sql":               "internal/enrich",
	"erasures.sql":             "internal/erasure",
	"events.sql":               "internal/event",
	"events_feed.sql":          "internal/event",
	"fields.sql":               "internal/field",
	"idempotency.sql":          "internal/idempotency",
	"keys.sql":                 "internal/auth",
	"merges.sql":               "internal/contact",
	"periodic.sql":             "internal/platform/queue",
	"properties.sql":           "internal/contact",
	"secrets.sql":              "internal/subscription",
	"segments.sql":             "internal/segment",
	"subscriptions.sql":        "internal/subscription",
	"suppressions.sql":         "internal/suppression",
	"tags.sql":                 "internal/contact",
}

var (
	queryName = regexp.MustCompile(`(?m)^-- name: (\w+)`)
	called    = regexp.MustCompile(`\.(\w+)\(`)
)

// A statement lives in the file of the package that runs it, so that a package's SQL is one
// file away from its code: a statement one package runs is in that package's file, and one
// that several run (a lock, a shared write) is in the file of one of them. A statement no
// package runs is dead, and goes.
func TestQueriesLiveWithThePackageThatRunsThem(t *testing.T) {
	files, err := filepath.Glob("../../sql/queries/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("sql/queries: %v", err)
	}
	fileOf := map[string]string{}
	for _, f := range files {
		base := filepath.Base(f)
		if owners[base] == "" {
			t.Errorf("sql/queries/%s has no owner in this test's owners", base)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range queryName.FindAllStringSubmatch(string(b), -1) {
			fileOf[m[1]] = base
		}
	}
	runners := map[string]map[string]bool{} // statement -> packages that call it
	err = filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Join("internal", filepath.Dir(strings.TrimPrefix(path, "../"))))
		for _, m := range called.FindAllStringSubmatch(string(b), -1) {
			if _, ok := fileOf[m[1]]; ok {
				if runners[m[1]] == nil {
					runners[m[1]] = map[string]bool{}
				}
				runners[m[1]][pkg] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(fileOf)) {
		file, by := fileOf[name], runners[name]
		switch {
		case len(by) == 0:
			t.Errorf("%s (sql/queries/%s) is run by no package: delete it", name, file)
		case !by[owners[file]]:
			t.Errorf("%s is in sql/queries/%s, %s's, and run only by %s: move it to their file",
				name, file, owners[file], strings.Join(slices.Sorted(maps.Keys(by)), ", "))
		}
	}
}
