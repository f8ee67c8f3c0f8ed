package main

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// testRun is one top-level test of one package, run alone and unmutated: the blocks of the
// mutated package it ran, and how long it took.
type testRun struct {
	pkg, name string
	covered   map[string][]block
	took      time.Duration
}

// coverageByTest builds each test package once with coverage of pkg and runs each of its tests
// alone, so that a mutant is tried against the tests that run its line rather than every test
// of every package (most of the HTTP API's tests never reach a given line of auth). A test that
// fails alone stops the run: the suite must pass before a mutant can tell it anything.
func coverageByTest(tmp, pkg string, testPkgs []string) []testRun {
	var runs []testRun
	for i, tp := range testPkgs {
		bin := filepath.Join(tmp, fmt.Sprintf("tests%d", i))
		if out, err := exec.Command(goCommand(), "test", "-c", "-cover", "-covermode=set", "-coverpkg="+pkg, "-o", bin, tp).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build the tests of %s:\n%s\n", tp, out)
			os.Exit(1)
		}
		if _, err := os.Stat(bin); err != nil {
			continue // a package without tests
		}
		dir := packageDir(tp)
		names := listTests(bin, dir)
		start := time.Now()
		for _, name := range names {
			profile := filepath.Join(tmp, "cover.out")
			began := time.Now()
			cmd := exec.Command(bin, "-test.run=^"+name+"$", "-test.count=1", "-test.coverprofile="+profile)
			cmd.Dir = dir
			if out, err := isolatedOutput(cmd); err != nil {
				fmt.Fprintf(os.Stderr, "%s of %s fails without a mutant:\n%s\n", name, tp, out)
				os.Exit(1)
			}
			runs = append(runs, testRun{pkg: tp, name: name, covered: readCoverage(profile), took: time.Since(began)})
		}
		fmt.Printf("%s: %d tests run alone for what each runs of %s (%v)\n", tp, len(names), pkg, time.Since(start).Round(time.Second))
	}
	return runs
}

// listTests is the top-level tests of a test binary.
func listTests(bin, dir string) []string {
	cmd := exec.Command(bin, "-test.list=^Test")
	cmd.Dir = dir
	out, err := isolatedOutput(cmd)
	if err != nil {
		fmt.Fprintf(os.Stderr, "list the tests of %s:\n%s\n", bin, out)
		os.Exit(1)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "Test") {
			names = append(names, strings.TrimSpace(line))
		}
	}
	return names
}

func packageDir(pkg string) string {
	out, err := exec.Command(goCommand(), "list", "-f", "{{.Dir}}", pkg).Output()
	check(err)
	return strings.TrimSpace(string(out))
}

// choice is the tests a mutant is tried against: the packages to test, a -run pattern naming
// the tests, how many there are and how long they took unmutated.
type choice struct {
	pkgs    []string
	pattern string
	tests   int
	took    time.Duration
}

// runsOf chooses the tests that ran the mutant's code unmutated (a named constant's: every
// test that ran the package).
func runsOf(runs []testRun, m mutant) choice {
	base := filepath.Base(m.file)
	line, col := m.line, m.col
	if m.covLine > 0 {
		line, col = m.covLine, m.covCol
	}
	var c choice
	pkgs, names := map[string]bool{}, map[string]bool{}
	for _, r := range runs {
		if m.allTests {
			if len(r.covered) > 0 {
				pkgs[r.pkg], names[r.name] = true, true
				c.tests++
				c.took += r.took
			}
			continue
		}
		for _, b := range r.covered[base] {
			if b.holds(line, col) {
				pkgs[r.pkg], names[r.name] = true, true
				c.tests++
				c.took += r.took
				break
			}
		}
	}
	c.pkgs, c.pattern = slices.Sorted(maps.Keys(pkgs)), "^("+strings.Join(slices.Sorted(maps.Keys(names)), "|")+")$"
	return c
}

// isolatedOutput runs cmd isolated and returns its combined output.
func isolatedOutput(cmd *exec.Cmd) (out []byte, err error) {
	err = isolated(cmd, func() error {
		out, err = cmd.CombinedOutput()
		return err
	})
	return out, err
}
