package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/google/uuid"
)

// The bench makes its accounts and keys as an operator does, with contactd's own commands
// against the run's database, and not through contactd's packages.

// contactdCommand runs `bin args...` against the database at dbURL and returns what it printed.
func contactdCommand(ctx context.Context, bin, dbURL string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, append(args, "--database-url", dbURL)...)
	cmd.Env = append(os.Environ(), "CONTACTD_SECRET_KEY="+runSecretKey, "CONTACTD_LOG_FORMAT=json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("contactd %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// createAccount is `contactd accounts create`: the new account's id.
func createAccount(ctx context.Context, bin, dbURL, name string) (uuid.UUID, error) {
	out, err := contactdCommand(ctx, bin, dbURL, "accounts", "create", "--name", name)
	if err != nil {
		return uuid.Nil, err
	}
	return uuid.Parse(out)
}

// createKey is `contactd keys create` for the named account (more: its scopes, networks):
// the key.
func createKey(ctx context.Context, bin, dbURL, account, name string, more ...string) (string, error) {
	return contactdCommand(ctx, bin, dbURL, append([]string{"keys", "create", "--account", account, "--name", name}, more...)...)
}
