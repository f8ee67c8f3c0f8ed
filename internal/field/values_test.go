package field

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func definitions(fields ...Field) *Definitions {
	d, err := NewDefinitions(fields...)
	if err != nil {
		panic(err)
	}
	d.Version = 1
	return d
}

// Each type's values are stored in one form and claimed in the form two spellings of one
// value share.
func TestNormalise(t *testing.T) {
	d := definitions(Field{Key: "e", Type: Email}, Field{Key: "p", Type: Phone}, Field{Key: "n", Type: Number},
		Field{Key: "d", Type: Date}, Field{Key: "t", Type: DateTime}, Field{Key: "u", Type: URL},
		Field{Key: "m", Type: MultiEnum, Options: []Option{{Value: "a"}, {Value: "b"}, {Value: "c"}}})
	for _, c := range []struct {
		key, raw      string
		stored        any
		unique, claim string
	}{
		{"e", `" Jane.Doe+x@GMAIL.com "`, "jane.doe+x@gmail.com", "janedoe@gmail.com", "janedoe@gmail.com"},
		{"e", `"Jane@Example.com"`, "jane@example.com", "jane@example.com", "jane@example.com"},
		{"p", `"+44 20 7946 0958"`, "+442079460958", "+442079460958", ""},
		{"p", `"(555) 010-2030"`, "+15550102030", "+15550102030", ""},
		{"p", `"1-555-010-2030"`, "+15550102030", "+15550102030", ""},
		{"n", `7.0`, 7.0, "7", ""},
		{"n", `1e3`, 1000.0, "1000", ""},
		{"d", `"2027-03-01"`, "2027-03-01", "2027-03-01", ""},
		{"t", `"2026-11-27T09:30:00.1239+02:00"`, "2026-11-27T07:30:00.123Z", "2026-11-27T07:30:00.123Z", ""},
		{"u", `"HTTPS://Example.COM/Path?q=A"`, "https://example.com/Path?q=A", "https://example.com/Path?q=A", ""},
		{"m", `["c", "a", "c"]`, []any{"a", "c"}, "", ""},
	} {
		v, unique, fe := d.normalise(d.byKey[c.key], json.RawMessage(c.raw))
		if fe != nil || !reflect.DeepEqual(v, c.stored) || unique != c.unique {
			t.Errorf("%s %s: %#v %q %v, want %#v %q", c.key, c.raw, v, unique, fe, c.stored, c.unique)
		}
	}
	for raw, want := range map[string]string{`"caf\u00e9 \"x\""`: `café "x"`, "\"a\xffb\"": "a\ufffdb", `"plain"`: "plain"} {
		if v, _, fe := d.normalise(&Field{Key: "x", Type: Text}, json.RawMessage(raw)); fe != nil || v != want {
			t.Errorf("%q read as %q, want %q", raw, v, want)
		}
	}
	for _, raw := range []string{`null`, `""`, `"  "`, `[]`} {
		if v, _, fe := d.normalise(d.byKey["m"], json.RawMessage(raw)); v != nil || fe != nil {
			t.Errorf("%s is a value: %#v %v", raw, v, fe)
		}
	}
}

// A write reports exactly the keys it changes, the claims it makes and the ones it lets go.
func TestApply(t *testing.T) {
	d := definitions(Field{Key: "member", Type: Text, Unique: true}, Field{Key: "seats", Type: Number},
		Field{Key: "region", Type: Text, Required: true})
	w, errs := d.Apply(nil, json.RawMessage(`{"member": "M-1", "seats": 3, "region": "north"}`), true)
	if len(errs) > 0 || !reflect.DeepEqual(w.Changed, []string{"member", "region", "seats"}) ||
		!reflect.DeepEqual(w.Claims, []Claim{{"member", "M-1"}}) || len(w.Released) != 0 {
		t.Fatalf("create: %+v %v", w, errs)
	}
	w, errs = d.Apply(w.Values, json.RawMessage(`{"member": "M-2", "seats": 3, "region": "north"}`), false)
	if len(errs) > 0 || !reflect.DeepEqual(w.Changed, []string{"member"}) ||
		!reflect.DeepEqual(w.Claims, []Claim{{"member", "M-2"}}) || !reflect.DeepEqual(w.Released, []string{"member"}) {
		t.Fatalf("change: %+v %v", w, errs)
	}
	w, errs = d.Apply(w.Values, json.RawMessage(`{"member": null, "seats": ""}`), false)
	if len(errs) > 0 || !reflect.DeepEqual(w.Values, Values{"region": "north"}) || len(w.Claims) != 0 ||
		!reflect.DeepEqual(w.Released, []string{"member"}) {
		t.Fatalf("clear: %+v %v", w, errs)
	}
	if _, errs = d.Apply(w.Values, json.RawMessage(`{"region": ""}`), false); len(errs) != 1 || errs[0].Reason != "required" {
		t.Errorf("clear a required field: %v", errs)
	}
	if _, errs = d.Apply(nil, json.RawMessage(`{"seats": "x"}`), true); len(errs) != 2 || errs[0].Field != "body.customFields.seats" ||
		errs[1].Field != "body.customFields.region" {
		t.Errorf("a bad value and a missing required one: %v", errs)
	}
}

// A contact's values together are bounded: a write that would take them past MaxValuesBytes
// as JSON is refused naming body.customFields.
func TestValuesAreBounded(t *testing.T) {
	var fields []Field
	values := map[string]string{}
	for i := range 40 {
		k := fmt.Sprintf("t%02d", i)
		fields = append(fields, Field{Key: k, Type: Text})
		values[k] = strings.Repeat("x", MaxTextLength)
	}
	raw, _ := json.Marshal(values)
	if _, errs := definitions(fields...).Apply(nil, raw, true); len(errs) != 1 || errs[0].Field != "body.customFields" || errs[0].Reason != "maxBytes" {
		t.Errorf("40 KB of values: %v", errs)
	}
}

// A unique form longer than a B-tree entry may be is claimed by its digest, the same for one
// value every time.
func TestClaimForm(t *testing.T) {
	short, long := strings.Repeat("a", maxClaimBytes), strings.Repeat("a", maxClaimBytes+1)
	if claimForm(short) != short || claimForm(long) == long || claimForm(long) != claimForm(strings.Clone(long)) ||
		!strings.HasPrefix(claimForm(long), "sha256:") || claimForm(long) == claimForm(long+"b") {
		t.Errorf("claim forms: %q %q", claimForm(short), claimForm(long))
	}
}

// BenchmarkApply: the check of a create's 20 values, one of each kind contactbench's
// create-fields workload sends.
func BenchmarkApply(b *testing.B) {
	d := definitions(Field{Key: "plan", Type: Enum, Options: []Option{{Value: "free"}, {Value: "pro"}}},
		Field{Key: "channels", Type: MultiEnum, Options: []Option{{Value: "sms"}, {Value: "mail"}}},
		Field{Key: "seats", Type: Number}, Field{Key: "score", Type: Number}, Field{Key: "budget", Type: Number},
		Field{Key: "visits", Type: Number}, Field{Key: "vip", Type: Boolean}, Field{Key: "churned", Type: Boolean},
		Field{Key: "renewal", Type: Date}, Field{Key: "last_call", Type: DateTime}, Field{Key: "work_email", Type: Email},
		Field{Key: "mobile", Type: Phone}, Field{Key: "site", Type: URL}, Field{Key: "company", Type: Text},
		Field{Key: "title", Type: Text}, Field{Key: "source", Type: Text}, Field{Key: "region", Type: Text},
		Field{Key: "industry", Type: Text}, Field{Key: "notes", Type: Text}, Field{Key: "referrer", Type: Text})
	raw := json.RawMessage(`{"plan":"pro","channels":["mail","sms"],"seats":12,"score":7.5,"budget":12000,"visits":3,` +
		`"vip":true,"churned":false,"renewal":"2027-03-01","last_call":"2026-11-27T09:30:00.000Z",` +
		`"work_email":"person1@corp.example","mobile":"+1 555 010 0001","site":"https://example.com/1",` +
		`"company":"Example Corp 1","title":"Head of Operations","source":"Website","region":"Midwest",` +
		`"industry":"Real estate","notes":"Met at the open house; wants a follow-up in March.","referrer":"partner-1"}`)
	b.ReportAllocs()
	for b.Loop() {
		w, errs := d.Apply(nil, raw, true)
		if len(errs) > 0 {
			b.Fatal(errs)
		}
		_ = w.Values.JSON()
	}
}

// Each rule of a value at its edge: what passes it and what is refused, with the reason.
func TestNormaliseAtTheRules(t *testing.T) {
	lo, hi, short := 1.0, 10.0, 5
	d := definitions(Field{Key: "n", Type: Number, Validation: Validation{Min: &lo, Max: &hi}},
		Field{Key: "e", Type: Email}, Field{Key: "p", Type: Phone}, Field{Key: "u", Type: URL},
		Field{Key: "s", Type: Text, Validation: Validation{MaxLength: &short}},
		Field{Key: "k", Type: Enum, Options: []Option{{Value: "open"}, {Value: "old", Archived: true}}})
	for _, c := range []struct{ key, raw, reason string }{
		{"n", `1`, ""}, {"n", `10`, ""}, {"n", `0.999`, "minimum"}, {"n", `10.001`, "maximum"},
		{"n", `1e999`, "type"}, {"n", `"5"`, "type"},
		{"e", `"` + strings.Repeat("a", 64) + `@example.com"`, ""},
		{"e", `"` + strings.Repeat("a", 65) + `@example.com"`, "format"},
		{"e", `"a@` + strings.Repeat("d", 249) + `.com"`, "format"}, // 255 characters
		{"e", `"a@` + strings.Repeat("d", 248) + `.com"`, ""},
		{"e", `"Jane <jane@example.com>"`, "format"}, {"e", `"not an email"`, "format"},
		{"p", `"+1 555 010"`, "format"}, {"p", `"+1 555 0100"`, ""}, // 7 digits, and 8: the least
		{"p", `"+1234567890123456"`, "format"}, {"p", `"+123456789012345"`, ""},
		{"u", `"https://example.com"`, ""}, {"u", `"http://example.com/x"`, ""},
		{"u", `"ftp://example.com"`, "format"}, {"u", `"https://"`, "format"}, {"u", `"javascript:alert(1)"`, "format"},
		{"u", `"https://example.com/` + strings.Repeat("p", 2028) + `"`, ""},
		{"u", `"https://example.com/` + strings.Repeat("p", 2029) + `"`, "maxLength"},
		{"s", `"12345"`, ""}, {"s", `"123456"`, "maxLength"},
		{"k", `"open"`, ""}, {"k", `"old"`, "enum"}, {"k", `"other"`, "enum"},
	} {
		_, _, fe := d.normalise(d.byKey[c.key], json.RawMessage(c.raw))
		switch {
		case c.reason == "" && fe != nil:
			t.Errorf("%s %.60s: refused (%s %s), want it kept", c.key, c.raw, fe.Reason, fe.Message)
		case c.reason != "" && (fe == nil || fe.Reason != c.reason):
			t.Errorf("%s %.60s: %v, want refused for %s", c.key, c.raw, fe, c.reason)
		}
	}
}

// A write that is not an object is refused whole; null is no values.
func TestApplyRefusesWhatIsNotAnObject(t *testing.T) {
	d := definitions(Field{Key: "n", Type: Number})
	for _, raw := range []string{`[1]`, `"n"`, `7`} {
		if _, errs := d.Apply(nil, json.RawMessage(raw), true); len(errs) != 1 || errs[0].Field != "body.customFields" {
			t.Errorf("%s: %v", raw, errs)
		}
	}
	for _, raw := range []string{``, `null`, ` null `} {
		if w, errs := d.Apply(nil, json.RawMessage(raw), true); len(errs) != 0 || len(w.Changed) != 0 {
			t.Errorf("%q: %+v %v", raw, w, errs)
		}
	}
}
