package segment

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

func cond(attr, op string, value any, values ...any) Condition {
	c := Condition{Attribute: attr, Operator: op}
	if value != nil {
		c.Value, _ = json.Marshal(value)
	}
	for _, v := range values {
		b, _ := json.Marshal(v)
		c.Values = append(c.Values, b)
	}
	return c
}

// Each operator on each kind of attribute, at its edges, on a contact with two properties and
// without some attributes; a negation is the opposite of its positive over the whole contact.
func TestConditionHolds(t *testing.T) {
	created := time.Date(2026, 11, 21, 9, 30, 0, 123e6, time.UTC)
	s := Subject{
		Text:      map[string]string{"email": "ann@example.com", "name": "Ann Lee", "emailStatus": "Valid", "recordStatus": "Marketing"},
		LeadScore: 60, Tags: []string{"lead", "vip"},
		Numbers:   map[string]float64{"engagement.numOfEmailOpens": 3},
		Times:     map[string]time.Time{"createdAt": created, "updatedAt": created},
		Addresses: []map[string]string{{"state": "IL", "city": "Springfield"}, {"state": "WI", "city": "Madison"}},
		Custom:    map[string]any{"seats": 10.0, "tier": "gold", "renewal": "2027-03-01", "channels": []any{"mail", "sms"}, "vip": true},
	}
	indexed := s.Indexed()
	for _, c := range []struct {
		c    Condition
		want bool
	}{
		{cond("email", "eq", "ANN@example.com"), true},
		{cond("email", "neq", "ann@example.com"), false},
		{cond("name", "in", nil, "Bob", "ann lee"), true},
		{cond("name", "notIn", nil, "Bob"), true},
		{cond("phone", "exists", nil), false},
		{cond("phone", "notExists", nil), true},
		{cond("phone", "neq", "+15550102030"), true}, // no phone: not equal
		{cond("emailStatus", "eq", "Valid"), true},
		{cond("leadScore", "gt", 60), false},
		{cond("leadScore", "gte", 60), true},
		{cond("leadScore", "lt", 60), false},
		{cond("leadScore", "lte", 60), true},
		{cond("leadScore", "eq", 60.0), true},
		{cond("leadScore", "in", nil, 50, 60), true},
		{cond("leadScore", "notIn", nil, 50, 70), true},
		{cond("customFields.renewal", "in", nil, "2027-03-01"), true},
		{cond("engagement.numOfEmailOpens", "gte", 3), true},
		{cond("engagement.numOfEmailClicks", "lt", 1), false}, // absent: no comparison holds
		{cond("engagement.numOfEmailClicks", "notExists", nil), true},
		{cond("createdAt", "gte", "2026-11-21T09:30:00.123Z"), true},
		{cond("createdAt", "gt", "2026-11-21T09:30:00.123Z"), false},
		{cond("engagement.lastEmailOpenDate", "exists", nil), false},
		{cond("tags", "contains", "vip"), true},
		{cond("tags", "notContains", "customer"), true},
		{cond("tags", "notContains", "lead"), false},
		{cond("tags", "exists", nil), true},
		{cond("address.state", "eq", "WI"), true},
		{cond("address.state", "neq", "IL"), false}, // one property is in IL
		{cond("address.state", "neq", "OH"), true},
		{cond("address.zip", "exists", nil), false},
		{cond("customFields.seats", "gte", 10), true},
		{cond("customFields.seats", "gt", 10), false},
		{cond("customFields.tier", "in", nil, "silver", "gold"), true},
		{cond("customFields.renewal", "lt", "2027-03-02"), true},
		{cond("customFields.renewal", "lt", "2027-03-01"), false},
		{cond("customFields.channels", "contains", "sms"), true},
		{cond("customFields.channels", "notContains", "call"), true},
		{cond("customFields.channels", "exists", nil), true},
		{cond("customFields.vip", "eq", true), true},
		{cond("customFields.vip", "eq", false), false},
		{cond("customFields.missing", "exists", nil), false},
		{cond("customFields.missing", "neq", "x"), true},
	} {
		f := (Filter{Groups: []Group{{Conditions: []Condition{c.c}}}}).Compile()
		if got := f.Matches(s); got != c.want {
			t.Errorf("%s %s %s%s: %v, want %v", c.c.Attribute, c.c.Operator, c.c.Value, c.c.Values, got, c.want)
		}
		if got := f.Matches(indexed); got != c.want { // its values folded once, kept for every filter
			t.Errorf("%s %s %s%s on the indexed subject: %v, want %v", c.c.Attribute, c.c.Operator, c.c.Value, c.c.Values, got, c.want)
		}
	}
}

// A filter holds when every condition of one of its groups does.
func TestFilterMatches(t *testing.T) {
	s := Subject{LeadScore: 70, Tags: []string{"lead"}, Addresses: []map[string]string{{"state": "IL"}}}
	illinois := Group{Conditions: []Condition{cond("address.state", "eq", "IL"), cond("leadScore", "gt", 60), cond("tags", "notContains", "customer")}}
	vip := Group{Conditions: []Condition{cond("tags", "contains", "vip")}}
	for _, c := range []struct {
		f    Filter
		want bool
	}{
		{Filter{Groups: []Group{illinois}}, true},
		{Filter{Groups: []Group{vip}}, false},
		{Filter{Groups: []Group{vip, illinois}}, true},
		{Filter{Groups: []Group{{Conditions: append(illinois.Conditions, cond("tags", "contains", "vip"))}}}, false},
	} {
		if got := c.f.Compile().Matches(s); got != c.want {
			t.Errorf("%+v: %v, want %v", c.f, got, c.want)
		}
	}
}

// BenchmarkWorstSegments: what include=segments evaluates at the most, 100 segments of 25
// conditions, each an in of 100 names (a 64 KiB body) that the contact's name meets at the
// last value, but for the last condition of each group: every comparison is made.
func BenchmarkWorstSegments(b *testing.B) {
	var groups []Group
	for range MaxGroups {
		var conds []Condition
		for c := range MaxConditions / MaxGroups {
			var values []any
			for v := range MaxValues {
				values = append(values, fmt.Sprintf("name %014d", v))
			}
			if c == MaxConditions/MaxGroups-1 {
				values[MaxValues-1] = "nobody"
			}
			conds = append(conds, cond("name", "in", nil, values...))
		}
		groups = append(groups, Group{Conditions: conds})
	}
	f := Filter{Groups: groups}.Compile()
	s := Subject{Text: map[string]string{"name": fmt.Sprintf("NAME %014d", MaxValues-1)}}
	b.ResetTimer()
	for b.Loop() {
		for range MaxPerAccount {
			if f.Matches(s) {
				b.Fatal("matched")
			}
		}
	}
}
