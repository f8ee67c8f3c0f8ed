package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/contactd/contactd/internal/idempotency"
)

const (
	headerIdempotencyKey = "Idempotency-Key"
	headerReplayed       = "Idempotent-Replayed"
)

// idempotent runs a write sent with an Idempotency-Key once: the handler's response is
// stored with its changes, in one transaction, and a retry of the same request gets it back
// with Idempotent-Replayed: true. Validation and the rate limits come first: a request they
// refuse neither runs nor takes the key.
func (s *Server) idempotent(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		key := r.Header.Get(headerIdempotencyKey)
		if key == "" || s.idem == nil || r.Method == http.MethodGet || r.Method == http.MethodHead {
			return next(c)
		}
		var body []byte
		if rq := requestOf(r.Context()); rq != nil {
			body = rq.body // read and validated before
		}
		req := idempotency.Request{Method: r.Method, Path: r.URL.RequestURI(), Body: body}
		res := c.Response()
		before := res.Header().Clone() // the request id and rate limits: this request's own, never replayed
		resp, replayed, err := s.idem.Do(r.Context(), principal(r.Context()).AccountID, key, req,
			func(ctx context.Context) (idempotency.Response, bool) {
				c.SetRequest(r.WithContext(ctx))
				defer c.SetRequest(r)
				// echo's Response keeps its headers on its writer: the handler's go to rec
				rec := &recorder{status: http.StatusOK, header: before.Clone()}
				writer := res.Writer
				res.Writer = rec
				defer func() { // also when the handler panics: the recovery must answer the client
					res.Writer = writer
					// the answer leaves below, once stored: forget that it was written
					res.Committed, res.Status, res.Size = false, 0, 0
				}()
				if err := next(c); err != nil {
					s.errorHandler(err, c) // into rec, like any other answer
				}
				h := http.Header{}
				for k, v := range rec.header {
					if !slices.Equal(before[k], v) {
						h[k] = v
					}
				}
				return idempotency.Response{Status: rec.status, Header: h, Body: rec.body.Bytes()}, rec.status < 500
			})
		if err != nil {
			return err
		}
		for k, v := range resp.Header {
			res.Header()[k] = v
		}
		if replayed {
			res.Header().Set(headerReplayed, "true")
		}
		res.WriteHeader(resp.Status)
		_, err = res.Write(resp.Body)
		return err
	}
}

// recorder keeps what a handler answers.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) WriteHeader(status int)      { r.status = status }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
