package main

import "testing"

// The server and the workers collect at GOGC=400; every other command (the import above all)
// keeps 200.
func TestGCPercent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"serve", "--addr", ":0"}, 400}, {[]string{"worker"}, 400},
		{[]string{"import", "--account", "a", "f.csv"}, 200}, {[]string{"migrate"}, 200}, {nil, 200},
	} {
		if got := gcPercent(tc.args); got != tc.want {
			t.Errorf("gcPercent(%q) = %d, want %d", tc.args, got, tc.want)
		}
	}
}
