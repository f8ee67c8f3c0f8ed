package main

import "testing"

func TestLineSet(t *testing.T) {
	keep, err := lineSet("38, 52,100-102,439-")
	if err != nil {
		t.Fatal(err)
	}
	for line, want := range map[int]bool{37: false, 38: true, 52: true, 53: false, 99: false, 100: true, 102: true,
		103: false, 438: false, 439: true, 10000: true} {
		if got := keep(line); got != want {
			t.Errorf("line %d: kept %v, want %v", line, got, want)
		}
	}
	for _, bad := range []string{"", "x", "10-y", "-5"} {
		if _, err := lineSet(bad); err == nil {
			t.Errorf("-lines %q accepted", bad)
		}
	}
}
