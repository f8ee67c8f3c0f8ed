// Command mutate is the project's mutation test: it makes one small change at a time to the
// code of a package (a comparison turned round, && for ||, a negation dropped), runs the tests
// that should notice (of those, the ones that ran the changed line unmutated), and reports
// each change they did not notice (a survivor): a behaviour the suite does not prove. Only
// code the tests run is changed, the source tree is never written (each mutant reaches the
// compiler through go test -overlay), and the tests chosen per package may live elsewhere
// (auth's behaviour is proven by the HTTP API's tests).
//
//	mutate -pkg ./internal/auth -tests ./internal/auth,./internal/httpapi,./internal/console
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// swaps are the operator changes: each to the one that breaks the condition at its edge.
var swaps = map[token.Token]token.Token{
	token.EQL: token.NEQ, token.NEQ: token.EQL,
	token.LSS: token.GEQ, token.GEQ: token.LSS,
	token.GTR: token.LEQ, token.LEQ: token.GTR,
	token.LAND: token.LOR, token.LOR: token.LAND,
}

type mutant struct {
	file     string // absolute
	kind     string // kinds.go
	offset   int    // of the changed text in the file
	old, new string // the text, and what replaces it
	line     int
	col      int
	// covLine and covCol, when set, are where a test must have run for the mutant to be tried
	// against it (a statement's mutant: the method that sends it); allTests, every test that
	// ran the package (a named constant's)
	covLine, covCol int
	allTests        bool
	// source is the changed line (a statement's: its name and line), which identifies the
	// mutant in the file of equivalent survivors
	source string
}

func (m mutant) String() string {
	rel, _ := filepath.Rel(mustGetwd(), m.file)
	return fmt.Sprintf("%s:%d: %s", rel, m.line, m.what())
}

// what is the change, as the file of equivalent survivors names it.
func (m mutant) what() string {
	switch {
	case m.kind == kindError:
		return "skip the error return"
	case m.kind == kindCall:
		return "drop the call"
	case m.new == "":
		return "drop " + strings.TrimSpace(m.old)
	}
	return fmt.Sprintf("%s -> %s", strings.TrimSpace(m.old), strings.TrimSpace(m.new))
}

// id is the mutant as the file of equivalent survivors lists it: its file, its line's text and
// the change, which stay the same when lines above it move.
func (m mutant) id() string {
	rel, _ := filepath.Rel(mustGetwd(), m.file)
	return fmt.Sprintf("%s: %s: %s", filepath.ToSlash(rel), m.source, m.what())
}

func main() {
	pkg := flag.String("pkg", "", "the package to mutate (a directory: ./internal/auth)")
	tests := flag.String("tests", "", "comma-separated test packages that should notice (default: -pkg)")
	files := flag.String("files", "", "only files whose base name matches this regexp")
	lines := flag.String("lines", "", "only mutants on these lines of the files chosen: 38,52,439- (a run cut short, or its timed-out mutants, tried again)")
	timeout := flag.Duration("timeout", 0, "one mutant's build and tests at most (default: 3 x its tests' unmutated time plus 2 minutes, at least 3 minutes)")
	sqlNames := flag.String("sql", "", "with -pkg ./gen/db: mutate the predicates of the statements whose names match this regexp")
	kinds := flag.String("kinds", "", "only these kinds of change, comma-separated: "+strings.Join(allKinds, ","))
	equivalentFile := flag.String("equivalent", "cmd/mutate/equivalent.txt", "the survivors judged equivalent, each with its reason: a survivor not there fails the run")
	scoreFile := flag.String("score", "", "append the run's score (package, tested, killed, equivalent) to this file")
	writeFrom := flag.String("write-scores", "", "write the runs appended to this file by -score into -doc's table, and fail if a score fell (no mutants run)")
	doc := flag.String("doc", "docs/development.md", "the document whose mutation table -write-scores writes")
	flag.Parse()
	if *writeFrom != "" {
		check(writeScores(*writeFrom, *doc))
		return
	}
	if *pkg == "" {
		flag.Usage()
		os.Exit(2)
	}
	testPkgs := strings.Split(*tests, ",")
	if *tests == "" {
		testPkgs = []string{*pkg}
	}
	only := regexp.MustCompile(*files)
	tmp, err := os.MkdirTemp("", "mutate-")
	check(err)
	defer os.RemoveAll(tmp)

	// the unmutated tests, one at a time: each must pass, and what each runs of pkg chooses
	// the tests a mutant is tried against (and only code some test runs is mutated)
	runs := coverageByTest(tmp, *pkg, testPkgs)
	covered := map[string][]block{}
	for _, r := range runs {
		for file, blocks := range r.covered {
			covered[file] = append(covered[file], blocks...)
		}
	}
	var sqlOnly *regexp.Regexp
	if *sqlNames != "" {
		sqlOnly = regexp.MustCompile(*sqlNames)
	}
	mutants := findMutants(*pkg, only, sqlOnly, covered)
	if *kinds != "" {
		keep := strings.Split(*kinds, ",")
		mutants = slices.DeleteFunc(mutants, func(m mutant) bool { return !slices.Contains(keep, m.kind) })
	}
	equivalent, err := readEquivalent(*equivalentFile)
	check(err)
	if *lines != "" {
		keep, err := lineSet(*lines)
		check(err)
		mutants = slices.DeleteFunc(mutants, func(m mutant) bool { return !keep(m.line) })
	}
	fmt.Printf("%d mutants in covered code of %s, each against the tests of %s that run it\n", len(mutants), *pkg, strings.Join(testPkgs, " "))

	var survived, unbuilt, unrun []mutant
	for i, m := range mutants {
		chosen := runsOf(runs, m)
		if chosen.tests == 0 { // a statement none of the tests sends: nothing could notice
			unrun = append(unrun, m)
			fmt.Printf("[%d/%d] %s: not run by the tests\n", i+1, len(mutants), m)
			continue
		}
		overlay := writeMutant(tmp, m)
		limit := *timeout
		if limit == 0 {
			limit = max(3*chosen.took+2*time.Minute, 3*time.Minute) // the build, then the tests
		}
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		out, err := goTest(ctx, chosen.pkgs, "-overlay="+overlay, "-failfast", "-run", chosen.pattern)
		timedOut := ctx.Err() != nil
		cancel()
		verdict := "killed"
		switch {
		case err == nil:
			verdict, survived = "SURVIVED", append(survived, m)
		case timedOut:
			verdict = "killed (timed out)"
		case bytes.Contains(out, []byte(patience.String())):
			verdict = "killed (a wait ran out)"
		case bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")):
			verdict, unbuilt = "does not compile", append(unbuilt, m)
		}
		fmt.Printf("[%d/%d] %s: %s (%d tests)\n", i+1, len(mutants), m, verdict, chosen.tests)
	}
	tested := len(mutants) - len(unbuilt) - len(unrun)
	if len(unrun) > 0 {
		fmt.Printf("\n%d mutants of statements no test chosen sends, not tried: write the test that sends them\n", len(unrun))
	}
	var unexplained []mutant
	judged := 0
	for _, m := range survived {
		if why, ok := equivalent[m.id()]; ok {
			judged++
			fmt.Printf("  equivalent: %s (%s)\n", m, why)
		} else {
			unexplained = append(unexplained, m)
		}
	}
	killed := tested - len(survived)
	fmt.Printf("\n%s: %d mutants tested, %d killed, %d survived (%d judged equivalent)", *pkg, tested, killed, len(survived), judged)
	if tested > judged {
		fmt.Printf(": %.1f%% killed of those that change behaviour", 100*float64(killed)/float64(tested-judged))
	}
	fmt.Println()
	for _, m := range unexplained {
		fmt.Printf("  survivor: %s\n    (if it changes nothing, add to %s:  %s ## why)\n", m, *equivalentFile, m.id())
	}
	if *scoreFile != "" {
		name := *pkg
		if *sqlNames != "" {
			name += " (sql " + *sqlNames + ")"
		}
		f, err := os.OpenFile(*scoreFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		check(err)
		fmt.Fprintf(f, "%s\t%d\t%d\t%d\n", name, tested, killed, judged)
		check(f.Close())
	}
	if len(unexplained) > 0 {
		os.Exit(1)
	}
}

var allKinds = []string{kindSwap, kindNot, kindError, kindCall, kindNumber, kindSQL}

// readEquivalent reads the survivors judged equivalent: "id ## reason" a line (mutant.id),
// with # comments. No file is none judged.
func readEquivalent(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for i, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, why, ok := strings.Cut(line, " ## ")
		if !ok || strings.TrimSpace(why) == "" {
			return nil, fmt.Errorf("%s:%d: a survivor without its reason (id ## why)", path, i+1)
		}
		out[strings.TrimSpace(id)] = strings.TrimSpace(why)
	}
	return out, nil
}

// lineSet reads -lines: line numbers and ranges (10-20), a range without its end open.
func lineSet(spec string) (func(int) bool, error) {
	type span struct{ from, to int }
	var spans []span
	for _, part := range strings.Split(spec, ",") {
		from, to, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(from)
		if err != nil {
			return nil, fmt.Errorf("-lines %q: %q is not a line", spec, part)
		}
		b := a
		if isRange {
			b = int(^uint(0) >> 1)
			if to != "" {
				if b, err = strconv.Atoi(to); err != nil {
					return nil, fmt.Errorf("-lines %q: %q is not a range", spec, part)
				}
			}
		}
		spans = append(spans, span{a, b})
	}
	return func(line int) bool {
		return slices.ContainsFunc(spans, func(s span) bool { return line >= s.from && line <= s.to })
	}, nil
}

// patience is how long the tests wait for what must happen (testkit.Patience), shorter than
// their three minutes: a mutant that keeps a delivery from arriving is told from one that
// changes nothing in a minute, and its verdict says a wait ran out.
const patience = time.Minute

// goTest runs go test on pkgs, isolated, and stops it at the first test that fails:
// -failfast starts no test after it, but the tests already running beside it (t.Parallel)
// would run on, those a mutant hangs waiting out their patience. go test -json streams each
// package's output as its tests run, where plain go test holds it until the package ends.
func goTest(ctx context.Context, pkgs []string, flags ...string) (out []byte, err error) {
	args := append([]string{"test", "-count=1", "-json"}, flags...)
	cmd := exec.CommandContext(ctx, goCommand(), append(args, pkgs...)...)
	cmd.WaitDelay = 10 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	failed := false
	err = isolated(cmd, func() error {
		if err := cmd.Start(); err != nil {
			return err
		}
		lines := bufio.NewScanner(stdout)
		lines.Buffer(make([]byte, 64<<10), 16<<20)
		for lines.Scan() {
			out = append(append(out, lines.Bytes()...), '\n')
			if !failed && bytes.Contains(lines.Bytes(), []byte(`"Output":"--- FAIL`)) {
				failed = true
				cmd.Process.Kill() //nolint:errcheck // gone already is as good
			}
		}
		return cmd.Wait()
	})
	return append(out, stderr.Bytes()...), err
}

// isolated runs cmd with a TMPDIR and a directory for the test clusters of its own (in
// /dev/shm, where the tests put them: pgembed.ScratchDir), and afterwards stops whatever it
// left running there: a run cut off at its timeout never reaches its cleanups, and its test
// PostgreSQL servers went on, loading the machine for the mutants after it.
func isolated(cmd *exec.Cmd, run func() error) error {
	var dirs []string
	defer func() {
		for _, dir := range dirs {
			exec.Command("pkill", "-f", "--", dir).Run() //nolint:errcheck // none left is an error
			os.RemoveAll(dir)
		}
	}()
	scratch := "/dev/shm"
	if _, err := os.Stat(scratch); err != nil {
		scratch = "" // the temp dir
	}
	for _, root := range []string{"", scratch} {
		dir, err := os.MkdirTemp(root, "mutant-")
		if err != nil {
			return err
		}
		dirs = append(dirs, dir)
		if err := os.Chmod(dir, 0o1777); err != nil { // the test servers run as another user
			return err
		}
	}
	// the tests make test runs, the browser's among them: a change only Chromium notices is noticed
	cmd.Env = append(os.Environ(), "TMPDIR="+dirs[0], "CONTACTD_SCRATCH_DIR="+dirs[1], "CONTACTD_CONSUMER_TESTS=1",
		"CONTACTD_TEST_PATIENCE="+patience.String())
	return run()
}

func goCommand() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// block is a covered range of a file, in lines and columns (go tool cover's profile).
type block struct{ startLine, startCol, endLine, endCol int }

func (b block) holds(line, col int) bool {
	return (line > b.startLine || line == b.startLine && col >= b.startCol) &&
		(line < b.endLine || line == b.endLine && col <= b.endCol)
}

// readCoverage is the blocks the tests ran, by file base name within the package.
func readCoverage(profile string) map[string][]block {
	f, err := os.Open(profile)
	check(err)
	defer f.Close()
	covered := map[string][]block{}
	line := regexp.MustCompile(`^(.+):(\d+)\.(\d+),(\d+)\.(\d+) \d+ (\d+)$`)
	s := bufio.NewScanner(f)
	for s.Scan() {
		m := line.FindStringSubmatch(s.Text())
		if m == nil || m[6] == "0" {
			continue
		}
		n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
		name := filepath.Base(m[1])
		covered[name] = append(covered[name], block{n(2), n(3), n(4), n(5)})
	}
	return covered
}

func findMutants(pkg string, only, sqlOnly *regexp.Regexp, covered map[string][]block) []mutant {
	dir, err := filepath.Abs(pkg)
	check(err)
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	check(err)
	sort.Strings(names)
	var mutants []mutant
	fset := token.NewFileSet()
	for _, name := range names {
		base := filepath.Base(name)
		if strings.HasSuffix(base, "_test.go") || !only.MatchString(base) {
			continue
		}
		src, err := os.ReadFile(name)
		check(err)
		file, err := parser.ParseFile(fset, name, src, 0)
		check(err)
		if sqlOnly != nil {
			mutants = append(mutants, sqlMutants(fset, name, src, file, sqlOnly)...)
			continue
		}
		isCovered := func(p token.Pos) bool {
			pos := fset.Position(p)
			for _, b := range covered[base] {
				if b.holds(pos.Line, pos.Column) {
					return true
				}
			}
			return false
		}
		mutants = append(mutants, goMutants(fset, name, src, file, isCovered)...)
	}
	return mutants
}

// writeMutant writes the mutated file and an overlay that puts it in place of the original.
func writeMutant(tmp string, m mutant) string {
	src, err := os.ReadFile(m.file)
	check(err)
	mutated := append(append(append([]byte{}, src[:m.offset]...), m.new...), src[m.offset+len(m.old):]...)
	path := filepath.Join(tmp, "mutant.go")
	check(os.WriteFile(path, mutated, 0o644))
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {m.file: path}})
	check(err)
	overlayPath := filepath.Join(tmp, "overlay.json")
	check(os.WriteFile(overlayPath, overlay, 0o644))
	return overlayPath
}

func mustGetwd() string {
	wd, err := os.Getwd()
	check(err)
	return wd
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
}
