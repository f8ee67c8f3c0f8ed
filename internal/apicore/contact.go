package apicore

import (
	"encoding/json"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/contact"
)

// CreateInput is the contact b creates; fields is b as the client sent it (the consent record).
func CreateInput(b api.CreateContactRequest, origin contact.Origin, fields json.RawMessage) contact.CreateInput {
	in := contact.CreateInput{
		Email: string(b.Email), Name: b.Name, Phone: b.Phone, Address: b.Address,
		CRM: crmFromAPI(b.CrmFields), AssignedUserEmailID: (*string)(b.AssignedUserEmailId),
		Origin: origin, Fields: fields,
	}
	if b.Tags != nil {
		in.Tags = *b.Tags
	}
	if b.CustomFields != nil {
		in.CustomFields = json.RawMessage(*b.CustomFields)
	}
	return in
}

func crmFromAPI(f *api.CrmFields) *contact.CRMFields {
	if f == nil {
		return nil
	}
	c := &contact.CRMFields{Name: f.Name, URL: f.Url, Source: f.Source, Stage: f.Stage}
	if f.CreatedDate != nil {
		t := f.CreatedDate.Time
		c.CreatedDate = &t
	}
	return c
}
