package contact

import (
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/contactd/contactd/internal/address"
)

// storedProperty is an active property as contacts.active_properties keeps it, under the
// API's names (PostgreSQL's active_properties_of, migration 00005, builds the same objects).
type storedProperty struct {
	ID              uuid.UUID `json:"propertyId"`
	AptOrUnitNumber string    `json:"aptOrUnitNumber"`
	StreetAddress   string    `json:"streetAddress"`
	City            string    `json:"city"`
	County          string    `json:"county"`
	State           string    `json:"state"`
	Zip             string    `json:"zip"`
}

// storedProperties is the active_properties value of a contact with these properties.
func storedProperties(props []Property) []byte {
	out := make([]storedProperty, len(props))
	for i, p := range props {
		a := p.Address
		out[i] = storedProperty{ID: p.ID, AptOrUnitNumber: a.AptOrUnitNumber, StreetAddress: a.StreetAddress,
			City: a.City, County: a.County, State: a.State, Zip: a.Zip}
	}
	b, err := json.Marshal(out)
	if err != nil {
		panic(err) // strings and UUIDs always marshal
	}
	return b
}

// propertiesOf decodes a row's active_properties, in the order stored (property id).
func propertiesOf(stored []byte) ([]Property, error) {
	var in []storedProperty
	if err := json.Unmarshal(stored, &in); err != nil {
		return nil, fmt.Errorf("contact's active_properties: %w", err)
	}
	props := make([]Property, len(in))
	for i, p := range in {
		props[i] = Property{ID: p.ID, Address: address.Address{AptOrUnitNumber: p.AptOrUnitNumber,
			StreetAddress: p.StreetAddress, City: p.City, County: p.County, State: p.State, Zip: p.Zip}}
	}
	return props, nil
}
