package httpapi

import (
	"context"
	"encoding/json"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/contact"
)

// maxBatchItems is the spec's maxItems of a batch.
const maxBatchItems = 1000

// BatchContacts implements POST /public/v1/contacts/batch: each item is validated alone
// against the spec's item schema, the valid ones are written together, and every item gets
// its result in request order.
func (s *Server) BatchContacts(ctx context.Context, req api.BatchContactsRequestObject) (api.BatchContactsResponseObject, error) {
	b := req.Body
	results := make([]api.BatchContactItemResult, len(b.Contacts))
	ins := make([]contact.CreateInput, 0, len(b.Contacts))
	at := make([]int, 0, len(b.Contacts))
	for i, raw := range b.Contacts {
		in, err := s.batchItem(ctx, i, raw)
		if err != nil {
			results[i] = failedItem(err, i)
			continue
		}
		ins, at = append(ins, in), append(at, i)
	}
	upsert := b.Mode != nil && *b.Mode == api.Upsert
	out, err := s.contacts.Batch(ctx, principal(ctx).AccountID, upsert, ins)
	if err != nil {
		return nil, err
	}
	for j, r := range out {
		i := at[j]
		if r.Err != nil {
			results[i] = failedItem(r.Err, i)
			continue
		}
		id := r.ContactID
		ws := make([]api.Warning, len(r.Warnings))
		for k, w := range r.Warnings {
			ws[k] = api.Warning(w)
		}
		results[i] = api.BatchContactItemResult{Status: api.BatchContactItemResultStatus(r.Status), ContactId: &id, Warnings: &ws}
	}
	return api.BatchContacts200JSONResponse{Results: results}, nil
}

// batchItem validates item i and turns it into a create.
func (s *Server) batchItem(ctx context.Context, i int, raw json.RawMessage) (contact.CreateInput, error) {
	if err := validateItem(s.batchItemSchema, raw, itemField(i)); err != nil {
		return contact.CreateInput{}, err
	}
	var b api.CreateContactRequest
	if err := json.Unmarshal(raw, &b); err != nil { // the schema admitted it: cannot happen
		return contact.CreateInput{}, err
	}
	return createInput(ctx, b, raw), nil
}

func failedItem(err error, i int) api.BatchContactItemResult {
	body := errorBody(itemError(err, i))
	return api.BatchContactItemResult{Status: api.BatchContactItemResultStatusFailed, Error: &body}
}

// batchItemSchema is the schema each item of a batch is validated against: the one its
// allOf names, which reports each violation at its field (allOf would report only itself).
func batchItemSchema(spec *openapi3.T) *openapi3.Schema {
	s := spec.Components.Schemas["BatchContactItem"].Value
	if len(s.AllOf) == 1 {
		return s.AllOf[0].Value
	}
	return s
}
