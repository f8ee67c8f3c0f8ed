package field

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func definitions(fields ...Field) *Definitions {
	d := &Definitions{Version: 1, byKey: map[string]*Field{}, patterns: map[string]*regexp.Regexp{}}
	for i := range fields {
		f := &fields[i]
		if f.Validation.Pattern != nil {
			d.patterns[f.Key] = regexp.MustCompile(*f.Validation.Pattern)
		}
		d.fields = append(d.fields, f)
		d.byKey[f.Key] = f
	}
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

// A unique form longer than a B-tree entry may be is claimed by its digest, the same for one
// value every time.
func TestClaimForm(t *testing.T) {
	short, long := strings.Repeat("a", maxClaimBytes), strings.Repeat("a", maxClaimBytes+1)
	if claimForm(short) != short || claimForm(long) == long || claimForm(long) != claimForm(strings.Clone(long)) ||
		!strings.HasPrefix(claimForm(long), "sha256:") || claimForm(long) == claimForm(long+"b") {
		t.Errorf("claim forms: %q %q", claimForm(short), claimForm(long))
	}
}
