package contact

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
	"github.com/contactd/contactd/internal/address"
)

func TestStoredProperties(t *testing.T) {
	t.Parallel()
	s := &Service{now: func() time.Time { return scoreNow }}
	row := db.ContactRow{ContactID: uuid.Must(uuid.NewV7()), Email: "a@example.com", Tags: []string{"x"}}

	row.ActiveProperties = storedProperties(nil)
	if string(row.ActiveProperties) != "[]" {
		t.Errorf("no properties stored as %s, want []", row.ActiveProperties)
	}
	c, err := s.FromRow(row)
	if err != nil || c.Properties == nil || len(c.Properties) != 0 || c.Email != "a@example.com" {
		t.Errorf("without properties: %+v %v, want an empty, non-nil list", c.Properties, err)
	}

	props := []Property{
		{ID: uuid.Must(uuid.NewV7()), Address: address.Address{StreetAddress: "1 Main St", City: "Springfield", County: "Sangamon", State: "IL", Zip: "62704"}},
		{ID: uuid.Must(uuid.NewV7()), Address: address.Address{AptOrUnitNumber: "Apt 2", StreetAddress: "5 Elm St", City: "Chicago", County: "Cook", State: "IL", Zip: "60601"}},
	}
	row.ActiveProperties = storedProperties(props)
	c, err = s.FromRow(row)
	if err != nil || len(c.Properties) != 2 || c.Properties[0] != props[0] || c.Properties[1] != props[1] {
		t.Errorf("round trip: %+v %v, want %+v", c.Properties, err, props)
	}

	// the names ContactRefreshProperties writes
	row.ActiveProperties = []byte(`[{"propertyId": "` + props[1].ID.String() + `", "zip": "60601", "city": "Chicago",
		"state": "IL", "county": "Cook", "streetAddress": "5 Elm St", "aptOrUnitNumber": "Apt 2"}]`)
	if c, err = s.FromRow(row); err != nil || len(c.Properties) != 1 || c.Properties[0] != props[1] {
		t.Errorf("as PostgreSQL builds it: %+v %v, want %+v", c.Properties, err, props[1])
	}

	row.ActiveProperties = []byte(`{"propertyId": 1}`)
	if _, err := s.FromRow(row); err == nil {
		t.Error("a malformed copy decoded without an error")
	}
}
