package httpapi

import (
	"context"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/contact"
)

// BatchContacts implements POST /public/v1/contacts/batch.
func (s *Server) BatchContacts(ctx context.Context, req api.BatchContactsRequestObject) (api.BatchContactsResponseObject, error) {
	p := principal(ctx)
	upsert := req.Body.Mode != nil && *req.Body.Mode == api.Upsert
	// the items as the validator decoded them: each is validated on its own, not decoded again
	var decoded []any
	if rq := requestOf(ctx); rq != nil {
		if body, ok := rq.value.(map[string]any); ok {
			decoded, _ = body["contacts"].([]any)
		}
		rq.value = nil // the items are Run's now: it lets each go once it has its input (the write takes longest)
	}
	o := contact.BatchOptions{Upsert: upsert}
	if req.Body.MatchField != nil {
		o.MatchField = *req.Body.MatchField
	}
	results, err := s.batch.Run(ctx, p.AccountID, origin(ctx, p.KeyName, p.KeyPrefix), o, req.Body.Contacts, decoded)
	if err != nil {
		return nil, err
	}
	return api.BatchContacts200JSONResponse{Results: results}, nil
}
