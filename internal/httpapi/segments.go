package httpapi

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/apitime"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/platform/ids"
	"github.com/contactd/contactd/internal/segment"
)

// CreateSegment implements POST /public/v1/segments.
func (s *Server) CreateSegment(ctx context.Context, req api.CreateSegmentRequestObject) (api.CreateSegmentResponseObject, error) {
	kind := segment.Dynamic
	if req.Body.Kind != nil {
		kind = string(*req.Body.Kind)
	}
	sg, err := s.segments.Create(ctx, principal(ctx).AccountID, req.Body.Name, kind, filterFromAPI(req.Body.Filter))
	if err != nil {
		return nil, err
	}
	return api.CreateSegment200JSONResponse(segmentToAPI(sg)), nil
}

// ListSegments implements GET /public/v1/segments.
func (s *Server) ListSegments(ctx context.Context, _ api.ListSegmentsRequestObject) (api.ListSegmentsResponseObject, error) {
	sgs, err := s.segments.List(ctx, principal(ctx).AccountID)
	if err != nil {
		return nil, err
	}
	out := api.SegmentList{Segments: make([]api.Segment, len(sgs))}
	for i, sg := range sgs {
		out.Segments[i] = segmentToAPI(sg)
	}
	return api.ListSegments200JSONResponse(out), nil
}

// GetSegment implements GET /public/v1/segments/{segmentId}.
func (s *Server) GetSegment(ctx context.Context, req api.GetSegmentRequestObject) (api.GetSegmentResponseObject, error) {
	id, err := segmentID(req.SegmentId)
	if err != nil {
		return nil, err
	}
	sg, err := s.segments.Get(ctx, principal(ctx).AccountID, id)
	if err != nil {
		return nil, err
	}
	return api.GetSegment200JSONResponse(segmentToAPI(sg)), nil
}

// UpdateSegment implements PATCH /public/v1/segments/{segmentId}.
func (s *Server) UpdateSegment(ctx context.Context, req api.UpdateSegmentRequestObject) (api.UpdateSegmentResponseObject, error) {
	id, err := segmentID(req.SegmentId)
	if err != nil {
		return nil, err
	}
	c := segment.Change{Name: req.Body.Name}
	if req.Body.Filter != nil {
		f := filterFromAPI(*req.Body.Filter)
		c.Filter = &f
	}
	sg, err := s.segments.Update(ctx, principal(ctx).AccountID, id, c)
	if err != nil {
		return nil, err
	}
	return api.UpdateSegment200JSONResponse(segmentToAPI(sg)), nil
}

// DeleteSegment implements DELETE /public/v1/segments/{segmentId}.
func (s *Server) DeleteSegment(ctx context.Context, req api.DeleteSegmentRequestObject) (api.DeleteSegmentResponseObject, error) {
	id, err := segmentID(req.SegmentId)
	if err != nil {
		return nil, err
	}
	if err := s.segments.Delete(ctx, principal(ctx).AccountID, id); err != nil {
		return nil, err
	}
	return api.DeleteSegment204Response{}, nil
}

// segmentID is the path's id; one that is not a canonical UUID names no segment.
func segmentID(s string) (uuid.UUID, error) {
	id, ok := ids.Parse(s)
	if !ok {
		return uuid.Nil, segment.ErrNotFound
	}
	return id, nil
}

func filterFromAPI(f api.SegmentFilter) segment.Filter {
	out := segment.Filter{Groups: make([]segment.Group, len(f.Groups))}
	for i, g := range f.Groups {
		out.Groups[i].Conditions = make([]segment.Condition, len(g.Conditions))
		for j, c := range g.Conditions {
			sc := segment.Condition{Attribute: c.Attribute, Operator: string(c.Operator)}
			if c.Value != nil {
				sc.Value = *c.Value
			}
			if c.Values != nil {
				sc.Values = *c.Values
			}
			out.Groups[i].Conditions[j] = sc
		}
	}
	return out
}

func segmentToAPI(sg segment.Segment) api.Segment {
	out := api.Segment{SegmentId: sg.ID.String(), Name: sg.Name, Kind: api.SegmentKind(sg.Kind),
		Status: api.SegmentStatus(sg.Status), Evaluated: sg.Evaluated,
		CreatedAt: apitime.From(sg.CreatedAt), UpdatedAt: apitime.From(sg.UpdatedAt)}
	out.Filter.Groups = make([]api.SegmentGroup, len(sg.Filter.Groups))
	for i, g := range sg.Filter.Groups {
		conds := make([]api.SegmentCondition, len(g.Conditions))
		for j, c := range g.Conditions {
			ac := api.SegmentCondition{Attribute: c.Attribute, Operator: api.SegmentConditionOperator(c.Operator)}
			if c.Value != nil {
				v := api.SegmentOperand(c.Value)
				ac.Value = &v
			}
			if c.Values != nil {
				vs := make([]api.SegmentOperand, len(c.Values))
				for k, v := range c.Values {
					vs[k] = api.SegmentOperand(v)
				}
				ac.Values = &vs
			}
			conds[j] = ac
		}
		out.Filter.Groups[i].Conditions = conds
	}
	return out
}

// ListSegmentMembers implements GET /public/v1/segments/{segmentId}/contacts.
func (s *Server) ListSegmentMembers(ctx context.Context, req api.ListSegmentMembersRequestObject) (api.ListSegmentMembersResponseObject, error) {
	id, err := segmentID(req.SegmentId)
	if err != nil {
		return nil, err
	}
	limit := segment.DefaultMembersPage
	if req.Params.Limit != nil {
		limit = *req.Params.Limit
	}
	after := uuid.Nil
	if req.Params.Cursor != nil {
		var ok bool
		if after, ok = ids.Parse(*req.Params.Cursor); !ok {
			return nil, apperr.Invalid(apperr.Field("query.cursor", "format", "not a cursor this list gave"))
		}
	}
	page, err := s.segments.Members(ctx, principal(ctx).AccountID, id, after, limit)
	if err != nil {
		return nil, err
	}
	out := api.SegmentMemberList{Count: page.Count, Members: make([]api.SegmentMember, len(page.Members))}
	for i, m := range page.Members {
		out.Members[i] = api.SegmentMember{ContactId: m.ContactID.String(), AddedAt: apitime.From(m.AddedAt)}
	}
	if page.Next != nil {
		next := page.Next.String()
		out.NextCursor = &next
	}
	return api.ListSegmentMembers200JSONResponse(out), nil
}

// AddSegmentMember implements PUT /public/v1/segments/{segmentId}/contacts/{contactId}.
func (s *Server) AddSegmentMember(ctx context.Context, req api.AddSegmentMemberRequestObject) (api.AddSegmentMemberResponseObject, error) {
	if err := s.setSegmentMember(ctx, req.SegmentId, req.ContactId, true); err != nil {
		return nil, err
	}
	return api.AddSegmentMember204Response{}, nil
}

// RemoveSegmentMember implements DELETE /public/v1/segments/{segmentId}/contacts/{contactId}.
func (s *Server) RemoveSegmentMember(ctx context.Context, req api.RemoveSegmentMemberRequestObject) (api.RemoveSegmentMemberResponseObject, error) {
	if err := s.setSegmentMember(ctx, req.SegmentId, req.ContactId, false); err != nil {
		return nil, err
	}
	return api.RemoveSegmentMember204Response{}, nil
}

func (s *Server) setSegmentMember(ctx context.Context, rawSegment, rawContact string, member bool) error {
	id, err := segmentID(rawSegment)
	if err != nil {
		return err
	}
	contactID, ok := ids.Parse(rawContact)
	if !ok {
		// the segment is checked first, as for a contact that does not exist
		if _, err := s.segments.Get(ctx, principal(ctx).AccountID, id); err != nil {
			return err
		}
		return contact.ErrNotFound
	}
	err = s.segments.SetMember(ctx, principal(ctx).AccountID, id, contactID, member)
	if errors.Is(err, segment.ErrNoContact) {
		return contact.ErrNotFound
	}
	return err
}
