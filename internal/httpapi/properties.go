package httpapi

import (
	"context"

	"github.com/contactd/contactd/gen/api"
)

// AddContactProperty implements POST /public/v1/contact/{contactId}/property.
func (s *Server) AddContactProperty(ctx context.Context, req api.AddContactPropertyRequestObject) (api.AddContactPropertyResponseObject, error) {
	c, err := s.contacts.AddProperty(ctx, principal(ctx).AccountID, req.ContactId, req.Body.Address)
	if err != nil {
		return nil, err
	}
	out := s.contactToAPI(c)
	return contactResponse{contact: &out}, nil
}

// ArchiveProperty implements POST /public/v1/contact/property/{propertyId}/archive.
func (s *Server) ArchiveProperty(ctx context.Context, req api.ArchivePropertyRequestObject) (api.ArchivePropertyResponseObject, error) {
	c, err := s.contacts.ArchiveProperty(ctx, principal(ctx).AccountID, req.PropertyId)
	if err != nil {
		return nil, err
	}
	out := s.contactToAPI(c)
	return contactResponse{contact: &out}, nil
}
