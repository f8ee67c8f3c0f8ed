package httpapi

import (
	"math"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/contactd/contactd/internal/apicore"
	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/auth"
)

var errRateLimited = apperr.New(apperr.KindRateLimited, "TooManyRequests", "rate limit exceeded; retry after the Retry-After seconds")

// rateLimit counts the request against its key's 10-second window (reads and writes apart)
// and its account's day, and shows what is left in the X-RateLimit-* headers.
func (s *Server) rateLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, ok := auth.FromContext(c.Request().Context())
		if !ok { // a public operation
			return next(c)
		}
		write := c.Request().Method != http.MethodGet && c.Request().Method != http.MethodHead
		d := s.limiter.AllowN(p.KeyID, p.AccountID, write, s.dayCost(c))
		h := c.Response().Header()
		if d.Limit > 0 {
			h.Set("X-RateLimit-Limit-10", strconv.Itoa(d.Limit))
			h.Set("X-RateLimit-Remaining-10", strconv.Itoa(d.Remaining))
			h.Set("RateLimit-Reset", strconv.Itoa(int(math.Ceil(d.Reset.Seconds()))))
		}
		if d.DayLimit > 0 {
			h.Set("X-RateLimit-Limit-Day", strconv.Itoa(d.DayLimit))
			h.Set("X-RateLimit-Remaining-Day", strconv.Itoa(d.DayRemaining))
		}
		if !d.Allowed {
			h.Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(d.RetryAfter.Seconds())))))
			return errRateLimited
		}
		return next(c)
	}
}

// dayCost is what a request costs in the account's day: one, or one per item of a batch,
// counted by the body's shape scan (no decode).
func (s *Server) dayCost(c echo.Context) int {
	rq := requestOf(c.Request().Context())
	if rq == nil || !s.routes.batch[rq.route] {
		return 1
	}
	if rq.readBody(c.Request()) != nil {
		return 1 // the validator answers the error
	}
	return min(max(1, rq.items), apicore.MaxBatchItems) // more is refused whole by the validator
}
