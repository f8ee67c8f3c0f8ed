package httpapi_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/apicore"
	"github.com/contactd/contactd/internal/testkit"
)

// The event catalog lists every type of the spec's EventType, in its order, each with a
// self-contained schema that admits its example and refuses another type's details.
func TestEventCatalog(t *testing.T) {
	t.Parallel()
	a := testkit.NewAPI(t)
	_, key := a.Account("acme")
	r := a.Do("GET", "/public/v1/event-types", key, nil)
	var list api.EventTypeList
	r.JSON(t, &list)
	if r.Status != 200 {
		t.Fatalf("GET /event-types: %d %s", r.Status, r.Body)
	}
	// a reviewed list: a type added to the spec must reach the catalog (and this list)
	want := []string{"FormSubmission", "ContactEnriched", "DashboardClick", "EmailClick", "PostcardScan",
		"ContactUnsubscribed", "ContactDetailsUpdated", "TagsAdded", "TagsRemoved", "FelixAIHandoff",
		"ContactErased", "ContactsMerged", "SubscriptionFailing", "ContactEnteredSegment", "ContactLeftSegment"}
	var got []string
	for _, e := range list.EventTypes {
		got = append(got, string(e.EventType))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("catalog types %v, want %v", got, want)
	}
	catalog, err := apicore.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list.EventTypes {
		schema, _ := json.Marshal(e.Schema)
		if strings.Contains(string(schema), "$ref") || e.Schema["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
			t.Errorf("%s: the schema is not self-contained JSON Schema: %s", e.EventType, schema)
		}
		if e.Description == "" || e.Example["eventType"] != string(e.EventType) {
			t.Errorf("%s: description %q, example %v", e.EventType, e.Description, e.Example)
		}
		data := e.Example["data"].(map[string]any)
		if _, ok := data[e.InfoMember]; !ok {
			t.Errorf("%s: the example has no %s", e.EventType, e.InfoMember)
		}
		example, _ := json.Marshal(e.Example)
		if err := catalog.Validate(example); err != nil {
			t.Errorf("%s: its example fails its schema: %v", e.EventType, err)
		}
		// the same event with another type's member instead of its own is refused
		other := "tagsRemovedInfo"
		if e.InfoMember == other {
			other = "tagsAddedInfo"
		}
		data[other] = data[e.InfoMember]
		delete(data, e.InfoMember)
		wrong, _ := json.Marshal(e.Example)
		if err := catalog.Validate(wrong); err == nil {
			t.Errorf("%s: an event with %s instead of %s passes its schema", e.EventType, other, e.InfoMember)
		}
	}
	// the delivered payload's schema documents an example of every type, under its name
	spec, err := api.GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	hooks, _ := json.Marshal(spec.Extensions["x-webhooks"])
	for _, typ := range want {
		if !strings.Contains(string(hooks), `"#/components/examples/`+typ+`Event"`) {
			t.Errorf("x-webhooks lacks the %s example", typ)
		}
	}
}
