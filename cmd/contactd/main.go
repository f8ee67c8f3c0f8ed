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

// defaultGCPercent is GOGC unless the environment sets it. contactd's live heap is small (a
// few MB), so Go's default of 100 collects several times a second under load; 200 halves that
// for a few tens of MB more memory (measured with `make bench`).
const defaultGCPercent = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
