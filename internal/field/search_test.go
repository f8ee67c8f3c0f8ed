package field

import "testing"

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
