package app

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/contactd/contactd/internal/auth"
	"github.com/contactd/contactd/internal/config"
	"github.com/contactd/contactd/internal/httpapi"
)

// listFlag is a flag that may be given many times, each a value or a comma-separated list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// parseExpiry reads --expires: a duration from now in days or hours (90d, 36h), a date
// (2027-01-31, midnight UTC) or an RFC 3339 time.
func parseExpiry(v string, now time.Time) (time.Time, error) {
	if n, ok := strings.CutSuffix(v, "d"); ok {
		if days, err := strconv.Atoi(n); err == nil && days > 0 {
			return now.Add(time.Duration(days) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(d), nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--expires %q: give a duration (90d, 36h), a date (2027-01-31) or an RFC 3339 time", v)
}

func cmdKeysCreate(ctx context.Context, c *cmdline) error {
	if *c.account == "" {
		return errors.New("--account is required")
	}
	opt := auth.KeyOptions{Name: *c.name, Test: *c.test}
	if opt.Name == "" {
		opt.Name = "key-" + time.Now().UTC().Format("20060102-150405")
	}
	known, err := httpapi.Scopes()
	if err != nil {
		return err
	}
	known = append(known, auth.ScopeAll)
	for _, s := range *c.scopes {
		if !slices.Contains(known, s) {
			return fmt.Errorf("--scope %q: the scopes are %s", s, strings.Join(known, ", "))
		}
		opt.Scopes = append(opt.Scopes, s)
	}
	if *c.expires != "" {
		at, err := parseExpiry(*c.expires, time.Now())
		if err != nil {
			return err
		}
		if !at.After(time.Now()) {
			return fmt.Errorf("--expires %s is in the past", *c.expires)
		}
		opt.ExpiresAt = &at
	}
	if opt.Networks, err = config.ParseNetworks(strings.Join(*c.allowIPs, ",")); err != nil {
		return fmt.Errorf("--allow-ip: %w", err)
	}
	return withServices(ctx, c, func(s *Services) error {
		id, err := s.Auth.AccountByName(ctx, *c.account)
		if err != nil {
			return err
		}
		key, err := s.Auth.CreateKeyWith(ctx, id, opt)
		if err == nil {
			fmt.Fprintln(c.stdout, key)
		}
		return err
	})
}

func cmdKeysList(ctx context.Context, c *cmdline) error {
	if *c.account == "" {
		return errors.New("--account is required")
	}
	return withServices(ctx, c, func(s *Services) error {
		if _, err := s.Auth.AccountByName(ctx, *c.account); err != nil {
			return err
		}
		keys, err := s.Auth.ListKeys(ctx, *c.account)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "PREFIX\tNAME\tMODE\tSCOPES\tEXPIRES\tALLOWED FROM\tCREATED\tLAST USED\tREVOKED")
		for _, k := range keys {
			mode := "live"
			if !k.Live {
				mode = "test"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.Prefix, k.Name, mode, strings.Join(k.Scopes, ","),
				stamp(k.ExpiresAt), networks(k.Networks), stamp(&k.CreatedAt), stamp(k.LastUsedAt), stamp(k.RevokedAt))
		}
		return w.Flush()
	})
}

func networks(ns []netip.Prefix) string {
	if len(ns) == 0 {
		return "anywhere"
	}
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.String()
	}
	return strings.Join(out, ",")
}

func cmdKeysRevoke(ctx context.Context, c *cmdline) error {
	if len(c.args) != 1 {
		return errors.New("usage: contactd keys revoke KEY_PREFIX")
	}
	return withServices(ctx, c, func(s *Services) error {
		if err := s.Auth.RevokeKey(ctx, c.args[0]); err != nil {
			return err
		}
		fmt.Fprintf(c.stderr, "revoked %s\n", c.args[0])
		return nil
	})
}

// cmdKeysExpire sets when a key stops working: the grace period of a rotation.
func cmdKeysExpire(ctx context.Context, c *cmdline) error {
	if len(c.args) != 1 || *c.expires == "" {
		return errors.New("usage: contactd keys expire KEY_PREFIX --expires 24h|DATE")
	}
	at, err := parseExpiry(*c.expires, time.Now())
	if err != nil {
		return err
	}
	return withServices(ctx, c, func(s *Services) error {
		if err := s.Auth.ExpireKey(ctx, c.args[0], at); err != nil {
			return err
		}
		fmt.Fprintf(c.stderr, "%s expires at %s\n", c.args[0], at.UTC().Format(time.RFC3339))
		return nil
	})
}

// cmdSandboxReset deletes the test data of an account's sandbox; its test keys stay.
func cmdSandboxReset(ctx context.Context, c *cmdline) error {
	if *c.account == "" {
		return errors.New("--account is required")
	}
	return withServices(ctx, c, func(s *Services) error {
		live, err := s.Auth.AccountByName(ctx, *c.account)
		if err != nil {
			return err
		}
		sandbox, ok, err := s.Auth.Sandbox(ctx, live)
		if err != nil || !ok {
			if err == nil {
				fmt.Fprintf(c.stderr, "%s has no sandbox yet (no test key was made): nothing to reset\n", *c.account)
			}
			return err
		}
		if err := s.Auth.ResetSandbox(ctx, sandbox); err != nil {
			return err
		}
		fmt.Fprintf(c.stderr, "the sandbox of %s is empty: contacts, subscriptions, events and deliveries deleted; test keys kept\n", *c.account)
		return nil
	})
}
