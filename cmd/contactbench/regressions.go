package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// regressionShare is how far a ratio may fall below the documented run's before the bench
// calls it a regression: the ratios move a few percent from run to run on one machine.
const regressionShare = 0.85

// printRegressions compares the ratios of rep (each workload against its baseline, contactd's
// deliveries against the floor's) with those of the run make bench-doc last wrote into doc,
// and prints REGRESSED for each that fell more than 15 %. Both are read from the report as
// printed, so whatever ratio the report shows is compared.
func printRegressions(w io.Writer, rep report, doc string) error {
	if doc == "" {
		return nil
	}
	b, err := os.ReadFile(doc)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(w, "regressions: %s not found, nothing compared\n", doc)
		return nil
	}
	if err != nil {
		return err
	}
	_, documented, ok := strings.Cut(string(b), "<!-- bench:begin")
	documented, _, _ = strings.Cut(documented, "<!-- bench:end")
	if !ok {
		fmt.Fprintf(w, "regressions: %s has no bench run, nothing compared\n", doc)
		return nil
	}
	var now bytes.Buffer
	printReport(&now, rep)
	regressed, compared := compareRatios(reportRatios(documented), reportRatios(now.String()))
	for _, r := range regressed {
		fmt.Fprintln(w, "REGRESSED", r)
	}
	fmt.Fprintf(w, "regressions: %d ratios compared with %s's last run, %d fell more than %.0f %%\n",
		compared, doc, len(regressed), 100*(1-regressionShare))
	return nil
}

// compareRatios says which ratios of now fell below regressionShare of was, and how many
// the two runs share.
func compareRatios(was, now map[string]float64) (regressed []string, compared int) {
	for _, k := range slices.Sorted(maps.Keys(now)) {
		before, ok := was[k]
		if !ok || before <= 0 {
			continue
		}
		compared++
		if now[k] < regressionShare*before {
			regressed = append(regressed, fmt.Sprintf("%s: %.2f, was %.2f (%+.0f %%)", k, now[k], before, 100*(now[k]/before-1)))
		}
	}
	return regressed, compared
}

var timesBaseline = regexp.MustCompile(`^([0-9.]+) × (\S+)$`)

// reportRatios reads the ratios of a printed report: a workload's "x × baseline" cell, and
// the last column of the deliveries table (contactd / floor), by its row's name.
func reportRatios(text string) map[string]float64 {
	out := map[string]float64{}
	floorTable := false
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			floorTable = false
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) < 2 {
			continue
		}
		if cells[len(cells)-1] == "contactd / floor" {
			floorTable = true
			continue
		}
		if m := timesBaseline.FindStringSubmatch(cells[1]); m != nil {
			if v, err := strconv.ParseFloat(m[1], 64); err == nil {
				out[cells[0]+" (× "+m[2]+")"] = v
			}
		} else if floorTable {
			if v, err := strconv.ParseFloat(cells[len(cells)-1], 64); err == nil {
				out["webhooks, "+cells[0]+" (contactd / floor)"] = v
			}
		}
	}
	return out
}
