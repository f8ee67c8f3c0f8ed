// Command contactd serves the Contact and Webhook Public API and manages its accounts and
// keys; `contactd help` lists the subcommands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/contactd/contactd/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
