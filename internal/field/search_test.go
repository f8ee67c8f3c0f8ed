package field

import (
	"encoding/json"
	"testing"
)

// A search is one jsonpath predicate of its conditions, each value read as a write reads it;
// it is Indexed when an equality is among them (what jsonb_path_ops can find), and not for
// ranges and exists alone (what it cannot).
func TestSearchPath(t *testing.T) {
	d := definitions(Field{Key: "n", Type: Number}, Field{Key: "e", Type: Email}, Field{Key: "d", Type: Date},
		Field{Key: "m", Type: MultiEnum, Options: []Option{{Value: "a"}, {Value: "b"}}})
	for _, c := range []struct {
		conditions []string
		path       string
		indexed    bool
	}{
		{[]string{"n:eq:5.0"}, `$."n" == 5`, true},
		{[]string{"e:eq:Ann@Example.COM"}, `$."e" == "ann@example.com"`, true},
		{[]string{"m:in:a|b"}, `($."m"[*] == "a" || $."m"[*] == "b")`, true},
		{[]string{"n:gte:2", "d:lt:2027-01-01"}, `$."n" >= 2 && $."d" < "2027-01-01"`, false},
		{[]string{"e:exists"}, `exists($."e")`, false},
		{[]string{"n:gt:1", "m:eq:a"}, `$."n" > 1 && $."m"[*] == "a"`, true},
	} {
		s, err := d.Path(c.conditions)
		if err != nil || s.Path != c.path || s.Indexed != c.indexed {
			t.Errorf("%q: %q indexed %v (%v), want %q indexed %v", c.conditions, s.Path, s.Indexed, err, c.path, c.indexed)
		}
	}
}

// A search refuses what no value of the field could match: a range on a field that is not a
// number, date or datetime, a value of another type, an option the field never had (an
// archived one is fine: contacts may hold it).
func TestSearchRefuses(t *testing.T) {
	d := definitions(Field{Key: "n", Type: Number}, Field{Key: "e", Type: Email}, Field{Key: "d", Type: Date},
		Field{Key: "k", Type: Enum, Options: []Option{{Value: "open"}, {Value: "old", Archived: true}}})
	for c, ok := range map[string]bool{
		"n:gt:1": true, "d:lte:2027-01-01": true, "e:eq:a@example.com": true, "k:eq:old": true, "k:in:open|old": true,
		"e:gt:a@example.com": false, "k:lt:open": false, "n:eq:many": false, "d:gt:soon": false, "k:eq:other": false,
		"e:eq:not an email": false, "e:eq:": false, "x:eq:1": false, "n:between:1": false, "n": false,
	} {
		if _, err := d.Path([]string{c}); (err == nil) != ok {
			t.Errorf("%s: %v, want accepted %v", c, err, ok)
		}
	}
}

// An operand is read as a write of the field reads it, without the field's rules; a text as
// it is; an enum's any of its options, archived ones too.
func TestOperand(t *testing.T) {
	lo := 5.0
	d := definitions(Field{Key: "n", Type: Number, Validation: Validation{Min: &lo}}, Field{Key: "p", Type: Phone},
		Field{Key: "s", Type: Text}, Field{Key: "m", Type: MultiEnum, Options: []Option{{Value: "a"}, {Value: "b", Archived: true}}})
	for _, c := range []struct {
		key, raw string
		want     any
	}{
		{"n", `1`, 1.0}, {"p", `"(555) 010-2030"`, "+15550102030"}, {"s", `" As Is "`, " As Is "}, {"m", `"b"`, "b"},
	} {
		if v, _, err := d.Operand(c.key, json.RawMessage(c.raw)); err != nil || v != c.want {
			t.Errorf("%s %s: %#v %v, want %#v", c.key, c.raw, v, err, c.want)
		}
	}
	for _, c := range []struct{ key, raw string }{{"n", `"1"`}, {"p", `"call me"`}, {"p", `""`}, {"s", `1`}, {"m", `"c"`}, {"m", `["a"]`}, {"x", `1`}} {
		if v, _, err := d.Operand(c.key, json.RawMessage(c.raw)); err == nil {
			t.Errorf("%s %s: %#v, want refused", c.key, c.raw, v)
		}
	}
}
