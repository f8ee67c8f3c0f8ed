package httpapi

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
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

// accountSlots counts what each account runs at once.
type accountSlots struct {
	mu      sync.Mutex
	running map[uuid.UUID]int
}

// take takes one of the account's limit slots, false when it has them all.
func (a *accountSlots) take(account uuid.UUID, limit int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running[account] >= limit {
		return false
	}
	if a.running == nil {
		a.running = map[uuid.UUID]int{}
	}
	a.running[account]++
	return true
}

func (a *accountSlots) give(account uuid.UUID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running[account]--; a.running[account] <= 0 {
		delete(a.running, account)
	}
}

// batchSlot runs a batch operation's request only while its account runs fewer than
// Config.BatchesPerAccount of them, before its body is decoded: each holds its decoded items
// and a core while it runs, so one account sending many at once would take what the others
// need. The rest answer 429.
func (s *Server) batchSlot(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		rq := requestOf(c.Request().Context())
		p, ok := auth.FromContext(c.Request().Context())
		if s.cfg.BatchesPerAccount <= 0 || !ok || rq == nil || !s.routes.batch[rq.route] {
			return next(c)
		}
		if !s.batches.take(p.AccountID, s.cfg.BatchesPerAccount) {
			return &apperr.Error{Kind: apperr.KindRateLimited, Code: "TooManyRequests", RetryAfter: time.Second, Message: fmt.Sprintf(
				"this account runs %d batches at once already: send the next once one has answered", s.cfg.BatchesPerAccount)}
		}
		defer s.batches.give(p.AccountID)
		return next(c)
	}
}
