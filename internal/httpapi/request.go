package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"

	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"

	"github.com/contactd/contactd/internal/apicore"
	"github.com/contactd/contactd/internal/apperr"
)

type requestKey struct{}

// request is what the API's middleware learns of a request, each thing once, for the rest of
// the chain and the handlers: its operation, its client and its body.
type request struct {
	route  *routers.Route
	client client

	// The body, read once (bodyRead) by whichever step needs it first: the rate limiter for a
	// batch's item count, else the validator. Everything after uses these, never r.Body.
	bodyRead bool
	body     []byte
	bodyErr  error
	// items are the items of the longest array in the body's top-level object (a batch's
	// contacts), counted by the shape check's scan.
	items int
	// value is the body decoded into JSON values, once, by the validator: what the spec's
	// schema was checked against, from which the binder builds the handler's typed request
	// (apicore.Assign), and which handlers may walk (a batch's items).
	value any
}

// client is who sent the request, as proof of consent records it, and what it accepts.
type client struct{ ip, userAgent, accept, acceptEncoding string }

// requestOf is the API request's state; nil outside the API's routes (health, metrics, console).
func requestOf(ctx context.Context) *request {
	rq, _ := ctx.Value(requestKey{}).(*request)
	return rq
}

// routeOf is the spec's operation of an API request; nil outside the API's routes.
func routeOf(ctx context.Context) *routers.Route {
	if rq := requestOf(ctx); rq != nil {
		return rq.route
	}
	return nil
}

func clientOf(ctx context.Context) client {
	if rq := requestOf(ctx); rq != nil {
		return rq.client
	}
	return client{}
}

// readBody reads the (size-limited) body the first time it is asked and checks its JSON shape
// before anything decodes it; later calls answer the same.
func (rq *request) readBody(r *http.Request) error {
	if rq.bodyRead {
		return rq.bodyErr
	}
	rq.bodyRead = true
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			rq.bodyErr = errTooLarge(tooLarge.Limit)
		} else {
			rq.bodyErr = apperr.Invalid(apperr.Field("body", "read", "the request body could not be read"))
		}
		return rq.bodyErr
	}
	// anything after the chain that reads the body reads these bytes, not the socket again
	r.Body = io.NopCloser(bytes.NewReader(body))
	rq.body = body
	rq.items, rq.bodyErr = checkJSONShape(body)
	return rq.bodyErr
}

// bodySerializer is Echo's JSON serializer, except that the strict handlers' binder takes an
// API request's body from what the validator decoded and checked (request.value), not from
// r.Body: the body is read once and decoded once.
type bodySerializer struct{ echo.DefaultJSONSerializer }

func (j bodySerializer) Deserialize(c echo.Context, i any) error {
	rq := requestOf(c.Request().Context())
	if rq == nil || !rq.bodyRead {
		return j.DefaultJSONSerializer.Deserialize(c, i)
	}
	if rq.value != nil {
		if apicore.Assign(i, rq.value) == nil {
			return nil
		}
		// a value Assign does not take as json.Unmarshal would: the bytes decide
		if v := reflect.ValueOf(i); v.Kind() == reflect.Pointer && !v.IsNil() {
			v.Elem().SetZero()
		}
	}
	// the validator has checked these bytes against the spec: an error here is a value the
	// spec admits and Go's type does not (classify answers it)
	if err := json.Unmarshal(rq.body, i); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, err.Error()).SetInternal(err)
	}
	return nil
}
