package httpapi

import (
	"context"

	"github.com/contactd/contactd/gen/api"
)

// AddContactTags implements POST /public/v1/contact/{contactId}/tags.
func (s *Server) AddContactTags(ctx context.Context, req api.AddContactTagsRequestObject) (api.AddContactTagsResponseObject, error) {
	tags, err := s.contacts.AddTags(ctx, principal(ctx).AccountID, req.ContactId, req.Body.Tags)
	if err != nil {
		return nil, err
	}
	return api.AddContactTags200JSONResponse{TagsResultJSONResponse: api.TagsResultJSONResponse{Tags: tags}}, nil
}

// ReplaceContactTags implements PUT /public/v1/contact/{contactId}/tags.
func (s *Server) ReplaceContactTags(ctx context.Context, req api.ReplaceContactTagsRequestObject) (api.ReplaceContactTagsResponseObject, error) {
	tags, err := s.contacts.ReplaceTags(ctx, principal(ctx).AccountID, req.ContactId, req.Body.Tags)
	if err != nil {
		return nil, err
	}
	return api.ReplaceContactTags200JSONResponse{TagsResultJSONResponse: api.TagsResultJSONResponse{Tags: tags}}, nil
}

// RemoveContactTags implements DELETE /public/v1/contact/{contactId}/tags.
func (s *Server) RemoveContactTags(ctx context.Context, req api.RemoveContactTagsRequestObject) (api.RemoveContactTagsResponseObject, error) {
	tags, err := s.contacts.RemoveTags(ctx, principal(ctx).AccountID, req.ContactId, req.Body.Tags)
	if err != nil {
		return nil, err
	}
	return api.RemoveContactTags200JSONResponse{TagsResultJSONResponse: api.TagsResultJSONResponse{Tags: tags}}, nil
}
