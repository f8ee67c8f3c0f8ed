package httpapi

import (
	"context"
	"encoding/json"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/contact"
)

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
