// Command contactd serves the Contact and Webhook Public API and manages its accounts and
// keys; `contactd help` lists the subcommands.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/contactd/contactd/internal/app"
)

// gcPercent is GOGC unless the environment sets it. A server's live heap is small (a few MB),
// so Go's default of 100 collects several times a second under load: 200 halved that for a
// few tens of MB more memory (`make bench`), and 400 served 1,700-1,940 first pages of the
// list a second against 1,440-1,615 at 200 (`hey -c 16` on the database of
// `contactbench -dataout -hold`, GOGC alternated). Other commands keep 200: the import's live
// heap is larger, and at 400 importing 1,000,000 rows peaked at 242 MB, against 148
// (`make bench-bulk`).
func gcPercent(args []string) int {
	if len(args) > 0 && (args[0] == "serve" || args[0] == "worker") {
		return 400
	}
	return 200
}

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent(os.Args[1:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
