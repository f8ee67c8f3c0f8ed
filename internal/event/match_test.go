package event_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/contactd/contactd/internal/event"
	"github.com/contactd/contactd/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// The Go matcher and PostgreSQL's lax SQL/JSON path mode, which the previous release
// evaluates each filter's compiled path in, answer alike on random filters and events built
// from a small pool of members and values (so that they often meet): nested arrays, numbers
// spelled several ways, null, types that do not compare.
func TestMatcherAgreesWithPostgreSQL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testkit.Cluster().URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rng := rand.New(rand.NewPCG(7, 11))
	const pairs = 4000
	var paths, payloads []string
	var want []bool
	for len(paths) < pairs {
		raw := randomFilter(rng, 1)
		f, ok, err := event.ParseFilter("filter", raw)
		if err != nil || !ok {
			continue // a random filter may be past a limit
		}
		ev := map[string]any{"eventType": "TagsAdded", "data": randomValue(rng, 0)}
		js, _ := json.Marshal(ev)
		p, err := event.ParsePayload("event", js)
		if err != nil {
			continue
		}
		got, _, err := f.Match(p)
		if err != nil {
			t.Fatalf("%s on %s: %v", f.JSON, js, err)
		}
		paths, payloads, want = append(paths, f.Path), append(payloads, string(js)), append(want, got)
	}
	rows, err := conn.Query(ctx, `SELECT coalesce(jsonb_path_match(p::jsonb, f::jsonpath, '{}', true), false)
		FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(f, p, i) ORDER BY i`, paths, payloads)
	if err != nil {
		t.Fatal(err)
	}
	pg, err := pgx.CollectRows(rows, pgx.RowTo[bool])
	if err != nil {
		t.Fatal(err)
	}
	matched, differ := 0, 0
	for i := range want {
		if want[i] {
			matched++
		}
		if pg[i] != want[i] {
			if differ++; differ <= 10 {
				t.Errorf("path %s on %s: PostgreSQL %v, Go %v", paths[i], payloads[i], pg[i], want[i])
			}
		}
	}
	if differ > 0 {
		t.Errorf("%d of %d pairs differ", differ, len(want))
	}
	if matched < pairs/10 || matched > pairs*9/10 {
		t.Errorf("%d of %d pairs matched: the pools should make both answers common", matched, pairs)
	}
}

var (
	poolMembers = []string{"a", "b", "c"}
	poolValues  = []any{"x", "y", "", "X", "é", json.Number("1"), json.Number("1.0"), json.Number("10"), json.Number("1e1"),
		json.Number("-2.5"), json.Number("0"), json.Number("-0"), json.Number("12345678901234567890123"), true, false, nil}
	filterValues = []any{"x", "y", "", "é", 1.0, 10.0, -2.5, 0.0, 1.2345678901234568e22, true, false, nil}
	orderValues  = []any{"x", "", "Y", 1.0, 10.0, -2.5, 0.0}
)

func randomValue(rng *rand.Rand, depth int) any {
	switch n := rng.IntN(10); {
	case depth < 4 && n < 3:
		obj := map[string]any{}
		for range rng.IntN(3) + 1 {
			obj[poolMembers[rng.IntN(len(poolMembers))]] = randomValue(rng, depth+1)
		}
		return obj
	case depth < 4 && n < 6:
		arr := make([]any, rng.IntN(4))
		for i := range arr {
			arr[i] = randomValue(rng, depth+1)
		}
		return arr
	default:
		return poolValues[rng.IntN(len(poolValues))]
	}
}

func randomPath(rng *rand.Rand) string {
	segs := []string{"data"}
	for range rng.IntN(3) {
		segs = append(segs, poolMembers[rng.IntN(len(poolMembers))])
	}
	if rng.IntN(20) == 0 {
		return "eventType"
	}
	return strings.Join(segs, ".")
}

func randomFilter(rng *rand.Rand, depth int) map[string]any {
	f := map[string]any{}
	for range rng.IntN(2) + 1 {
		switch n := rng.IntN(10); {
		case depth < 3 && n == 0:
			f["$not"] = randomFilter(rng, depth+1)
		case depth < 3 && n == 1:
			f[[]string{"$and", "$or"}[rng.IntN(2)]] = []any{randomFilter(rng, depth+1), randomFilter(rng, depth+1)}
		default:
			f[randomPath(rng)] = randomCondition(rng)
		}
	}
	return f
}

func randomCondition(rng *rand.Rand) any {
	pick := func(vs []any) any { return vs[rng.IntN(len(vs))] }
	switch rng.IntN(8) {
	case 0:
		return pick(filterValues)
	case 1:
		return map[string]any{[]string{"$eq", "$neq"}[rng.IntN(2)]: pick(filterValues)}
	case 2, 3:
		vals := []any{pick(filterValues), pick(filterValues), pick(filterValues)}
		return map[string]any{[]string{"$in", "$nin"}[rng.IntN(2)]: vals}
	case 4, 5:
		return map[string]any{[]string{"$gt", "$gte", "$lt", "$lte"}[rng.IntN(4)]: pick(orderValues)}
	case 6:
		return map[string]any{"$gte": pick(orderValues), "$lt": pick(orderValues)}
	default:
		return map[string]any{"$exists": rng.IntN(2) == 0}
	}
}

// The costliest filter on the costliest event stays within the step budget and comes near
// it (so the budget is the bound, not a guess), and an event of more values than a filter may
// be evaluated on is refused, naming the reason.
func TestFilterCostIsBounded(t *testing.T) {
	t.Parallel()
	// 32 conditions, every one on the whole event's one big array, none of which holds or
	// fails early: an $and of 16 filters of two conditions each
	var all []any
	for i := range 16 {
		vals := make([]any, 64)
		for j := range vals {
			vals[j] = fmt.Sprintf("v%d-%d", i, j)
		}
		all = append(all, map[string]any{"data.a": map[string]any{"$nin": vals, "$neq": "w"}})
	}
	f, ok, err := event.ParseFilter("filter", map[string]any{"$and": all})
	if err != nil || !ok {
		t.Fatal(err)
	}
	p, err := event.ParsePayload("event", worstEvent(event.MaxEventValues))
	if err != nil {
		t.Fatal(err)
	}
	if p.Values() != event.MaxEventValues {
		t.Fatalf("the worst event has %d values, want %d", p.Values(), event.MaxEventValues)
	}
	matches, steps, err := f.Match(p)
	if err != nil || !matches {
		t.Fatalf("worst case: %v %v", matches, err)
	}
	if steps > event.MaxFilterSteps || steps < event.MaxFilterSteps*9/10 {
		t.Errorf("the worst case took %d steps; the budget is %d and it should come near it", steps, event.MaxFilterSteps)
	}
	_, err = event.ParsePayload("body.event", worstEvent(event.MaxEventValues+1))
	if err == nil || !strings.Contains(err.Error(), "more than 2048 JSON values") {
		t.Errorf("an event past the limit: %v", err)
	}
}

// worstEvent is an event of exactly n values, nearly all in data.a: arrays of three strings
// (four values each), then single strings.
func worstEvent(n int) []byte {
	arr := []any{}
	for count := 4; count < n; { // the event, eventType, data, data.a
		if n-count >= 4 {
			arr, count = append(arr, []any{"s", "t", "u"}), count+4
		} else {
			arr, count = append(arr, "s"), count+1
		}
	}
	js, _ := json.Marshal(map[string]any{"eventType": "FormSubmission", "data": map[string]any{"a": arr}})
	return js
}

func TestFilterRefusesNUL(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{`{"data.a": "x\u0000"}`, `{"data.a\u0000": 1}`, `{"data.a": {"$in": ["\u0000"]}}`, `{"data.a": {"$gt": "\u0000"}}`} {
		var f map[string]any
		if err := json.Unmarshal([]byte(raw), &f); err != nil {
			t.Fatal(err)
		}
		_, _, err := event.ParseFilter("body.filter", f)
		if err == nil || !strings.Contains(err.Error(), "U+0000") {
			t.Errorf("%s: %v", raw, err)
		}
	}
	if errors.Is(nil, event.ErrFilterBudget) {
		t.Fatal()
	}
}

// The costliest legal evaluation (TestFilterCostIsBounded's): its time per step and in all.
func BenchmarkWorstFilter(b *testing.B) {
	var all []any
	for i := range 16 {
		vals := make([]any, 64)
		for j := range vals {
			vals[j] = fmt.Sprintf("v%d-%d", i, j)
		}
		all = append(all, map[string]any{"data.a": map[string]any{"$nin": vals, "$neq": "w"}})
	}
	f, _, _ := event.ParseFilter("filter", map[string]any{"$and": all})
	p, _ := event.ParsePayload("event", worstEvent(event.MaxEventValues))
	b.ReportAllocs()
	steps := 0
	for b.Loop() {
		_, steps, _ = f.Match(p)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(steps), "ns/step")
}

// Parsing the costliest event, once for all the filters of its fan-out.
func BenchmarkParseWorstEvent(b *testing.B) {
	js := worstEvent(event.MaxEventValues)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = event.ParsePayload("event", js)
	}
}
