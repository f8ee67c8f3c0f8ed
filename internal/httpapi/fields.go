package httpapi

import (
	"context"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/apitime"
	"github.com/contactd/contactd/internal/field"
)

// CreateField implements POST /public/v1/fields.
func (s *Server) CreateField(ctx context.Context, req api.CreateFieldRequestObject) (api.CreateFieldResponseObject, error) {
	b := req.Body
	in := field.New{Key: b.Key, Label: b.Label, Type: field.Type(b.Type), Required: deref(b.Required),
		Unique: deref(b.Unique), Description: deref(b.Description), Validation: validationFromAPI(b.Validation)}
	if b.Options != nil {
		in.Options = make([]field.Option, len(*b.Options))
		for i, o := range *b.Options {
			in.Options[i] = field.Option{Value: o.Value, Label: o.Label}
		}
	}
	f, err := s.fields.Create(ctx, principal(ctx).AccountID, in)
	if err != nil {
		return nil, err
	}
	return api.CreateField200JSONResponse(fieldToAPI(f)), nil
}

// ListFields implements GET /public/v1/fields.
func (s *Server) ListFields(ctx context.Context, req api.ListFieldsRequestObject) (api.ListFieldsResponseObject, error) {
	fields, err := s.fields.List(ctx, principal(ctx).AccountID, deref(req.Params.Archived))
	if err != nil {
		return nil, err
	}
	out := api.FieldList{Fields: make([]api.Field, len(fields))}
	for i, f := range fields {
		out.Fields[i] = fieldToAPI(f)
	}
	return api.ListFields200JSONResponse(out), nil
}

// GetField implements GET /public/v1/fields/{fieldKey}.
func (s *Server) GetField(ctx context.Context, req api.GetFieldRequestObject) (api.GetFieldResponseObject, error) {
	f, err := s.fields.Get(ctx, principal(ctx).AccountID, req.FieldKey)
	if err != nil {
		return nil, err
	}
	return api.GetField200JSONResponse(fieldToAPI(f)), nil
}

// UpdateField implements PATCH /public/v1/fields/{fieldKey}.
func (s *Server) UpdateField(ctx context.Context, req api.UpdateFieldRequestObject) (api.UpdateFieldResponseObject, error) {
	b := req.Body
	in := field.Change{Label: b.Label, Description: b.Description, Required: b.Required}
	if b.Validation != nil {
		v := validationFromAPI(b.Validation)
		in.Validation = &v
	}
	if b.Options != nil {
		for _, o := range *b.Options {
			in.Options = append(in.Options, field.OptionChange{Value: o.Value, Label: o.Label, Archived: o.Archived})
		}
	}
	f, err := s.fields.Update(ctx, principal(ctx).AccountID, req.FieldKey, in)
	if err != nil {
		return nil, err
	}
	return api.UpdateField200JSONResponse(fieldToAPI(f)), nil
}

// ArchiveField implements POST /public/v1/fields/{fieldKey}/archive.
func (s *Server) ArchiveField(ctx context.Context, req api.ArchiveFieldRequestObject) (api.ArchiveFieldResponseObject, error) {
	f, err := s.fields.Archive(ctx, principal(ctx).AccountID, req.FieldKey)
	if err != nil {
		return nil, err
	}
	return api.ArchiveField200JSONResponse(fieldToAPI(f)), nil
}

func validationFromAPI(v *api.FieldValidation) field.Validation {
	if v == nil {
		return field.Validation{}
	}
	return field.Validation{Min: v.Min, Max: v.Max, MaxLength: v.MaxLength, Pattern: v.Pattern}
}

func fieldToAPI(f field.Field) api.Field {
	out := api.Field{Key: f.Key, Label: f.Label, Type: api.FieldType(f.Type), Required: f.Required, Unique: f.Unique,
		Archived: f.ArchivedAt != nil, ArchivedAt: apitime.Ptr(f.ArchivedAt), CreatedAt: apitime.From(f.CreatedAt),
		UpdatedAt: apitime.From(f.UpdatedAt)}
	if f.Description != "" {
		out.Description = &f.Description
	}
	if f.Type == field.Enum || f.Type == field.MultiEnum {
		options := make([]api.FieldOption, len(f.Options))
		for i, o := range f.Options {
			options[i] = api.FieldOption{Value: o.Value, Label: o.Label, Archived: o.Archived}
		}
		out.Options = &options
	}
	if v := f.Validation; v != (field.Validation{}) {
		out.Validation = &api.FieldValidation{Min: v.Min, Max: v.Max, MaxLength: v.MaxLength, Pattern: v.Pattern}
	}
	return out
}

// deref is *p, or the zero value for nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
