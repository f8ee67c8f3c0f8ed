package httpapi

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/apitime"
)

// TestContactJSONMatchesEncodingJSON: the hand-written contact body is byte for byte what
// the generated responses write with encoding/json, for contacts with every field filled
// (so a field added to the spec and not to appendContact fails here), optional ones absent,
// and text that needs escaping.
func TestContactJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		var c api.Contact
		fill(rng, reflect.ValueOf(&c).Elem(), i%4 != 0)
		var warnings []api.Warning
		fill(rng, reflect.ValueOf(&warnings).Elem(), true)
		check := func(name string, generated, handWritten func(*httptest.ResponseRecorder) error) {
			t.Helper()
			want, got := httptest.NewRecorder(), httptest.NewRecorder()
			if err := generated(want); err != nil {
				t.Fatal(err)
			}
			if err := handWritten(got); err != nil {
				t.Fatal(err)
			}
			if got.Code != want.Code || !reflect.DeepEqual(got.Header(), want.Header()) || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
				t.Fatalf("%s, case %d:\n got %d %v %s\nwant %d %v %s", name, i, got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
			}
		}
		check("GET", func(w *httptest.ResponseRecorder) error {
			return api.GetContact200JSONResponse(c).VisitGetContactResponse(w)
		}, func(w *httptest.ResponseRecorder) error {
			return contactResponse{contact: &c}.VisitGetContactResponse(w)
		})
		check("POST", func(w *httptest.ResponseRecorder) error {
			return api.CreateContact200JSONResponse{Contact: c, Warnings: warnings}.VisitCreateContactResponse(w)
		}, func(w *httptest.ResponseRecorder) error {
			return contactResponse{contact: &c, created: true, warnings: warnings}.VisitCreateContactResponse(w)
		})
	}
}

// texts are strings encoding/json writes as they are and strings it escapes.
var texts = []string{"", "jane@example.com", "Jane Doe", "123 N Main St", `a "quoted" \ word`, "<b>&amp;</b>",
	"tab\tline\nreturn\r", "\x00\x1f\x7f", "café ☕", "\u2028\u2029", "bad \xff utf-8", "https://x.test/consent/cs_1?a=b&c=d"}

// rawObjects are custom field values as jsonb prints them: spaced, with text encoding/json
// escapes.
var rawObjects = []string{"{}", `{"seats": 12.5, "tier": "gold"}`, `{"a": ["x", "y"], "b": true, "c": "<b>&amp;</b>"}`,
	"{\"line\": \"\u2028\u2029 café\", \"t\": \"tab\\tq\\\"\"}"}

// fill sets every field v holds to a random value; pointers and slices are left nil
// half the time unless all is set.
func fill(rng *rand.Rand, v reflect.Value, all bool) {
	if v.Type() == reflect.TypeFor[json.RawMessage]() { // customFields, as PostgreSQL's jsonb writes them
		v.SetBytes([]byte(rawObjects[rng.IntN(len(rawObjects))]))
		return
	}
	if v.Type() == reflect.TypeFor[apitime.Time]() {
		v.Set(reflect.ValueOf(apitime.From(time.UnixMilli(rng.Int64N(4e12)))))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(texts[rng.IntN(len(texts))])
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(rng.Int64N(2000) - 10)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(rng, v.Field(i), all)
		}
	case reflect.Pointer:
		if all || rng.IntN(2) == 0 {
			v.Set(reflect.New(v.Type().Elem()))
			fill(rng, v.Elem(), all)
		}
	case reflect.Slice:
		if all || rng.IntN(2) == 0 {
			n := rng.IntN(4)
			v.Set(reflect.MakeSlice(v.Type(), n, n))
			for i := range n {
				fill(rng, v.Index(i), all)
			}
		}
	default:
		panic("fill: no values for " + v.Type().String())
	}
}

// BenchmarkContactJSON: a contactbench GET's body.
func BenchmarkContactJSON(b *testing.B) {
	name, when := "Seed Contact 7", apitime.From(time.Now())
	c := api.Contact{ContactId: "019350b6-5d7e-7c3a-9f1e-2b4c6d8e0a12", CreatedAt: when, Email: "seed-7@example.com",
		EmailStatus: api.EmailStatusValid, Name: &name, ProofOfConsentUrl: "http://127.0.0.1:8080/consent/cs_seed0000000000000000000000007",
		RecordStatus: api.Marketing, Tags: []string{"seed", "lead"}, Engagement: api.Engagement{LastEmailOpenDate: &when, NumOfEmailOpens: 3},
		Properties: []api.Property{{PropertyId: "019350b6-5d7e-7c3a-9f1e-2b4c6d8e0a55", Address: api.Address{AptOrUnitNumber: "4",
			StreetAddress: "123 N Main St", City: "Springfield", County: "Sangamon County", State: "IL", Zip: "62704"}}}}
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = api.GetContact200JSONResponse(c).VisitGetContactResponse(httptest.NewRecorder())
		}
	})
	b.Run("appendContact", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = contactResponse{contact: &c}.VisitGetContactResponse(httptest.NewRecorder())
		}
	})
}

// appendRawJSON writes what encoding/json writes for a json.RawMessage, on random values
// spelled as PostgreSQL prints jsonb (a space after each colon and comma) and indented, with
// text that needs escaping at every place in a string.
func TestAppendRawJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	pieces := append(texts, `\`, `"`, "\u2028", "\xe2\x80", "\xe2", "<", "é\u2029x")
	var value func(depth int) any
	value = func(depth int) any {
		switch n := rng.IntN(8); {
		case depth < 3 && n == 0:
			m := map[string]any{}
			for range rng.IntN(4) {
				m[pieces[rng.IntN(len(pieces))]] = value(depth + 1)
			}
			return m
		case depth < 3 && n == 1:
			a := make([]any, rng.IntN(4))
			for i := range a {
				a[i] = value(depth + 1)
			}
			return a
		case n == 2:
			return rng.Float64() * 1e6
		case n == 3:
			return rng.IntN(2) == 0
		case n == 4:
			return nil
		default:
			var s strings.Builder
			for range rng.IntN(4) {
				s.WriteString(pieces[rng.IntN(len(pieces))])
			}
			return s.String()
		}
	}
	for i := range 5000 {
		v := map[string]any{"k": value(0)}
		var raw []byte
		if i%2 == 0 { // as jsonb prints: ", " and ": "
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(v); err != nil {
				t.Fatal(err)
			}
			raw = bytes.ReplaceAll(bytes.ReplaceAll(buf.Bytes(), []byte(`,"`), []byte(`, "`)), []byte(`":`), []byte(`": `))
		} else {
			raw, _ = json.MarshalIndent(v, "", "\t")
		}
		want, err := json.Marshal(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if got := appendRawJSON(nil, raw); !bytes.Equal(got, want) {
			t.Fatalf("%q:\n got %q\nwant %q", raw, got, want)
		}
	}
}

// BenchmarkAppendRawJSON: the 20 values of contactbench's fields, as jsonb prints them.
func BenchmarkAppendRawJSON(b *testing.B) {
	raw := []byte(`{"plan": "pro", "site": "https://example.com/7", "notes": "Met at the open house; wants a follow-up in March.", ` +
		`"seats": 7, "score": 7.5, "title": "Head of Operations", "budget": 12000, "mobile": "+15550100007", "region": "Midwest", ` +
		`"source": "Website", "visits": 7, "churned": false, "company": "Example Corp 7", "renewal": "2027-03-01", "vip": true, ` +
		`"channels": ["sms", "mail"], "industry": "Real estate", "referrer": "partner-7", "last_call": "2026-11-27T09:30:00.000Z", ` +
		`"work_email": "person7@corp.example"}`)
	buf := make([]byte, 0, 1024)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		buf = appendRawJSON(buf[:0], raw)
	}
}
