package contact

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/db"
)

func TestFromJoinedRows(t *testing.T) {
	t.Parallel()
	s := &Service{now: func() time.Time { return scoreNow }}
	if _, err := s.fromJoinedRows(nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("no rows: %v, want ErrNotFound", err)
	}
	contact := db.Contact{ContactID: uuid.Must(uuid.NewV7()), Email: "a@example.com", Tags: []string{"x"}}

	c, err := s.fromJoinedRows([]db.ContactGetByIDRow{{Contact: contact}})
	if err != nil || c.Properties == nil || len(c.Properties) != 0 || c.Email != "a@example.com" {
		t.Errorf("without properties: %+v %v, want an empty, non-nil list", c.Properties, err)
	}

	first, second := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	city1, city2, zip := "Springfield", "Chicago", "62704"
	c, err = s.fromJoinedRows([]db.ContactGetByIDRow{ // PostgreSQL returns joined rows in no set order
		{Contact: contact, PropertyID: &second, City: &city2},
		{Contact: contact, PropertyID: &first, City: &city1, Zip: &zip},
	})
	if err != nil || len(c.Properties) != 2 {
		t.Fatalf("two properties: %+v %v", c.Properties, err)
	}
	if c.Properties[0].ID != first || c.Properties[0].Address.City != city1 || c.Properties[0].Address.Zip != zip ||
		c.Properties[1].ID != second || c.Properties[1].Address.City != city2 || c.Properties[1].Address.Zip != "" {
		t.Errorf("properties = %+v, want the older first, NULL columns empty", c.Properties)
	}
}
