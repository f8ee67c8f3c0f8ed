package segment

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/contactd/contactd/internal/field"
)

// FuzzFilter: whatever a client sends as a filter, Check refuses it or returns one that
// compiles and evaluates on any contact without failing, and Check is stable: what it returns
// checks again to itself.
func FuzzFilter(f *testing.F) {
	for _, seed := range []string{
		`{"groups":[{"conditions":[{"attribute":"leadScore","operator":"gt","value":60}]}]}`,
		`{"groups":[{"conditions":[{"attribute":"tags","operator":"contains","value":"VIP"},{"attribute":"address.state","operator":"neq","value":"IL"}]},{"conditions":[{"attribute":"customFields.n","operator":"in","values":[1,"2",true]}]}]}`,
		`{"groups":[{"conditions":[{"attribute":"createdAt","operator":"gte","value":"2026-11-21T10:30:00+01:00"},{"attribute":"customFields.m","operator":"notContains","value":"a"}]}]}`,
		`{"groups":[{"conditions":[{"attribute":"customFields.d","operator":"lt","value":"2027-01-01"},{"attribute":"email","operator":"exists","value":null}]}]}`,
		`{"groups":[]}`, `{}`, `{"groups":[{"conditions":[{"attribute":"","operator":""}]}]}`,
	} {
		f.Add([]byte(seed))
	}
	defs, err := field.NewDefinitions(field.Field{Key: "n", Type: field.Number}, field.Field{Key: "d", Type: field.Date},
		field.Field{Key: "m", Type: field.MultiEnum, Options: []field.Option{{Value: "a"}, {Value: "b"}}},
		field.Field{Key: "t", Type: field.Text}, field.Field{Key: "p", Type: field.Phone})
	if err != nil {
		f.Fatal(err)
	}
	subject := Subject{Text: map[string]string{"email": "a@example.com", "name": "A"}, LeadScore: 61, Tags: []string{"vip"},
		Times: map[string]time.Time{"createdAt": time.Unix(1_800_000_000, 0)}, Addresses: []map[string]string{{"state": "IL"}},
		Custom: map[string]any{"n": 2.0, "d": "2026-12-31", "m": []any{"a"}, "t": "x", "p": "+15550102030"}}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var in Filter
		if json.Unmarshal(raw, &in) != nil {
			return
		}
		checked, errs := Check(in, defs, "body.filter")
		if len(errs) > 0 {
			return
		}
		again, errs := Check(checked, defs, "body.filter")
		a, _ := json.Marshal(checked)
		b, _ := json.Marshal(again)
		if len(errs) > 0 || string(a) != string(b) {
			t.Fatalf("checked %s, checked again %s (%v)", a, b, errs)
		}
		checked.Compile().Matches(subject)
	})
}
