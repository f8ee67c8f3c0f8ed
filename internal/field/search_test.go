package field

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/contactd/contactd/internal/apperr"
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

// A search is priced by its comparisons on one contact: each distinct value of a condition
// times the values its field may hold (a multiEnum MaxOptions). A value repeated is compared
// once; past MaxSearchComparisons the search is refused, naming the budget.
func TestSearchIsPriced(t *testing.T) {
	options := make([]Option, MaxOptions)
	values := make([]string, MaxOptions)
	for i := range options {
		values[i] = fmt.Sprintf("o%02d", i)
		options[i] = Option{Value: values[i]}
	}
	d := definitions(Field{Key: "m", Type: MultiEnum, Options: options}, Field{Key: "t", Type: Text})
	ten, eleven := strings.Join(values[:10], "|"), strings.Join(values[:11], "|")
	repeated := strings.Repeat("o01|", 500) + "o02"
	texts := make([]string, 1001)
	for i := range texts {
		texts[i] = fmt.Sprint(i)
	}
	for c, want := range map[string]string{
		"m:in:" + ten: "", "m:in:" + repeated: "", "t:in:" + strings.Join(texts[:1000], "|"): "",
		"m:in:" + eleven: "cost", "t:in:" + strings.Join(texts, "|"): "cost",
	} {
		_, err := d.Path([]string{c})
		got := ""
		if e := apperr.As(err); err != nil && len(e.Fields) == 1 {
			got = e.Fields[0].Reason
			if got == "cost" && !strings.Contains(e.Fields[0].Message, fmt.Sprint(MaxSearchComparisons)) {
				t.Errorf("%.40s...: %q does not name the budget", c, e.Fields[0].Message)
			}
		}
		if got != want {
			t.Errorf("%.40s...: refused for %q (%v), want %q", c, got, err, want)
		}
	}
	if s, _ := d.Path([]string{"m:in:" + repeated}); strings.Count(s.Path, "==") != 2 {
		t.Errorf("500 repeats of a value and one other: %q, want two comparisons", s.Path)
	}
}
