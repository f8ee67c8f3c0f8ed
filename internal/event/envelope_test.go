package event

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/internal/apitime"
)

// envelopeByEncodingJSON is what envelope writes directly, made by encoding/json.
func envelopeByEncodingJSON(id uuid.UUID, ev Event) ([]byte, error) {
	data, err := json.Marshal(map[string]any{"contactInfo": ev.Contact, infoKeys[ev.Type]: ev.Info})
	if err != nil {
		return nil, err
	}
	return json.Marshal(Envelope{EventID: id.String(), EventType: ev.Type, EventDate: apitime.From(ev.At), Data: data})
}

// Every type's payload, with text that encoding/json escapes (HTML's <, > and &, quotes,
// control characters, invalid UTF-8, U+2028), is byte for byte encoding/json's.
func TestEnvelopeIsEncodingJSONs(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"", "a", "<b>&amp;", `"quoted"\`, "\x01\t\n", "\xff\xfe", "\u2028\u2029", "é日本", "plain@example.com"}
	text := func() string {
		s := ""
		for range rng.IntN(4) {
			s += pieces[rng.IntN(len(pieces))]
		}
		return s
	}
	types := append([]EventType{"NoSuchType"}, FormSubmission, ContactEnriched, DashboardClick, EmailClick, PostcardScan,
		ContactUnsubscribed, ContactDetailsUpdated, TagsAdded, TagsRemoved, FelixAIHandoff, ContactErased, ContactsMerged,
		SubscriptionFailing, ContactEnteredSegment, ContactLeftSegment)
	for i := range 5000 {
		typ := types[rng.IntN(len(types))]
		infos := []any{nil, TagsAddedInfo{TagsAdded: []string{text(), text()}}, SegmentInfo{SegmentID: text(), SegmentName: text()},
			ActivityInfo{ActivityID: text(), OccurredAt: apitime.From(time.Unix(rng.Int64N(1<<32), 0)), Details: json.RawMessage(`{"a": [1, "<x>"]}`)},
			map[string]any{text(): text()}}
		ev := Event{Type: typ, ContactID: uuid.New(), Contact: ContactInfo{ContactID: text(), PropertyID: text(), EmailID: text(), AssignedUserEmailID: text()},
			Info: infos[rng.IntN(len(infos))], At: time.Unix(0, rng.Int64N(1<<62))}
		id := uuid.New()
		want, werr := envelopeByEncodingJSON(id, ev)
		got, gerr := envelope(id, ev)
		if fmt.Sprint(werr) != fmt.Sprint(gerr) || string(got) != string(want) {
			t.Fatalf("event %d (%s):\n got %s (%v)\nwant %s (%v)", i, typ, got, gerr, want, werr)
		}
	}
}

func BenchmarkEnvelope(b *testing.B) {
	ev := Event{Type: ContactEnteredSegment, ContactID: uuid.New(), Contact: ContactInfo{ContactID: uuid.NewString(), EmailID: "jane.doe@example.com"},
		Info: SegmentInfo{SegmentID: uuid.NewString(), SegmentName: "Illinois leads"}, At: time.Now()}
	id := uuid.New()
	for b.Loop() {
		if _, err := envelope(id, ev); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEnvelopeByEncodingJSON(b *testing.B) {
	ev := Event{Type: ContactEnteredSegment, ContactID: uuid.New(), Contact: ContactInfo{ContactID: uuid.NewString(), EmailID: "jane.doe@example.com"},
		Info: SegmentInfo{SegmentID: uuid.NewString(), SegmentName: "Illinois leads"}, At: time.Now()}
	id := uuid.New()
	for b.Loop() {
		if _, err := envelopeByEncodingJSON(id, ev); err != nil {
			b.Fatal(err)
		}
	}
}
