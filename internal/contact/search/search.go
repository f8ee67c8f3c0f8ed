// Package search is the contacts' heavy reads: list and search pages (filters, custom field
// conditions, keyset cursors), exports streamed in one snapshot, and the duplicates report.
// Each takes a turn of the process's heavy reads (package turns), so a burst of them queues
// instead of crowding PostgreSQL's CPUs and the pool's connections away from the writes.
// Contacts are decoded by package contact, which owns their rules.
package search

import (
	"runtime"

	"github.com/contactd/contactd/internal/contact"
	"github.com/contactd/contactd/internal/field"
	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/platform/turns"
)

// Service lists, searches and exports an account's contacts.
type Service struct {
	store    *store.Store
	contacts *contact.Service
	fields   *field.Service
	turns    *turns.Turns
	exports  *exportSlots
}

// Options tune a Service.
type Options struct {
	// Turns are the process's turns for heavy reads (package turns), which list pages and
	// duplicates take; nil: ListConcurrency of their own (0: the CPUs, at least 2). A page is
	// the costliest read, and its cost varies with its filters: queued, the pages beyond the
	// turns do not crowd PostgreSQL's CPUs with backends that all run slower, and a burst of
	// searches cannot take every connection of the pool from the writes.
	Turns           *turns.Turns
	ListConcurrency int
	// Exports is how many exports stream at once in this process (0: 4), and
	// ExportsPerAccount how many of those one account may run (0: 2). Each holds a database
	// connection for its whole stream.
	Exports, ExportsPerAccount int
	// Fields are the account's custom field definitions that searches name (nil: none).
	Fields *field.Service
}

// ReadTurns is how many heavy reads run at once for a setting of n (0: the CPUs, at least 2).
func ReadTurns(n int) int {
	if n <= 0 {
		return max(2, runtime.GOMAXPROCS(0))
	}
	return n
}

// New returns a Service reading through st, whose contacts decodes the rows it reads.
func New(st *store.Store, contacts *contact.Service, o Options) *Service {
	if o.Turns == nil {
		o.Turns = turns.New(ReadTurns(o.ListConcurrency))
	}
	if o.Exports <= 0 {
		o.Exports = 4
	}
	if o.ExportsPerAccount <= 0 {
		o.ExportsPerAccount = 2
	}
	return &Service{store: st, contacts: contacts, fields: o.Fields, turns: o.Turns, exports: newExportSlots(o.Exports, o.ExportsPerAccount)}
}
