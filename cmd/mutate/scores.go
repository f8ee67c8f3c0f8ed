package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
)

// score is one target's run: mutants tested, killed, and survivors judged equivalent.
type score struct {
	target                     string
	tested, killed, equivalent int
}

// percent is the share of the mutants that change behaviour the tests killed.
func (s score) percent() float64 {
	if s.tested-s.equivalent <= 0 {
		return 100
	}
	return 100 * float64(s.killed) / float64(s.tested-s.equivalent)
}

const (
	scoresBegin = "<!-- mutation:begin: written by make mutation; edit the command, not this text -->"
	scoresEnd   = "<!-- mutation:end -->"
)

// writeScores puts the runs of the file made by -score into the table between doc's mutation
// markers, a row per target, keeping the rows of targets not run this time. A score lower than
// the table's is an error, and the table keeps the higher one: the score only goes up (a new
// test, or a survivor judged equivalent with its reason, never a weaker suite).
func writeScores(runsFile, doc string) error {
	b, err := os.ReadFile(runsFile)
	if err != nil {
		return err
	}
	var runs []score
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			return fmt.Errorf("%s: %q is not target, tested, killed, equivalent", runsFile, line)
		}
		s := score{target: f[0]}
		for i, p := range []*int{&s.tested, &s.killed, &s.equivalent} {
			if *p, err = strconv.Atoi(f[i+1]); err != nil {
				return fmt.Errorf("%s: %q: %w", runsFile, line, err)
			}
		}
		runs = append(runs, s)
	}
	text, err := os.ReadFile(doc)
	if err != nil {
		return err
	}
	before, rest, ok := strings.Cut(string(text), scoresBegin)
	table, after, ok2 := strings.Cut(rest, scoresEnd)
	if !ok || !ok2 {
		return fmt.Errorf("%s has no mutation markers", doc)
	}
	rows := map[string]score{}
	for _, line := range strings.Split(table, "\n") {
		cells := cellsOf(line)
		if len(cells) != 5 {
			continue
		}
		s := score{target: strings.ReplaceAll(strings.Trim(strings.TrimSpace(cells[0]), "`"), `\|`, "|")}
		if s.tested, err = strconv.Atoi(strings.TrimSpace(cells[1])); err != nil {
			continue // the header
		}
		s.killed, _ = strconv.Atoi(strings.TrimSpace(cells[2]))
		s.equivalent, _ = strconv.Atoi(strings.TrimSpace(cells[3]))
		rows[s.target] = s
	}
	var fell []string
	for _, r := range runs {
		if was, ok := rows[r.target]; ok && r.percent() < was.percent()-0.05 {
			fell = append(fell, fmt.Sprintf("%s: %.1f%%, was %.1f%%", r.target, r.percent(), was.percent()))
			continue // the table keeps the bar
		}
		rows[r.target] = r
	}
	var out strings.Builder
	out.WriteString("\n| target | mutants tested | killed | judged equivalent | killed of those that change behaviour |\n|---|---|---|---|---|\n")
	for _, name := range slices.Sorted(maps.Keys(rows)) {
		s := rows[name]
		share := "—" // nothing tried: no test chosen runs its code
		if s.tested > s.equivalent {
			share = fmt.Sprintf("%.1f%%", s.percent())
		}
		fmt.Fprintf(&out, "| `%s` | %d | %d | %d | %s |\n", strings.ReplaceAll(s.target, "|", `\|`), s.tested, s.killed, s.equivalent, share)
	}
	if err := os.WriteFile(doc, []byte(before+scoresBegin+out.String()+scoresEnd+after), 0o644); err != nil {
		return err
	}
	if len(fell) > 0 {
		return fmt.Errorf("the mutation score fell: %s", strings.Join(fell, "; "))
	}
	return nil
}

// cellsOf splits a table row on its pipes, but not on an escaped one (\|, a target's regexp).
func cellsOf(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(strings.TrimSuffix(line, "|"), "|")
	var cells []string
	start := 0
	for i := 0; i < len(line); i++ {
		if line[i] == '|' && (i == 0 || line[i-1] != '\\') {
			cells = append(cells, line[start:i])
			start = i + 1
		}
	}
	return append(cells, line[start:])
}
