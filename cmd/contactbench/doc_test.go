package main

import (
	"bytes"
	"os"
	"testing"
)

// docs/performance.md is read, not kept: how to measure, the table make bench-doc writes, the
// targets and the walls, in at most 250 lines. A longer run's table means a shorter text.
func TestPerformanceDocFitsItsBudget(t *testing.T) {
	b, err := os.ReadFile("../../docs/performance.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n > 250 {
		t.Errorf("docs/performance.md has %d lines, more than 250", n)
	}
}
