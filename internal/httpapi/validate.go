package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"

	"github.com/contactd/contactd/gen/api"
	"github.com/contactd/contactd/internal/apicore"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/delivery"
)

// routeTable maps Echo's route key (method and path pattern) to the spec's operation, built
// once at start so requests are not routed twice.
type routeTable struct {
	ops   map[string]*routers.Route
	paths map[string]bool // Echo patterns of the spec's paths, whatever the method
	// validated is each route as the validator sees it: without security requirements, which
	// the auth middleware has enforced already (kin-openapi would walk them to call a no-op).
	validated map[*routers.Route]*routers.Route
	// batch are the operations whose items are validated one by one (validateAlone): they
	// take a larger body.
	batch map[*routers.Route]bool
	// scopes are the scopes each operation's security requirement names: a key needs them all.
	scopes map[*routers.Route][]string
}

func newRouteTable(spec *openapi3.T) routeTable {
	t := routeTable{ops: map[string]*routers.Route{}, paths: map[string]bool{}, validated: map[*routers.Route]*routers.Route{},
		batch: map[*routers.Route]bool{}, scopes: map[*routers.Route][]string{}}
	for path, item := range spec.Paths.Map() {
		t.paths[echoPath(path)] = true
		for method, op := range item.Operations() {
			route := &routers.Route{Spec: spec, Path: path, PathItem: item, Method: method, Operation: op}
			t.ops[method+" "+echoPath(path)] = route
			unsecured := *op
			unsecured.Security = &openapi3.SecurityRequirements{}
			unsecured.RequestBody, t.batch[route] = aloneItems(op.RequestBody)
			t.scopes[route] = requiredScopes(spec, op)
			v := *route
			v.Operation = &unsecured
			t.validated[route] = &v
		}
	}
	return t
}

// Scopes are the scopes the spec's operations name, sorted: what a key may be given (with
// "all").
func Scopes() ([]string, error) {
	spec, err := api.GetSwagger()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			for _, s := range requiredScopes(spec, op) {
				seen[s] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	slices.Sort(out)
	return out, nil
}

// requiredScopes are the scopes the operation's security requirement (or the spec's) names.
func requiredScopes(spec *openapi3.T, op *openapi3.Operation) []string {
	reqs := spec.Security
	if op.Security != nil {
		reqs = *op.Security
	}
	var scopes []string
	for _, req := range reqs {
		for _, s := range req {
			scopes = append(scopes, s...)
		}
	}
	return scopes
}

// echoPath turns /a/{id}/b into Echo's /a/:id/b.
func echoPath(p string) string {
	return strings.NewReplacer("{", ":", "}", "").Replace(p)
}

func (t routeTable) lookup(c echo.Context) *routers.Route {
	return t.ops[c.Request().Method+" "+c.Path()]
}

// isSpecPath tells whether Echo matched one of the spec's paths (with another method).
func (t routeTable) isSpecPath(c echo.Context) bool { return t.paths[c.Path()] }

// operationID names the spec operation of the request, for logs and metrics; "" outside the API.
func operationID(ctx context.Context) string {
	if r := routeOf(ctx); r != nil {
		return r.Operation.OperationID
	}
	return ""
}

// validate checks the request against its operation in the spec: parameters and body, with
// every violation reported. Authentication is checked before, by the auth middleware.
func (s *Server) validate(next echo.HandlerFunc) echo.HandlerFunc {
	// kin-openapi checks the parameters; the body, read once already, is decoded and checked
	// against the same schemas here (validateBody), so nothing reads or decodes it twice.
	opts := &openapi3filter.Options{
		MultiError:              true,
		ExcludeRequestBody:      true,
		AuthenticationFunc:      openapi3filter.NoopAuthenticationFunc,
		SchemaValidationOptions: apicore.FormatOptions(),
	}
	bodyOpts := append([]openapi3.SchemaValidationOption{openapi3.VisitAsRequest(), openapi3.MultiErrors()},
		apicore.FormatOptions()...)
	return func(c echo.Context) error {
		r := c.Request()
		rq := requestOf(r.Context())
		if err := rq.readBody(r); err != nil {
			return err
		}
		if err := checkQueryEncoding(r, rq.route); err != nil {
			return err
		}
		params := make(map[string]string, len(c.ParamNames()))
		for i, name := range c.ParamNames() {
			params[name] = c.ParamValues()[i]
		}
		route := s.routes.validated[rq.route]
		var errs openapi3.MultiError
		if err := openapi3filter.ValidateRequest(r.Context(), &openapi3filter.RequestValidationInput{
			Request: r, PathParams: params, Route: route, Options: opts,
		}); err != nil {
			errs = append(errs, err)
		}
		if err := rq.validateBody(r, route.Operation.RequestBody, bodyOpts); err != nil {
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			return s.validationError(errs)
		}
		return next(c)
	}
}

// validateBody decodes the body into JSON values (rq.value) and checks them against the
// operation's body schema, with the errors kin-openapi's request validator would give. The
// spec's defaults are not written into the body: the handlers read an absent field as its
// default.
func (rq *request) validateBody(r *http.Request, ref *openapi3.RequestBodyRef, opts []openapi3.SchemaValidationOption) error {
	if ref == nil || ref.Value == nil {
		return nil // the operation takes no body: one sent is ignored, as kin-openapi does
	}
	spec := ref.Value
	if len(rq.body) == 0 {
		if spec.Required {
			return &openapi3filter.RequestError{RequestBody: spec, Err: openapi3filter.ErrInvalidRequired}
		}
		return nil
	}
	media := spec.Content.Get(r.Header.Get("Content-Type"))
	if media == nil {
		return &openapi3filter.RequestError{RequestBody: spec, Reason: fmt.Sprintf("header Content-Type has unexpected value %q", r.Header.Get("Content-Type"))}
	}
	if media.Schema == nil || media.Schema.Value == nil {
		return nil
	}
	value, err := apicore.DecodeJSON(rq.body)
	if err != nil {
		return &openapi3filter.RequestError{RequestBody: spec, Reason: "failed to decode request body",
			Err: &openapi3filter.ParseError{Kind: openapi3filter.KindInvalidFormat, Cause: err}}
	}
	var errs openapi3.MultiError
	if err := media.Schema.Value.VisitJSON(value, opts...); err != nil {
		errs = append(errs, &openapi3filter.RequestError{RequestBody: spec, Reason: "doesn't match schema", Err: err})
	}
	if nuls := apicore.NULs(value, "body"); len(nuls) > 0 {
		errs = append(errs, nuls)
	}
	if len(errs) > 0 {
		return errs
	}
	rq.value = value
	return nil
}

// checkQueryEncoding refuses values of the operation's query parameters that are not UTF-8:
// they could never match stored text, and the database would refuse them with an error
// that is not the client's to read. Undeclared parameters are ignored, as everywhere.
func checkQueryEncoding(r *http.Request, route *routers.Route) error {
	var errs []apperr.FieldError
	query := r.URL.Query()
	for _, p := range route.Operation.Parameters {
		if p.Value == nil || p.Value.In != "query" {
			continue
		}
		for _, v := range query[p.Value.Name] {
			if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
				errs = append(errs, apperr.Field("query."+p.Value.Name, "encoding", "must be UTF-8 text without NUL"))
			}
		}
	}
	if len(errs) > 0 {
		return apperr.Invalid(errs...)
	}
	return nil
}

// notFoundByPath is the answer when a path identifier breaks the spec's rules (too long, say).
var notFoundByPath = map[string]*apperr.Error{
	"path.contactId":      contact.ErrNotFound,
	"path.propertyId":     contact.ErrPropertyNotFound,
	"path.subscriptionId": delivery.ErrSubscriptionNotFound,
	"path.deliveryId":     delivery.ErrDeliveryNotFound,
	"path.token":          contact.ErrConsentNotFound,
}

func (s *Server) validationError(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return errTooLarge(tooLarge.Limit)
	}
	fields := apicore.Fields(err, "")
	for _, f := range fields {
		if nf, ok := notFoundByPath[f.Field]; ok {
			return nf // a malformed id is simply not found, whatever else is wrong
		}
	}
	if len(fields) == 0 {
		fields = append(fields, apperr.Field("request", "invalid", err.Error()))
	}
	return apperr.Invalid(fields...)
}
