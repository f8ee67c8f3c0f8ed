package store_test

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A rolling upgrade runs the previous release beside this one on this release's schema
// (docs/operations.md, "Rolling upgrades"): migrations expand, and contract only once no
// running release needs what they remove. TestPreviousReleaseRunsOnThisSchema checks it
// against the previous release itself, read from git — the parent of the commit that set
// openapi.yaml's info.version to this release's:
//   - every statement the previous release's binary can send (its gen/db, as generated)
//     prepares on a database migrated to this release: no table, column, function or type it
//     uses is gone or changed;
//   - its migrations are this release's first ones, unchanged (an applied migration is never
//     edited);
//   - no migration since adds a NOT NULL column without a default (the previous release's
//     inserts do not set it).
func TestPreviousReleaseRunsOnThisSchema(t *testing.T) {
	t.Parallel()
	prev, version := previousRelease(t)
	t.Logf("previous release: %s (this one is %s)", prev, version)

	queries := map[string]string{}
	for _, f := range gitLines(t, "ls-tree", "--name-only", prev, "gen/db/") {
		if !strings.HasSuffix(f, ".go") {
			continue
		}
		src := git(t, "show", prev+":"+f)
		for name, sql := range queriesIn(t, f, src) {
			queries[name] = sql
		}
	}
	if len(queries) < 50 {
		t.Fatalf("found %d queries in the previous release's gen/db", len(queries))
	}
	conn := connect(t)
	ctx := context.Background()
	var failed []string
	i := 0
	for name, sql := range queries {
		i++
		stmt := fmt.Sprintf("prev%d", i)
		if _, err := conn.Exec(ctx, "PREPARE "+stmt+" AS "+sql); err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if _, err := conn.Exec(ctx, "DEALLOCATE "+stmt); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range failed {
		t.Errorf("the previous release's %s", f)
	}

	// its migrations: this release's first ones, unchanged
	prevMigrations := map[string]bool{}
	for _, f := range gitLines(t, "ls-tree", "--name-only", prev, "sql/migrations/") {
		if !strings.HasSuffix(f, ".sql") {
			continue
		}
		prevMigrations[filepath.Base(f)] = true
		now, err := os.ReadFile(filepath.Join("../../..", f))
		if err != nil {
			t.Errorf("%s of the previous release is gone: %v", f, err)
			continue
		}
		if !bytes.Equal(now, []byte(git(t, "show", prev+":"+f))) {
			t.Errorf("%s was edited after the previous release applied it: write a new migration", f)
		}
	}
	// the ones since: no NOT NULL column without a default
	current, err := filepath.Glob("../../../sql/migrations/*.sql")
	if err != nil || len(current) == 0 {
		t.Fatalf("sql/migrations: %v", err)
	}
	for _, f := range current {
		if prevMigrations[filepath.Base(f)] {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		up, _, _ := strings.Cut(string(src), "-- +goose Down")
		for _, m := range addColumn.FindAllString(up, -1) {
			if strings.Contains(strings.ToUpper(m), "NOT NULL") && !strings.Contains(strings.ToUpper(m), "DEFAULT") {
				t.Errorf("%s adds %q: NOT NULL without a default, which the previous release's inserts do not set", filepath.Base(f), m)
			}
		}
	}
}

var addColumn = regexp.MustCompile(`(?is)ADD\s+COLUMN\s+[^,;]+`)

// previousRelease is the commit before the one that set openapi.yaml's info.version to this
// release's, and this release's version. A shallow clone is deepened to find it; not finding
// it fails the test (nothing checked is not a pass).
func previousRelease(t *testing.T) (commit, version string) {
	t.Helper()
	spec, err := os.ReadFile("../../../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	version = specVersion(string(spec))
	if strings.TrimSpace(git(t, "rev-parse", "--is-shallow-repository")) == "true" {
		_ = exec.Command("git", "-C", "../../..", "fetch", "-q", "--deepen=500", "origin").Run()
	}
	var bump string
	for _, c := range gitLines(t, "log", "--format=%H", "HEAD", "--", "openapi.yaml") {
		if specVersion(git(t, "show", c+":openapi.yaml")) != version {
			break
		}
		bump = c
	}
	if bump == "" {
		t.Fatalf("no commit has openapi.yaml at version %s: commit this release's spec first", version)
	}
	parents := gitLines(t, "rev-list", "--parents", "-n", "1", bump)
	fields := strings.Fields(strings.Join(parents, " "))
	if len(fields) < 2 {
		t.Fatalf("the commit that set version %s (%s) has no parent in this clone: fetch more history", version, bump)
	}
	return fields[1], version
}

var versionLine = regexp.MustCompile(`(?m)^  version:\s*(\S+)`)

func specVersion(spec string) string {
	if m := versionLine.FindStringSubmatch(spec); m != nil {
		return m[1]
	}
	return ""
}

func git(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", "../../.."}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

func gitLines(t *testing.T, args ...string) []string {
	t.Helper()
	return strings.Fields(git(t, args...))
}

// queriesIn reads the sqlc queries (constants starting "-- name: ") of one generated file.
func queriesIn(t *testing.T, name, src string) map[string]string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), name, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	ast.Inspect(file, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err == nil && strings.HasPrefix(s, "-- name: ") {
			out[strings.Fields(s)[2]] = s
		}
		return true
	})
	return out
}
