package httpapi

import (
	"context"

	"github.com/contactd/contactd/gen/api"
)

// BatchContacts implements POST /public/v1/contacts/batch.
func (s *Server) BatchContacts(ctx context.Context, req api.BatchContactsRequestObject) (api.BatchContactsResponseObject, error) {
	p := principal(ctx)
	upsert := req.Body.Mode != nil && *req.Body.Mode == api.Upsert
	results, err := s.batch.Run(ctx, p.AccountID, origin(ctx, p.KeyName, p.KeyPrefix), upsert, req.Body.Contacts)
	if err != nil {
		return nil, err
	}
	return api.BatchContacts200JSONResponse{Results: results}, nil
}
