package httpapi

import (
	"github.com/getkin/kin-openapi/openapi3"
)

// validateAlone marks, in openapi.yaml, a schema of batch items: the request's validator
// accepts any item there, and the handler validates each against the schema on its own, so
// an invalid item fails alone instead of failing the batch.
const validateAlone = "x-contactd-validate-alone"

// aloneItems returns the request body as the request validator sees it — the schemas marked
// validateAlone accepted whatever they hold — and whether it has any.
func aloneItems(body *openapi3.RequestBodyRef) (*openapi3.RequestBodyRef, bool) {
	if body == nil || body.Value == nil {
		return body, false
	}
	content := openapi3.Content{}
	found := false
	for mt, media := range body.Value.Content {
		schema, ok := looseCopy(media.Schema)
		found = found || ok
		m := *media
		m.Schema = schema
		content[mt] = &m
	}
	if !found {
		return body, false
	}
	v := *body.Value
	v.Content = content
	return &openapi3.RequestBodyRef{Value: &v}, true
}

// looseCopy copies ref's schema along the objects and arrays that lead to a schema marked
// validateAlone, which becomes the empty schema (anything); the rest is shared.
func looseCopy(ref *openapi3.SchemaRef) (*openapi3.SchemaRef, bool) {
	if ref == nil || ref.Value == nil {
		return ref, false
	}
	if _, marked := ref.Value.Extensions[validateAlone]; marked {
		return &openapi3.SchemaRef{Value: &openapi3.Schema{}}, true
	}
	s := *ref.Value
	changed := false
	if s.Items != nil {
		s.Items, changed = looseCopy(s.Items)
	}
	if len(s.Properties) > 0 {
		props := openapi3.Schemas{}
		for name, p := range s.Properties {
			np, ok := looseCopy(p)
			props[name] = np
			changed = changed || ok
		}
		s.Properties = props
	}
	if !changed {
		return ref, false
	}
	return &openapi3.SchemaRef{Value: &s}, true
}
