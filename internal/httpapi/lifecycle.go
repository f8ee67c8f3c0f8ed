package httpapi

import (
	"context"
	"encoding/json"
	"time"

	"github.com/oapi-codegen/nullable"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/apitime"
	"github.com/contactd/contactd/internal/contact"
)

// UpdateContact implements PATCH /public/v1/contact/{contactId}.
func (s *Server) UpdateContact(ctx context.Context, req api.UpdateContactRequestObject) (api.UpdateContactResponseObject, error) {
	c, err := s.contacts.Update(ctx, principal(ctx).AccountID, req.ContactId, updateFromAPI(req.Body))
	if err != nil {
		return nil, err
	}
	out := s.contactToAPI(c)
	return contactResponse{contact: &out}, nil
}

// DeleteContact implements DELETE /public/v1/contact/{contactId}.
func (s *Server) DeleteContact(ctx context.Context, req api.DeleteContactRequestObject) (api.DeleteContactResponseObject, error) {
	if err := s.contacts.Delete(ctx, principal(ctx).AccountID, req.ContactId); err != nil {
		return nil, err
	}
	return api.DeleteContact204Response{}, nil
}

// RemoveContactTags implements DELETE /public/v1/contact/{contactId}/tags.
func (s *Server) RemoveContactTags(ctx context.Context, req api.RemoveContactTagsRequestObject) (api.RemoveContactTagsResponseObject, error) {
	tags, err := s.contacts.RemoveTags(ctx, principal(ctx).AccountID, req.ContactId, req.Body.Tags)
	if err != nil {
		return nil, err
	}
	return api.RemoveContactTags200JSONResponse{TagsResultJSONResponse: api.TagsResultJSONResponse{Tags: tags}}, nil
}

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

// RecordContactActivity implements POST /public/v1/contact/{contactId}/activity.
func (s *Server) RecordContactActivity(ctx context.Context, req api.RecordContactActivityRequestObject) (api.RecordContactActivityResponseObject, error) {
	b := req.Body
	in := contact.ActivityInput{Type: string(b.Type), ID: b.ActivityId}
	if b.OccurredAt != nil {
		t := b.OccurredAt.Time
		in.OccurredAt = &t
	}
	if b.Details != nil {
		in.Details, _ = json.Marshal(*b.Details)
	}
	c, replayed, err := s.contacts.RecordActivity(ctx, principal(ctx).AccountID, req.ContactId, in)
	if err != nil {
		return nil, err
	}
	resp := api.RecordContactActivity200JSONResponse{Body: s.contactToAPI(c)}
	if replayed {
		yes := "true"
		resp.Headers.IdempotentReplayed = &yes
	}
	return resp, nil
}

func updateFromAPI(b *api.UpdateContactRequest) contact.UpdateInput {
	in := contact.UpdateInput{
		Name:                patchOf(b.Name, same[string]),
		Phone:               patchOf(b.Phone, same[string]),
		AssignedUserEmailID: patchOf(b.AssignedUserEmailId, func(e api.Email) string { return string(e) }),
		CRM:                 patchOf(b.CrmFields, crmPatch),
	}
	if b.Email != nil {
		e := string(*b.Email)
		in.Email = contact.Patch[string]{Set: true, Value: &e}
	}
	if b.RecordStatus != nil {
		r := string(*b.RecordStatus)
		in.RecordStatus = contact.Patch[string]{Set: true, Value: &r}
	}
	return in
}

func crmPatch(f api.CrmFieldsPatch) contact.CRMPatch {
	return contact.CRMPatch{
		Name: patchOf(f.Name, same[string]), URL: patchOf(f.Url, same[string]),
		Source: patchOf(f.Source, same[string]), Stage: patchOf(f.Stage, same[string]),
		CreatedDate: patchOf(f.CreatedDate, func(t apitime.Time) time.Time { return t.Time }),
	}
}

// patchOf turns a JSON field that may be absent, null or a value into a domain Patch.
func patchOf[T, U any](n nullable.Nullable[T], conv func(T) U) contact.Patch[U] {
	if !n.IsSpecified() {
		return contact.Patch[U]{}
	}
	if n.IsNull() {
		return contact.Patch[U]{Set: true}
	}
	v := conv(n.MustGet())
	return contact.Patch[U]{Set: true, Value: &v}
}

func same[T any](v T) T { return v }
