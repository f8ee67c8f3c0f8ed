package main

import (
	"maps"
	"slices"
	"testing"
)

const documentedRun = `contactbench 2026-11-29 — 2 cores — c=64, 100000 contacts seeded

| workload | vs baseline | req/s (absolute) | p50 |
|---|---|---|---|
| get-by-id | 1.03 × baseline-get | 16451 | 3.5 ms |
| create | 0.25 × baseline-insert | 2512 | 23.7 ms |
| mixed | — | 7134 | 6.2 ms |

| deliveries/s | contactd | the floor | contactd / floor |
|---|---|---|---|
| sent alone, from a backlog | 5066 | 6088 | 0.83 |
| producers and sending at once (measured) | 4117 | 5098 | 0.81 |

| CPU ms per delivery | contactd | PostgreSQL |
|---|---|---|
| contactd: producers and sending at once | 0.130 | 0.212 |
`

// The ratios are read from a report's tables, and a fall of more than 15 % is a regression:
// 0.81 -> 0.60 is, 0.25 -> 0.22 (-12 %) is not, a ratio only one run has is not compared.
func TestRegressionsCompareTheReportsRatios(t *testing.T) {
	was := reportRatios(documentedRun)
	want := map[string]float64{
		"get-by-id (× baseline-get)": 1.03, "create (× baseline-insert)": 0.25,
		"webhooks, sent alone, from a backlog (contactd / floor)":               0.83,
		"webhooks, producers and sending at once (measured) (contactd / floor)": 0.81,
	}
	if !maps.Equal(was, want) {
		t.Fatalf("ratios read %v\nwant %v", was, want)
	}
	now := map[string]float64{"get-by-id (× baseline-get)": 1.10, "create (× baseline-insert)": 0.22,
		"webhooks, producers and sending at once (measured) (contactd / floor)": 0.60, "create-unsubscribed (× baseline-insert)": 0.30}
	regressed, compared := compareRatios(was, now)
	if wantR := []string{"webhooks, producers and sending at once (measured) (contactd / floor): 0.60, was 0.81 (-26 %)"}; compared != 3 || !slices.Equal(regressed, wantR) {
		t.Errorf("compared %d, regressed %q; want 3 and %q", compared, regressed, wantR)
	}
}
