package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/field"
	"github.com/contactd/contactd/internal/testkit"
)

func defineField(t *testing.T, a *testkit.API, key string, body map[string]any) api.Field {
	t.Helper()
	r := a.Do("POST", "/public/v1/fields", key, body)
	if r.Status != 200 {
		t.Fatalf("define %v: %d %s", body["key"], r.Status, r.Body)
	}
	var f api.Field
	r.JSON(t, &f)
	return f
}

// A field's life: defined, read, listed, changed (options added, relabelled, archived,
// restored; its rules replaced), archived (its key never used again, archiving again a
// no-op), with every rule of a definition refused as the spec says, and nothing of it
// visible to another account.
func TestFieldDefinitions(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	_, otherKey := a.Account("other")

	f := defineField(t, a, key, map[string]any{"key": "loyalty_tier", "label": "Loyalty tier", "type": "enum",
		"description": "The loyalty programme's tier.",
		"options":     []map[string]any{{"value": "gold", "label": "Gold"}, {"value": "silver", "label": "Silver"}}})
	if f.Key != "loyalty_tier" || f.Type != api.FieldTypeEnum || f.Required || f.Unique || f.Archived || f.ArchivedAt != nil ||
		f.Options == nil || len(*f.Options) != 2 || (*f.Options)[1] != (api.FieldOption{Value: "silver", Label: "Silver"}) ||
		f.Description == nil || f.Validation != nil {
		t.Errorf("defined: %+v", f)
	}
	var got api.Field
	if r := a.Do("GET", "/public/v1/fields/loyalty_tier", key, nil); r.Status != 200 {
		t.Fatalf("get: %d %s", r.Status, r.Body)
	} else if r.JSON(t, &got); got.Label != "Loyalty tier" || got.CreatedAt != f.CreatedAt {
		t.Errorf("read back: %+v", got)
	}
	defineField(t, a, key, map[string]any{"key": "score", "label": "Score", "type": "number", "unique": true,
		"validation": map[string]any{"min": 0, "max": 100.5}})

	refused := []struct {
		body        map[string]any
		status      int
		code, field string
	}{
		{map[string]any{"key": "loyalty_tier", "label": "Again", "type": "text"}, 409, "FieldExists", ""},
		{map[string]any{"key": "Bad-Key", "label": "x", "type": "text"}, 400, "InvalidRequest", "body.key"},
		{map[string]any{"key": "colour", "label": "Colour", "type": "enum"}, 400, "InvalidRequest", "body.options"},
		{map[string]any{"key": "nick", "label": "Nick", "type": "text", "options": []map[string]any{{"value": "a", "label": "A"}}}, 400, "InvalidRequest", "body.options"},
		{map[string]any{"key": "vip", "label": "VIP", "type": "boolean", "unique": true}, 400, "InvalidRequest", "body.unique"},
		{map[string]any{"key": "code", "label": "Code", "type": "text", "validation": map[string]any{"pattern": "a(b"}}, 400, "InvalidRequest", "body.validation.pattern"},
		{map[string]any{"key": "age", "label": "Age", "type": "number", "validation": map[string]any{"min": 10, "max": 1}}, 400, "InvalidRequest", "body.validation.max"},
		{map[string]any{"key": "born", "label": "Born", "type": "date", "validation": map[string]any{"maxLength": 10}}, 400, "InvalidRequest", "body.validation.maxLength"},
		{map[string]any{"key": "size", "label": "Size", "type": "enum", "options": []map[string]any{{"value": "s", "label": "S"}, {"value": "s", "label": "Small"}}}, 400, "InvalidRequest", "body.options[1].value"},
		{map[string]any{"key": "shape", "label": "Shape", "type": "circle"}, 400, "InvalidRequest", "body.type"},
	}
	for _, c := range refused {
		r := a.Do("POST", "/public/v1/fields", key, c.body)
		e := r.Error(t)
		if r.Status != c.status || e.Code != api.ErrorCode(c.code) || (c.field != "" && !hasFieldError(e, c.field)) {
			t.Errorf("define %v: %d %s, want %d %s at %s", c.body, r.Status, r.Body, c.status, c.code, c.field)
		}
	}

	// options are added, relabelled, archived and restored, never removed
	r := a.Do("PATCH", "/public/v1/fields/loyalty_tier", key, map[string]any{"label": "Tier",
		"options": []map[string]any{{"value": "platinum", "label": "Platinum"}, {"value": "silver", "archived": true}, {"value": "gold", "label": "Golden"}}})
	r.JSON(t, &got)
	want := []api.FieldOption{{Value: "gold", Label: "Golden"}, {Value: "silver", Label: "Silver", Archived: true}, {Value: "platinum", Label: "Platinum"}}
	if r.Status != 200 || got.Label != "Tier" || got.Options == nil || fmt.Sprint(*got.Options) != fmt.Sprint(want) || got.UpdatedAt.Time.Before(f.UpdatedAt.Time) {
		t.Errorf("patched: %d %s", r.Status, r.Body)
	}
	a.Do("PATCH", "/public/v1/fields/loyalty_tier", key, map[string]any{"options": []map[string]any{{"value": "silver", "archived": false}}}).JSON(t, &got)
	if (*got.Options)[1].Archived {
		t.Errorf("silver not restored: %+v", *got.Options)
	}
	a.Do("PATCH", "/public/v1/fields/score", key, map[string]any{"validation": map[string]any{}}).JSON(t, &got)
	if got.Validation != nil {
		t.Errorf("validation {} kept rules: %+v", got.Validation)
	}
	for _, c := range []struct {
		path  string
		body  map[string]any
		field string
	}{
		{"loyalty_tier", map[string]any{"options": []map[string]any{{"value": "bronze"}}}, "body.options[0].label"},
		{"loyalty_tier", map[string]any{"type": "text"}, "body.type"},
		{"score", map[string]any{"options": []map[string]any{{"value": "x", "label": "X"}}}, "body.options"},
		{"score", map[string]any{"validation": map[string]any{"pattern": "x"}}, "body.validation.pattern"},
		{"loyalty_tier", map[string]any{}, "body"},
	} {
		r := a.Do("PATCH", "/public/v1/fields/"+c.path, key, c.body)
		if e := r.Error(t); r.Status != 400 || !hasFieldError(e, c.field) {
			t.Errorf("patch %s %v: %d %s, want 400 at %s", c.path, c.body, r.Status, r.Body, c.field)
		}
	}

	// another account sees none of it, and may use the same key
	for _, probe := range []struct{ method, path string }{
		{"GET", "/public/v1/fields/loyalty_tier"}, {"PATCH", "/public/v1/fields/loyalty_tier"}, {"POST", "/public/v1/fields/loyalty_tier/archive"},
	} {
		var body any
		if probe.method == "PATCH" {
			body = map[string]any{"label": "Mine"}
		}
		if r := a.Do(probe.method, probe.path, otherKey, body); r.Status != 404 || r.Error(t).Code != api.ErrorCodeFieldDoesNotExist {
			t.Errorf("%s %s as another account: %d %s", probe.method, probe.path, r.Status, r.Body)
		}
	}
	var list api.FieldList
	if a.Do("GET", "/public/v1/fields", otherKey, nil).JSON(t, &list); len(list.Fields) != 0 {
		t.Errorf("another account lists %d fields", len(list.Fields))
	}
	defineField(t, a, otherKey, map[string]any{"key": "loyalty_tier", "label": "Theirs", "type": "text"})

	// archived: read still, changed never, its key taken for good
	var archived, again api.Field
	a.Do("POST", "/public/v1/fields/loyalty_tier/archive", key, nil).JSON(t, &archived)
	a.Do("POST", "/public/v1/fields/loyalty_tier/archive", key, nil).JSON(t, &again)
	if !archived.Archived || archived.ArchivedAt == nil || again.ArchivedAt == nil || *again.ArchivedAt != *archived.ArchivedAt || again.UpdatedAt != archived.UpdatedAt {
		t.Errorf("archived %+v, then again %+v", archived, again)
	}
	if r := a.Do("PATCH", "/public/v1/fields/loyalty_tier", key, map[string]any{"label": "Back"}); r.Status != 409 || r.Error(t).Code != api.ErrorCodeFieldArchived {
		t.Errorf("patch of an archived field: %d %s", r.Status, r.Body)
	}
	if r := a.Do("POST", "/public/v1/fields", key, map[string]any{"key": "loyalty_tier", "label": "New", "type": "text"}); r.Status != 409 {
		t.Errorf("an archived field's key reused: %d %s", r.Status, r.Body)
	}
	if a.Do("GET", "/public/v1/fields", key, nil).JSON(t, &list); len(list.Fields) != 1 || list.Fields[0].Key != "score" {
		t.Errorf("listed without archived: %+v", list.Fields)
	}
	if a.Do("GET", "/public/v1/fields?archived=true", key, nil).JSON(t, &list); len(list.Fields) != 2 || list.Fields[0].Key != "loyalty_tier" {
		t.Errorf("listed with archived: %+v", list.Fields)
	}
	if r := a.Do("GET", "/public/v1/fields/nothing_here", key, nil); r.Status != 404 || r.Error(t).Code != api.ErrorCodeFieldDoesNotExist {
		t.Errorf("unknown field: %d %s", r.Status, r.Body)
	}
}

// An account has at most field.MaxPerAccount fields, archived ones included: defined from
// eight clients at once past the limit, exactly the limit's worth are stored and every other
// answer is the documented 400; a key the account has is 409 at the limit too.
func TestFieldLimitHoldsUnderRacingDefinitions(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	ctx := context.Background()
	account, key := a.Account("acme")
	defineField(t, a, key, map[string]any{"key": "f_archived", "label": "Archived", "type": "text"})
	if r := a.Do("POST", "/public/v1/fields/f_archived/archive", key, nil); r.Status != 200 {
		t.Fatalf("archive: %d %s", r.Status, r.Body)
	}
	const free, racers = 4, 8 // racing for the last free places
	for i := range field.MaxPerAccount - 1 - free {
		defineField(t, a, key, map[string]any{"key": fmt.Sprintf("f_%03d", i), "label": "F", "type": "text"})
	}
	// The race is proven: the test's transaction holds the account's fields lock (the one a
	// definition counts the limit under) until every racer waits for it.
	held := hold(t, a, `SELECT pg_advisory_xact_lock(hashtextextended('contactd.fields/' || $1::text, 0))`, account)
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for i := range racers {
		wg.Go(func() {
			r := a.Do("POST", "/public/v1/fields", key, map[string]any{"key": fmt.Sprintf("r_%03d", i), "label": "F", "type": "text"})
			if r.Status == 400 {
				if e := r.Error(t); !hasFieldError(e, "body.key") || !strings.Contains(e.Message, "at most 200 fields") {
					t.Errorf("over the limit: %s", r.Body)
				}
			}
			mu.Lock()
			statuses[r.Status]++
			mu.Unlock()
		})
	}
	testkit.Eventually(t, fmt.Sprintf("%d definitions waiting for the account's fields lock", racers), func() bool { return a.LockWaiters(t) == racers })
	if err := held.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if statuses[200] != free || statuses[400] != racers-free {
		t.Errorf("answers %v, want %d defined and %d refused", statuses, free, racers-free)
	}
	if n := a.Count(t, "SELECT count(*) FROM contact_fields WHERE account_id = $1", account); n != field.MaxPerAccount {
		t.Errorf("%d fields stored, the limit is %d", n, field.MaxPerAccount)
	}
	// at the limit, a key the account has is still the conflict it is
	if r := a.Do("POST", "/public/v1/fields", key, map[string]any{"key": "f_archived", "label": "F", "type": "text"}); r.Status != 409 ||
		r.Error(t).Code != api.ErrorCodeFieldExists {
		t.Errorf("a taken key at the limit: %d %s", r.Status, r.Body)
	}
}

func hasFieldError(e api.Error, field string) bool {
	if e.Data == nil || e.Data.Errors == nil {
		return false
	}
	for _, fe := range *e.Data.Errors {
		if fe.Field == field {
			return true
		}
	}
	return false
}

// TestPatternsArePricedWhenSaved: a pattern's price (its program's instructions times the
// longest value, the field's maxLength or 1,000) is checked when it is saved, alone against
// field.MaxPatternSteps and with the account's other live patterns against
// field.MaxAccountPatternSteps: a 400 naming the budget. A pattern matches whole values.
func TestPatternsArePricedWhenSaved(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	refusedForCost := func(r *testkit.Response, budget int) {
		t.Helper()
		e := r.Error(t)
		if r.Status != 400 || e.Data == nil || e.Data.Errors == nil || len(*e.Data.Errors) != 1 {
			t.Fatalf("%d %s, want 400 for the pattern's cost", r.Status, r.Body)
		}
		fe := (*e.Data.Errors)[0]
		if fe.Field != "body.validation.pattern" || fe.Reason != "cost" || !strings.Contains(fe.Message, fmt.Sprint(budget)) {
			t.Errorf("%+v, want body.validation.pattern refused for its cost, naming the budget %d", fe, budget)
		}
	}
	text := func(k, pattern string) map[string]any {
		return map[string]any{"key": k, "label": k, "type": "text", "validation": map[string]any{"pattern": pattern}}
	}
	// 444 instructions x 1,000 characters: four fit the account's 2,000,000 steps, a fifth does not
	for _, k := range []string{"p1", "p2", "p3", "p4"} {
		defineField(t, a, key, text(k, "[a-z]{440}"))
	}
	refusedForCost(a.Do("POST", "/public/v1/fields", key, text("p5", "[a-z]{440}")), field.MaxAccountPatternSteps)
	short := text("p5", "[a-z]{440}")
	short["validation"].(map[string]any)["maxLength"] = 100
	defineField(t, a, key, short) // 44,400 steps: values of at most 100 characters
	refusedForCost(a.Do("PATCH", "/public/v1/fields/p4", key, map[string]any{"validation": map[string]any{"pattern": `(\w+\s?){1,1000}x`}}), field.MaxPatternSteps)
	refusedForCost(a.Do("PATCH", "/public/v1/fields/p5", key, map[string]any{"validation": map[string]any{"pattern": "[a-z]{440}"}}), field.MaxAccountPatternSteps)
	// an archived field's values are never written again: its pattern no longer counts
	if r := a.Do("POST", "/public/v1/fields/p1/archive", key, nil); r.Status != 200 {
		t.Fatalf("archive: %d %s", r.Status, r.Body)
	}
	if r := a.Do("PATCH", "/public/v1/fields/p5", key, map[string]any{"validation": map[string]any{"pattern": "[a-z]{440}"}}); r.Status != 200 {
		t.Errorf("p5's pattern at full length with p1 archived: %d %s", r.Status, r.Body)
	}

	defineField(t, a, key, text("code", "[a-z]+|[0-9]{3}"))
	for value, want := range map[string]int{"abc": 200, "123": 200, "abc1": 400, "1234": 400, " abc": 400} {
		r := a.Do("POST", "/public/v1/contact", key, map[string]any{"email": "c" + fmt.Sprint(len(value)) + strings.TrimSpace(value) + "@example.com",
			"customFields": map[string]any{"code": value}})
		if r.Status != want || (want == 400 && !hasFieldError(r.Error(t), "body.customFields.code")) {
			t.Errorf("code %q: %d %s, want %d", value, r.Status, r.Body, want)
		}
	}
}
