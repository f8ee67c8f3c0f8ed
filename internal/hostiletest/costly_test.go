package hostiletest

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/contactd/contactd/internal/field"
	"github.com/contactd/contactd/internal/segment"
	"github.com/contactd/contactd/internal/testkit"
)

// costlyPattern is a legal pattern within field.MaxPatternSteps at the longest text value
// whose matches keep every thread of its program alive: the slowest check a value can have.
const costlyPattern = `(a*a*a*a*a*a*a*a*a*a*){1,20}b`

// costly is what B's priced attacks need: the keys they send with, and what they aim at.
type costly struct {
	patternKeys, batchKeys, searchKeys, nulKeys []string
	search                                      string // a list page's query at the search's budget
	segment                                     string // a segment B edits again and again
	segmentSeed                                 int
	editKey                                     string
	batch                                       func(round int) string
}

// prepareCostly gives B the rules that make its writes and reads cost the most that their
// prices allow: four fields of the costliest pattern (the account's pattern budget), a
// multiEnum of the most options, and the dynamic segments of the costliest filters the
// account's segment budget takes; every contact of B is evaluated on them (a backfill).
func prepareCostly(t *testing.T, a *testkit.API, bKey func(string) string) costly {
	t.Helper()
	// the setup's writes, a fresh key every 40 (B's limits are on: 50 writes in 10 s a key)
	writes, setupKey := 0, bKey("setup")
	send := func(method, path string, body any) *testkit.Response {
		t.Helper()
		if writes++; writes%40 == 0 {
			setupKey = bKey(fmt.Sprintf("setup %d", writes))
		}
		return a.Do(method, path, setupKey, body)
	}
	do := func(method, path string, body any) *testkit.Response {
		t.Helper()
		r := send(method, path, body)
		if r.Status != http.StatusOK {
			t.Fatalf("B's %s %s: %d %s", method, path, r.Status, r.Body)
		}
		return r
	}
	for i := range field.MaxAccountPatternSteps / field.MaxPatternSteps {
		do("POST", "/public/v1/fields", map[string]any{"key": fmt.Sprintf("p%d", i), "label": "Code", "type": "text",
			"validation": map[string]any{"pattern": costlyPattern}})
	}
	options := make([]map[string]any, field.MaxOptions)
	for i := range options {
		options[i] = map[string]any{"value": fmt.Sprintf("o%03d", i), "label": fmt.Sprintf("Option %d", i)}
	}
	do("POST", "/public/v1/fields", map[string]any{"key": "m", "label": "Many", "type": "multiEnum", "options": options})
	var sg struct {
		SegmentID string `json:"segmentId"`
	}
	// as many as the account's segment budget takes (segment.MaxAccountPrice): saved until one
	// is refused for its price
	segments := 0
	for ; segments < segment.MaxPerAccount; segments++ {
		r := send("POST", "/public/v1/segments", map[string]any{"name": fmt.Sprintf("costly %d", segments), "filter": costlyFilter(segments, 0)})
		if r.Status == http.StatusBadRequest && strings.Contains(string(r.Body), `"reason":"cost"`) {
			break
		} else if r.Status != http.StatusOK {
			t.Fatalf("B's segment %d: %d %s", segments, r.Status, r.Body)
		}
		r.JSON(t, &sg)
	}
	if segments < 10 {
		t.Fatalf("the segment budget took %d of the costliest segments", segments)
	}
	c := costly{segment: sg.SegmentID, segmentSeed: segments - 1}
	// a key each, as fast as it answers: each attack's cost is its price, and the suite runs
	// beside it on the same two cores
	for i := range 1 {
		c.patternKeys = append(c.patternKeys, bKey(fmt.Sprintf("patterns %d", i)))
		c.batchKeys = append(c.batchKeys, bKey(fmt.Sprintf("batches %d", i)))
		c.searchKeys = append(c.searchKeys, bKey(fmt.Sprintf("searches %d", i)))
	}
	c.nulKeys, c.editKey = []string{bKey("nul")}, bKey("segment edits")
	// ten options (ten distinct values of a multiEnum: the search's 1,000 comparisons a
	// contact), named over and over: repeats are folded, and cost nothing more
	var alternatives []string
	for i := range 300 {
		alternatives = append(alternatives, fmt.Sprintf("o%03d", i%10))
	}
	c.search = "/public/v1/contacts?limit=100&field=" + url.QueryEscape("m:in:"+strings.Join(alternatives, "|"))
	// 1,000 upserts of B's contacts, each adding a tag, a value of the multiEnum's every
	// option and a property: every one evaluated against every segment
	all := make([]string, field.MaxOptions)
	for i := range all {
		all[i] = fmt.Sprintf("o%03d", i)
	}
	c.batch = func(round int) string {
		items := make([]string, 1000)
		for j := range items {
			items[j] = fmt.Sprintf(`{"email":"b%d-%d@example.com","tags":["r%d"],"address":"%d Main St, Springfield, IL 62701","customFields":{"m":%s}}`,
				round%5, j, round, round%100+1, mustJSON(all))
		}
		return `{"mode":"upsert","contacts":[` + strings.Join(items, ",") + `]}`
	}
	return c
}

// costlyFilter is a dynamic segment's costliest filter: every condition an in of the most
// operands over the properties' cities (each compared with every property a contact may
// have), none of which B's contacts are in (its writes evaluate every condition and move no
// membership); edit makes another of the same price.
func costlyFilter(seed, edit int) map[string]any {
	var groups []any
	for g := range segment.MaxGroups {
		var conds []any
		for c := range segment.MaxConditions / segment.MaxGroups {
			values := make([]any, segment.MaxValues)
			for v := range values {
				values[v] = fmt.Sprintf("none-%d-%d-%d-%d-%d", seed, edit, g, c, v)
			}
			conds = append(conds, map[string]any{"attribute": "address.city", "operator": "in", "values": values})
		}
		groups = append(groups, map[string]any{"conditions": conds})
	}
	return map[string]any{"groups": groups}
}

// costlyAttacks are B's attacks on what is priced or bounded: values of the costliest
// patterns, batches evaluated against the segment budget, searches at their budget, a segment
// whose backfill restarts on every edit, and bodies with a NUL. Each answer a limit or a
// check gives is fine (429, 400); a 5xx is not, and a NUL must be refused at the door.
func costlyAttacks(c costly, send func(c *http.Client, method, path, key, body string) (int, error),
	attack func(string, func(*http.Client) error), answered func(string, int, error) error) {
	value := strings.Repeat("a", field.MaxTextLength) // no b at its end: every thread runs to the end
	patternBody := fmt.Sprintf(`{"email":"pattern@example.com","customFields":{"p0":%q,"p1":%q,"p2":%q,"p3":%q}}`, value, value, value, value)
	for _, key := range c.patternKeys {
		attack("pattern values", func(cl *http.Client) error {
			status, err := send(cl, "POST", "/public/v1/contact", key, patternBody)
			return answered("a create of pattern values", status, err)
		})
	}
	for i, key := range c.batchKeys {
		round := i
		attack("batches against every segment", func(cl *http.Client) error {
			round += len(c.batchKeys)
			status, err := send(cl, "POST", "/public/v1/contacts/batch", key, c.batch(round))
			return answered("a batch", status, err)
		})
	}
	for _, key := range c.searchKeys {
		attack("searches at their budget", func(cl *http.Client) error {
			status, err := send(cl, "GET", c.search, key, "")
			return answered("a search", status, err)
		})
	}
	edit := 0
	attack("segment edits restarting a backfill", func(cl *http.Client) error {
		edit++
		status, err := send(cl, "PATCH", "/public/v1/segments/"+c.segment, c.editKey, mustJSON(map[string]any{"filter": costlyFilter(c.segmentSeed, edit)}))
		return answered("a segment edit", status, err)
	})
	for _, key := range c.nulKeys {
		attack("NUL in a body", func(cl *http.Client) error {
			status, err := send(cl, "POST", "/public/v1/contact", key, `{"email":"nul@example.com","name":"a\u0000b","tags":["x\u0000"]}`)
			if err == nil && status != http.StatusBadRequest && status != http.StatusTooManyRequests {
				err = fmt.Errorf("a body with a NUL answered %d, not 400", status)
			}
			return err
		})
	}
}

// segmentReady waits for the account's segment to be ready: another account's backfills,
// restarted again and again, take turns with it (a page each), so it does not wait for them.
func segmentReady(t *testing.T, a *testkit.API, account uuid.UUID, id string) {
	t.Helper()
	testkit.Eventually(t, "A's segment ready while B's backfills restart", func() bool {
		return a.Count(t, "SELECT count(*) FROM segments WHERE account_id = $1 AND segment_id = $2::uuid AND status = 'ready'", account, id) == 1
	})
}
