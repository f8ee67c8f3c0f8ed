package contact

import (
	"bytes"
	"errors"

	"github.com/google/uuid"

	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/platform/store"
)

// rowBatch is a sent batch of sqlc :batchone statements returning R.
type rowBatch[R any] interface {
	QueryRow(f func(int, R, error))
	Close() error
}

// returned is a statement's row, if it returned one.
type returned[R any] struct {
	row R
	ok  bool
}

// returnedRows sends items as one batch (send queues one statement each) in cmp's order, so
// that two batches changing the same rows lock them in the same order and never wait on
// each other both ways. It reports, in items' order, the row each statement returned, or
// the error that failed the batch, which then wrote nothing (one implicit transaction).
func returnedRows[T, R any](items []T, cmp func(a, b T) int, send func(sorted []T) rowBatch[R]) ([]returned[R], error) {
	sorted, order := store.Sorted(items, cmp)
	out := make([]returned[R], len(items))
	var failed error
	results := send(sorted)
	results.QueryRow(func(i int, row R, err error) {
		switch {
		case err == nil:
			out[order[i]] = returned[R]{row: row, ok: true}
		case errors.Is(store.Translate(err), apperr.ErrNoRows):
		case failed == nil:
			failed = err
		}
	})
	// The implicit transaction commits after the last result: Close reports whether it did.
	if err := results.Close(); failed == nil {
		failed = err
	}
	if failed != nil {
		return nil, failed
	}
	return out, nil
}

func compareIDs(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) }
