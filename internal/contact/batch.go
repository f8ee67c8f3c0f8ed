package contact

import (
	"bytes"
	"errors"
	"slices"

	"github.com/google/uuid"

	"github.com/contactd/contactd/internal/apperr"
	"github.com/contactd/contactd/internal/store"
)

// rowBatch is a sent batch of sqlc :batchone statements returning an id.
type rowBatch interface {
	QueryRow(f func(int, uuid.UUID, error))
	Close() error
}

// returnedRows sends items as one batch (send queues one statement each) in cmp's order, so
// that two batches changing the same rows lock them in the same order and never wait on
// each other both ways. It reports, in items' order, which statements returned their row,
// or the error that failed the batch, which then wrote nothing (one implicit transaction).
func returnedRows[T any](items []T, cmp func(a, b T) int, send func(sorted []T) rowBatch) ([]bool, error) {
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp(items[a], items[b]) })
	sorted := make([]T, len(items))
	for i, o := range order {
		sorted[i] = items[o]
	}
	returned := make([]bool, len(items))
	var failed error
	results := send(sorted)
	results.QueryRow(func(i int, _ uuid.UUID, err error) {
		switch {
		case err == nil:
			returned[order[i]] = true
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
	return returned, nil
}

func compareIDs(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) }
