package httpapi

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/apitime"
	"github.com/contactd/contactd/internal/ids"
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

// subjectOf is what a segment's filter reads of c, as the API shows it.
func subjectOf(c *api.Contact) (segment.Subject, error) {
	e := c.Engagement
	s := segment.Subject{
		Text: map[string]string{"email": c.Email, "name": deref(c.Name), "phone": deref(c.Phone),
			"assignedUserEmailId": deref(c.AssignedUserEmailId), "emailStatus": string(c.EmailStatus), "recordStatus": string(c.RecordStatus)},
		LeadScore: float64(c.LeadScore),
		Numbers: map[string]float64{"engagement.numOfAIHandoffs": float64(e.NumOfAIHandoffs), "engagement.numOfDashboardClicks": float64(e.NumOfDashboardClicks),
			"engagement.numOfDashboardViews": float64(e.NumOfDashboardViews), "engagement.numOfEmailClicks": float64(e.NumOfEmailClicks),
			"engagement.numOfEmailOpens": float64(e.NumOfEmailOpens), "engagement.numOfEmailSends": float64(e.NumOfEmailSends),
			"engagement.numOfFormSubmissions": float64(e.NumOfFormSubmissions), "engagement.numOfPostcardScans": float64(e.NumOfPostcardScans)},
		Times: map[string]time.Time{"createdAt": c.CreatedAt.Time, "updatedAt": c.UpdatedAt.Time},
	}
	for name, at := range map[string]*api.Timestamp{"lastAIHandoffDate": e.LastAIHandoffDate, "lastDashboardClickedDate": e.LastDashboardClickedDate,
		"lastDashboardViewedDate": e.LastDashboardViewedDate, "lastEmailClickDate": e.LastEmailClickDate, "lastEmailOpenDate": e.LastEmailOpenDate,
		"lastEmailSentDate": e.LastEmailSentDate, "lastFormSubmissionDate": e.LastFormSubmissionDate, "lastPostcardScanDate": e.LastPostcardScanDate} {
		if at != nil {
			s.Times["engagement."+name] = at.Time
		}
	}
	for _, t := range c.Tags {
		s.Tags = append(s.Tags, strings.ToLower(t))
	}
	for _, p := range c.Properties {
		a := p.Address
		s.Addresses = append(s.Addresses, map[string]string{"streetAddress": a.StreetAddress, "city": a.City,
			"county": a.County, "state": a.State, "zip": a.Zip})
	}
	if c.CustomFields != nil {
		if err := json.Unmarshal(*c.CustomFields, &s.Custom); err != nil {
			return segment.Subject{}, err
		}
	}
	return s, nil
}
