package search

import (
	"sync"

	"github.com/google/uuid"

	"github.com/contactd/contactd/internal/apperr"
)

// ErrTooManyExports refuses an export while its account runs its share of exports, or the
// process runs all it may: each export holds a database connection (its snapshot) for its
// whole stream, so without a bound one caller's slow exports take every connection.
var ErrTooManyExports = apperr.New(apperr.KindRateLimited, "TooManyRequests",
	"too many exports are running: retry when one has finished")

// exportSlots counts the exports running, in all and per account. Taking a slot never waits:
// a refused export is answered at once (429), holding nothing.
type exportSlots struct {
	mu         sync.Mutex
	total, max int
	perAccount int
	running    map[uuid.UUID]int
}

func newExportSlots(max, perAccount int) *exportSlots {
	return &exportSlots{max: max, perAccount: perAccount, running: map[uuid.UUID]int{}}
}

// take reserves a slot for an export of account, or reports that none is free.
func (e *exportSlots) take(account uuid.UUID) (release func(), ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.total >= e.max || e.running[account] >= e.perAccount {
		return nil, false
	}
	e.total++
	e.running[account]++
	var once sync.Once
	return func() {
		once.Do(func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.total--
			if e.running[account]--; e.running[account] == 0 {
				delete(e.running, account)
			}
		})
	}, true
}

// ExportsRunning is how many exports the account runs in this process now.
func (s *Service) ExportsRunning(accountID uuid.UUID) int {
	s.exports.mu.Lock()
	defer s.exports.mu.Unlock()
	return s.exports.running[accountID]
}
