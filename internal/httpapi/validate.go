package httpapi

import (
	"bytes"
	"context"
	"errors"
	"io"
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

type routeKey struct{}

// operationID names the spec operation of the request, for logs and metrics; "" outside the API.
func operationID(ctx context.Context) string {
	if r, ok := ctx.Value(routeKey{}).(*routers.Route); ok {
		return r.Operation.OperationID
	}
	return ""
}

// validate checks the request against its operation in the spec: parameters and body, with
// every violation reported. Authentication is checked before, by the auth middleware.
func (s *Server) validate(next echo.HandlerFunc) echo.HandlerFunc {
	opts := &openapi3filter.Options{
		MultiError:              true,
		AuthenticationFunc:      openapi3filter.NoopAuthenticationFunc,
		SchemaValidationOptions: apicore.FormatOptions(),
	}
	return func(c echo.Context) error {
		if err := s.checkBody(c.Request()); err != nil {
			return err
		}
		route, _ := c.Request().Context().Value(routeKey{}).(*routers.Route)
		if err := checkQueryEncoding(c.Request(), route); err != nil {
			return err
		}
		params := make(map[string]string, len(c.ParamNames()))
		for i, name := range c.ParamNames() {
			params[name] = c.ParamValues()[i]
		}
		err := openapi3filter.ValidateRequest(c.Request().Context(), &openapi3filter.RequestValidationInput{
			Request: c.Request(), PathParams: params, Route: s.routes.validated[route], Options: opts,
		})
		if err != nil {
			return s.validationError(err)
		}
		return next(c)
	}
}

// checkBody reads the (size-limited) body once, refuses pathological JSON shapes before
// anything decodes them, and leaves the body readable again for the validator and binder.
func (s *Server) checkBody(r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return errTooLarge(tooLarge.Limit)
		}
		return apperr.Invalid(apperr.Field("body", "read", "the request body could not be read"))
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return checkJSONShape(body)
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
