package main

import "testing"

// Without GOMEMLIMIT the heap's soft limit is half of what the process may use: its cgroup's
// limit when it has one, else the machine's memory.
func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	meminfo := []byte("MemTotal:       24683620 kB\nMemFree:         1000000 kB\n")
	for _, tc := range []struct {
		name            string
		cgroup, meminfo []byte
		want            int64
	}{
		{"cgroup limit", []byte("4294967296\n"), meminfo, 2 << 30},
		{"cgroup unlimited", []byte("max\n"), meminfo, 24683620 << 10 / 2},
		{"no cgroup file", nil, meminfo, 24683620 << 10 / 2},
		{"nothing known", []byte("max"), []byte("garbage"), 0},
	} {
		if got := memoryLimit(tc.cgroup, tc.meminfo); got != tc.want {
			t.Errorf("%s: memoryLimit = %d, want %d", tc.name, got, tc.want)
		}
	}
}
