package httpapi

import (
	"net/http"
	"testing"

	"github.com/labstack/echo/v4"
)

// A parameter the spec accepted but the binder refused is named as the parameter, not as the
// body.
func TestBinderErrorsNameTheParameter(t *testing.T) {
	s := &Server{}
	e := s.classify(echo.NewHTTPError(http.StatusBadRequest, "Invalid format for parameter createdAfter: not a timestamp"))
	if e.Code != "InvalidRequest" || len(e.Fields) != 1 || e.Fields[0].Field != "query.createdAfter" {
		t.Errorf("classified as %+v", e)
	}
	if e := s.classify(echo.NewHTTPError(http.StatusBadRequest, "bad body")); e.Fields[0].Field != "body" {
		t.Errorf("a body binding error classified as %+v", e)
	}
}
