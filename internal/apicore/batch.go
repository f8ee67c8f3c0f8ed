package apicore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/uuid"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/contact"
)

// MaxBatchItems is the spec's maxItems of a batch.
const MaxBatchItems = 1000

// Batch is the batch endpoint's work without HTTP, which `contactd import` shares: each item
// validated alone against the spec's item schema, the valid ones written together, a result
// for every item in order.
type Batch struct {
	contacts *contact.Service
	item     *openapi3.Schema
}

// NewBatch returns the batch work over contacts.
func NewBatch(contacts *contact.Service) (*Batch, error) {
	spec, err := api.GetSwagger()
	if err != nil {
		return nil, fmt.Errorf("load embedded spec: %w", err)
	}
	return &Batch{contacts: contacts, item: batchItemSchema(spec)}, nil
}

// Run writes items (each a CreateContactRequest) as the account's, recording origin as the
// proof of consent of the contacts it creates. decoded, when not nil, holds the items already
// decoded into JSON values (the HTTP validator's), which are validated without decoding again.
func (b *Batch) Run(ctx context.Context, account uuid.UUID, origin contact.Origin, o contact.BatchOptions, items []json.RawMessage, decoded []any) ([]api.BatchContactItemResult, error) {
	if len(decoded) != len(items) {
		decoded = nil
	}
	results := make([]api.BatchContactItemResult, len(items))
	ins := make([]contact.CreateInput, 0, len(items))
	at := make([]int, 0, len(items))
	for i, raw := range items {
		var value any
		if decoded != nil {
			value, decoded[i] = decoded[i], nil // a thousand items decoded are megabytes, held while the batch writes
		}
		in, err := b.input(i, raw, value, origin)
		if err != nil {
			results[i] = failedItem(err, i)
			continue
		}
		ins, at = append(ins, in), append(at, i)
	}
	out, err := b.contacts.Batch(ctx, account, o, ins)
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
	return results, nil
}

// input validates item i (value: raw decoded, or nil) and turns it into a create.
func (b *Batch) input(i int, raw json.RawMessage, value any, origin contact.Origin) (contact.CreateInput, error) {
	value, err := validateItem(b.item, raw, value, itemField(i))
	if err != nil {
		return contact.CreateInput{}, err
	}
	var req api.CreateContactRequest
	if Assign(&req, value) != nil {
		req = api.CreateContactRequest{}
		if err := json.Unmarshal(raw, &req); err != nil { // the schema admitted it: cannot happen
			return contact.CreateInput{}, err
		}
	}
	return CreateInput(req, origin, raw), nil
}

func failedItem(err error, i int) api.BatchContactItemResult {
	body := ErrorBody(itemError(err, i))
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

// validateItem checks one batch item (v: raw decoded, or nil to decode it here) against its
// schema, as the request validator would check a whole body: every violation, with fields
// under prefix (body.contacts.3). It returns the value it checked.
func validateItem(schema *openapi3.Schema, raw json.RawMessage, v any, prefix string) (any, error) {
	if v == nil {
		var err error
		if v, err = DecodeJSON(raw); err != nil {
			return nil, apperr.Invalid(apperr.Field(prefix, "json", "not JSON"))
		}
	}
	opts := append([]openapi3.SchemaValidationOption{openapi3.VisitAsRequest(), openapi3.MultiErrors()}, FormatOptions()...)
	var fields []apperr.FieldError
	if err := schema.VisitJSON(v, opts...); err != nil {
		if fields = Fields(err, prefix); len(fields) == 0 {
			fields = append(fields, apperr.Field(prefix, "invalid", err.Error()))
		}
	}
	// an import's items come here without the request validator's check of the whole body
	if fields = append(fields, NULs(v, prefix)...); len(fields) > 0 {
		return nil, apperr.Invalid(fields...)
	}
	return v, nil
}

// itemError moves the fields of an item's error (body.tags) under the item (body.contacts.3.tags).
func itemError(err error, index int) *apperr.Error {
	e := *apperr.As(err)
	item := itemField(index)
	fields := make([]apperr.FieldError, len(e.Fields))
	for i, f := range e.Fields {
		if !strings.HasPrefix(f.Field, item) {
			if rest, ok := strings.CutPrefix(f.Field, "body"); ok {
				f.Field = item + rest
			}
		}
		fields[i] = f
	}
	e.Fields = fields
	return &e
}

func itemField(index int) string { return fmt.Sprintf("body.contacts.%d", index) }
