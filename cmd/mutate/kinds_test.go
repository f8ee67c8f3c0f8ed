package main

import (
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const sample = `package p

const MaxTags = 100

func f(tags []string, q Q) error {
	if len(tags) > MaxTags {
		return nil
	}
	err := q.Write(tags)
	if err != nil {
		return err
	}
	q.Wake()
	log.Info("wrote")
	return nil
}
`

// Each kind of change is found where it applies, with its identity (file, line text, change).
func TestGoMutantsOfEveryKind(t *testing.T) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "/x/p.go", sample, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range goMutants(fset, "/x/p.go", []byte(sample), file, func(token.Pos) bool { return true }) {
		mutated := sample[:m.offset] + m.new + sample[m.offset+len(m.old):]
		got = append(got, m.kind+" | "+m.source+" | "+m.what()+" | "+sourceLine([]byte(mutated), m.offset))
	}
	want := []string{
		"number | const MaxTags = 100 | 100 -> 101 | const MaxTags = 101",
		"number | const MaxTags = 100 | 100 -> 100000 | const MaxTags = 100000",
		"swap | if len(tags) > MaxTags { | > -> <= | if len(tags) <= MaxTags {",
		"error | if err != nil { | skip the error return | if false && err != nil {",
		"swap | if err != nil { | != -> == | if err == nil {",
		"call | q.Wake() | drop the call | {}",
	}
	if !slices.Equal(got, want) {
		t.Errorf("mutants\n%q\nwant\n%q", got, want)
	}
}

const generated = "package db\n\nconst thing = `-- name: ThingGet :one\nSELECT a FROM t\nWHERE a = $1 AND b IS NOT NULL -- a = b here is a comment\n  AND NOT EXISTS (SELECT 1)\n`\n\nfunc (q *Queries) ThingGet() { q.db.QueryRow(thing) }\n"

// A statement's predicates change, not its comments, each tried where its method runs.
func TestSQLMutantsOfAStatement(t *testing.T) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "/x/db.go", generated, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range sqlMutants(fset, "/x/db.go", []byte(generated), file, regexp.MustCompile(`^Thing`)) {
		if m.covLine != 9 {
			t.Errorf("%s: tried where line %d runs, want 9 (the method)", m.what(), m.covLine)
		}
		got = append(got, m.source+" | "+m.what())
	}
	want := []string{
		"ThingGet: WHERE a = $1 AND b IS NOT NULL | = -> <>",
		"ThingGet: WHERE a = $1 AND b IS NOT NULL | AND -> OR",
		"ThingGet: WHERE a = $1 AND b IS NOT NULL | IS NOT NULL -> IS NULL",
		"ThingGet: AND NOT EXISTS (SELECT 1) | AND -> OR",
		"ThingGet: AND NOT EXISTS (SELECT 1) | drop NOT",
	}
	if !slices.Equal(got, want) {
		t.Errorf("mutants\n%q\nwant\n%q", got, want)
	}
}

// The table keeps a row per target, takes a run's new rows and higher scores, and keeps the
// bar when a score falls, which fails the run.
func TestScoresOnlyGoUp(t *testing.T) {
	dir := t.TempDir()
	doc, runs := dir+"/dev.md", dir+"/runs"
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(doc, "intro\n"+scoresBegin+"\n| target | mutants tested | killed | judged equivalent | killed of those that change behaviour |\n|---|---|---|---|---|\n"+
		"| `-pkg ./a` | 10 | 8 | 0 | 80.0% |\n| `-pkg ./b` | 10 | 9 | 0 | 90.0% |\n"+scoresEnd+"\noutro\n")
	write(runs, "-pkg ./a\t10\t9\t1\n-pkg ./c (sql ^(A|B))\t4\t4\t0\n")
	if err := writeScores(runs, doc); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(doc)
	want := "intro\n" + scoresBegin + "\n| target | mutants tested | killed | judged equivalent | killed of those that change behaviour |\n|---|---|---|---|---|\n" +
		"| `-pkg ./a` | 10 | 9 | 1 | 100.0% |\n| `-pkg ./b` | 10 | 9 | 0 | 90.0% |\n| `-pkg ./c (sql ^(A\\|B))` | 4 | 4 | 0 | 100.0% |\n" + scoresEnd + "\noutro\n"
	if string(b) != want {
		t.Errorf("doc\n%s\nwant\n%s", b, want)
	}
	write(runs, "-pkg ./b\t10\t8\t0\n")
	if err := writeScores(runs, doc); err == nil || !strings.Contains(err.Error(), "-pkg ./b: 80.0%, was 90.0%") {
		t.Errorf("a fallen score: %v", err)
	}
	write(runs, "-pkg ./c (sql ^(A|B))\t4\t4\t0\n") // the escaped row is read back as its own
	if err := writeScores(runs, doc); err != nil {
		t.Error(err)
	}
	if b2, _ := os.ReadFile(doc); string(b2) != want {
		t.Errorf("the table changed with a fallen score:\n%s", b2)
	}
}
