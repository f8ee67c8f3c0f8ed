// Command contactd serves the Contact and Webhook Public API and manages its accounts and
// keys; `contactd help` lists the subcommands.
package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"github.com/contactd/contactd/internal/app"
)

// gcPercent is GOGC unless the environment sets it: twice Go's default of 100, so that a
// server whose live heap is a few MB does not collect several times a second under load.
// More (400) took the server past its RSS target in `make bench` for no gain there or in
// `make bench-dataout` beyond the runs' drift, and the import past its own.
const gcPercent = 200

// memoryLimit is the soft limit of the Go heap unless GOMEMLIMIT sets one: half of the
// memory the process may use (its cgroup's memory.max, else the machine's MemTotal), so that
// a burst of large requests makes the collector work harder long before the kernel's OOM
// killer ends every tenant's requests at once; the heap would otherwise grow to three times its
// live size (gcPercent) before a collection. Half leaves the rest to PostgreSQL and the
// page cache on a shared machine. 0 when neither is known.
func memoryLimit(cgroupMax, meminfo []byte) int64 {
	if v, err := strconv.ParseInt(string(bytes.TrimSpace(cgroupMax)), 10, 64); err == nil && v > 0 {
		return v / 2
	}
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		f := strings.Fields(sc.Text()) // MemTotal:       24683620 kB
		if len(f) == 3 && f[0] == "MemTotal:" && f[2] == "kB" {
			if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil && kb > 0 {
				return kb << 10 / 2
			}
		}
	}
	return 0
}

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		cgroupMax, _ := os.ReadFile("/sys/fs/cgroup/memory.max") // "max" when unlimited
		meminfo, _ := os.ReadFile("/proc/meminfo")
		if limit := memoryLimit(cgroupMax, meminfo); limit > 0 {
			debug.SetMemoryLimit(limit)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
