package clustertest

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// The history's model refuses what no single copy of a contact explains, and accepts what
// one does: each case a small history of one contact, its operations as (call, return).
func TestHistoryModel(t *testing.T) {
	op := func(call, ret int64, kind historyOp, value string, out historyOutput) porcupine.Operation {
		return porcupine.Operation{Input: historyInput{op: kind, value: value}, Call: call, Return: ret, Output: out}
	}
	found := func(name, tags string) historyOutput { return historyOutput{found: true, name: name, tags: tags} }
	created := op(0, 1, opCreate, "a", found("a", ""))
	for _, c := range []struct {
		what string
		ops  []porcupine.Operation
		ok   bool
	}{
		{"a read after a rename sees it", []porcupine.Operation{created, op(2, 3, opRename, "b", found("b", "")), op(4, 5, opGet, "", found("b", ""))}, true},
		{"a stale read after a rename returned", []porcupine.Operation{created, op(2, 3, opRename, "b", found("b", "")), op(4, 5, opGet, "", found("a", ""))}, false},
		{"a read overlapping a rename sees either", []porcupine.Operation{created, op(2, 6, opRename, "b", found("b", "")), op(3, 4, opGet, "", found("a", "")),
			op(4, 5, opGet, "", found("b", ""))}, true},
		{"a read that goes back in time", []porcupine.Operation{created, op(2, 9, opRename, "b", found("b", "")), op(3, 4, opGet, "", found("b", "")),
			op(5, 6, opGet, "", found("a", ""))}, false},
		{"tags in the order they were added", []porcupine.Operation{created, op(2, 3, opTag, "x", found("", "x")), op(4, 5, opTag, "y", found("", "x,y"))}, true},
		{"a tag lost", []porcupine.Operation{created, op(2, 3, opTag, "x", found("", "x")), op(4, 5, opTag, "y", found("", "y"))}, false},
		{"an erased contact is gone", []porcupine.Operation{created, op(2, 3, opErase, "", found("", "")), op(4, 5, opGet, "", historyOutput{})}, true},
		{"an erased contact comes back", []porcupine.Operation{created, op(2, 3, opErase, "", found("", "")), op(4, 5, opGet, "", found("a", ""))}, false},
		{"a write after an erasure changes something", []porcupine.Operation{created, op(2, 3, opErase, "", found("", "")), op(4, 5, opRename, "b", found("b", ""))}, false},
		{"a write never answered took effect", []porcupine.Operation{created, op(2, 1<<62, opRename, "b", historyOutput{unknown: true}), op(4, 5, opGet, "", found("b", ""))}, true},
		{"a write never answered did not", []porcupine.Operation{created, op(2, 1<<62, opRename, "b", historyOutput{unknown: true}), op(4, 5, opGet, "", found("a", ""))}, true},
	} {
		got := porcupine.CheckOperations(historyModel.ToModel(), c.ops)
		if got != c.ok {
			t.Errorf("%s: linearizable %v, want %v", c.what, got, c.ok)
		}
	}
}
