package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/contactd/contactd/internal/config"
)

const usage = `contactd — contacts and signed webhooks

usage:
  contactd serve [--addr HOST:PORT] [flags]   run the API and the delivery workers
  contactd worker [flags]                     run only the delivery workers
  contactd migrate                            apply pending migrations
  contactd accounts create --name NAME        create an account
  contactd accounts secret --account NAME [--rotate] [--test]
                                              print the account's webhook client secret
                                              (fello-webhook-signature); --rotate replaces it
  contactd keys create --account NAME [--name KEY_NAME] [--scope SCOPE ...] [--expires 90d|DATE]
                      [--allow-ip CIDR ...] [--test]
                                              create an API key; prints it alone on stdout
  contactd keys list --account NAME           list an account's keys (live and test)
  contactd keys expire KEY_PREFIX --expires 24h|DATE
                                              set when a key stops working (rotation grace)
  contactd keys revoke KEY_PREFIX             revoke a key at once
  contactd sandbox reset --account NAME       delete the account's test data
  contactd secrets rekey                      seal every stored secret under CONTACTD_SECRET_KEY
  contactd suppressions remove --account NAME (--email EMAIL | --phone PHONE) [--test]
                                              lift the suppression of an erased person's email
                                              or phone: contacts may have it again
  contactd backup [--full]                    back the embedded PostgreSQL up into CONTACTD_BACKUP_DIR
                                              (pgBackRest; differential after the first full one)
  contactd restore --to TIME --into DIR       restore the embedded PostgreSQL as it was at TIME
                                              (RFC 3339) into the new directory DIR
  contactd import --account NAME [--map field=Column,...] [--dry-run] FILE
                                              upsert the contacts of a CSV (header row) or NDJSON
                                              file; rejected rows go to FILE.rejected.csv; exit
                                              status 3 when rows were rejected

Every command takes the configuration flags (contactd serve -h lists them) and reads
CONTACTD_* variables and DATABASE_URL; without DATABASE_URL the embedded PostgreSQL under
./.data is used. With DATABASE_URL, every command but migrate needs CONTACTD_SECRET_KEY (or
CONTACTD_SECRET_KEY_FILE), the key that seals the stored webhook secrets.
`

// Main runs the command line and returns the exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd := args[0]
	if (cmd == "accounts" || cmd == "keys" || cmd == "secrets" || cmd == "sandbox" || cmd == "suppressions") && len(args) > 1 {
		cmd, args = cmd+" "+args[1], args[1:]
	}
	run, ok := commands[cmd]
	if !ok {
		fmt.Fprintf(stderr, "contactd: unknown command %q\n\n%s", strings.Join(args[:1], " "), usage)
		return 2
	}
	fs := flag.NewFlagSet("contactd "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := config.Default()
	cfg.Flags(fs, os.Getenv)
	cl := &cmdline{fs: fs, stdout: stdout, stderr: stderr}
	cl.name = fs.String("name", "", "account or key name")
	cl.account = fs.String("account", "", "account name")
	cl.rotate = fs.Bool("rotate", false, "accounts secret: replace the client secret first")
	cl.mapping = fs.String("map", "", "import: field=Column pairs, comma-separated (name=\"Full Name\")")
	cl.dryRun = fs.Bool("dry-run", false, "import: check every row against the database, write nothing")
	cl.matchField = fs.String("match-field", "", "import: the key of a unique custom field to match rows on instead of the email")
	cl.batchSize = fs.Int("batch-size", 1000, "import: rows per batch (at most 1000)")
	cl.writers = fs.Int("writers", 4, "import: batches written at once")
	cl.scopes, cl.allowIPs = &listFlag{}, &listFlag{}
	fs.Var(cl.scopes, "scope", "keys create: a scope the key gets (repeat, or comma-separate); default all")
	fs.Var(cl.allowIPs, "allow-ip", "keys create: a CIDR or address the key may be used from (repeat); default anywhere")
	cl.expires = fs.String("expires", "", "keys create, keys expire: when the key stops working (90d, 36h, 2027-01-31, RFC 3339)")
	cl.test = fs.Bool("test", false, "keys create: a sandbox key (ck_test_); accounts secret, suppressions remove: the sandbox's")
	cl.email = fs.String("email", "", "suppressions remove: the email to lift")
	cl.phone = fs.String("phone", "", "suppressions remove: the phone to lift")
	cl.full = fs.Bool("full", false, "backup: a full backup (default: differential, full when there is none)")
	cl.to = fs.String("to", "", "restore: the time to restore to (RFC 3339)")
	cl.into = fs.String("into", "", "restore: a new directory for the restored cluster")
	// flags may come before or after the positional arguments (contactd import FILE --dry-run)
	for rest := args[1:]; ; rest = fs.Args()[1:] {
		if err := fs.Parse(rest); err != nil {
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		cl.args = append(cl.args, fs.Arg(0))
	}
	if err := cfg.Finish(); err != nil {
		fmt.Fprintf(stderr, "contactd: invalid configuration:\n%v\n", err)
		return 2
	}
	cl.cfg = cfg
	logs := newLogWriter(stderr) // every later write to stderr goes through it, in order
	cl.stderr = logs
	cl.log = newLogger(cfg.LogLevel, logForPeople(cfg.LogFormat, stderr), logs)
	err := run(ctx, cl)
	if err != nil {
		fmt.Fprintf(logs, "contactd %s: %v\n", cmd, err)
	}
	logs.Close()
	switch {
	case errors.Is(err, errRowsRejected):
		return 3
	case err != nil:
		return 1
	}
	return 0
}

type cmdline struct {
	fs             *flag.FlagSet
	cfg            config.Config
	log            *slog.Logger
	stdout, stderr io.Writer
	args           []string // the positional arguments
	name, account  *string
	rotate         *bool
	mapping        *string
	matchField     *string
	dryRun         *bool
	batchSize      *int
	writers        *int
	scopes         *listFlag
	allowIPs       *listFlag
	expires        *string
	test           *bool
	email, phone   *string
	full           *bool
	to, into       *string
}

var commands = map[string]func(context.Context, *cmdline) error{
	"serve":               func(ctx context.Context, c *cmdline) error { return Serve(ctx, c.cfg, c.log, c.stdout) },
	"worker":              func(ctx context.Context, c *cmdline) error { return Work(ctx, c.cfg, c.log) },
	"migrate":             cmdMigrate,
	"accounts create":     cmdAccountsCreate,
	"accounts secret":     cmdAccountsSecret,
	"secrets rekey":       cmdSecretsRekey,
	"keys create":         cmdKeysCreate,
	"keys list":           cmdKeysList,
	"keys revoke":         cmdKeysRevoke,
	"keys expire":         cmdKeysExpire,
	"sandbox reset":       cmdSandboxReset,
	"suppressions remove": cmdSuppressionsRemove,
	"import":              cmdImport,
	"backup":              cmdBackup,
	"restore":             cmdRestore,
}

// newLogger logs at level to w: as text for people (the time of day, the level, the message,
// then key=value), or as one JSON object per line for log collectors.
func newLogger(level string, forPeople bool, w io.Writer) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	if !forPeople {
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.String(slog.TimeKey, a.Value.Time().Local().Format("15:04:05.000"))
			}
			return a
		}}))
}

// logForPeople reports whether the log, written to w, is read by people: format text, or
// auto and w is a terminal. (The log goes to stderr, so that is the stream checked: with
// `contactd serve | tee out` the log is still on the terminal.)
func logForPeople(format string, w io.Writer) bool {
	if format != "auto" {
		return format == "text"
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// withServices opens the database, applies migrations, and runs fn with the services.
func withServices(ctx context.Context, c *cmdline, fn func(*Services) error) error {
	return withServicesOf(ctx, c.cfg, c.log, fn)
}

func withServicesOf(ctx context.Context, cfg config.Config, log *slog.Logger, fn func(*Services) error) error {
	rt, svc, err := openServices(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer rt.Close()
	return fn(svc)
}

// openServices opens the database, applies migrations, checks the secret key against the
// stored secrets, seals the secrets an older contactd left in clear, and builds the services.
func openServices(ctx context.Context, cfg config.Config, log *slog.Logger) (*Runtime, *Services, error) {
	rt, err := Open(ctx, cfg, log)
	if err != nil {
		return nil, nil, err
	}
	svc, err := func() (*Services, error) {
		if err := rt.Store.Migrate(ctx); err != nil {
			return nil, err
		}
		keys, err := openSecrets(ctx, cfg, rt)
		if err != nil {
			return nil, err
		}
		svc, err := NewServices(cfg, rt.Store, keys, log)
		if err != nil {
			return nil, err
		}
		if t := rt.BackupTask(cfg); t != nil {
			svc.Periodic.Add(*t)
		}
		if n, err := svc.Secrets.Reseal(ctx, true); err != nil {
			return nil, fmt.Errorf("seal the secrets stored in clear: %w", err)
		} else if n.Subscriptions > 0 {
			log.Info("sealed webhook secrets stored in clear", "subscriptions", n.Subscriptions)
		}
		return svc, nil
	}()
	if err != nil {
		rt.Close()
		return nil, nil, err
	}
	return rt, svc, nil
}

func cmdMigrate(ctx context.Context, c *cmdline) error {
	rt, err := Open(ctx, c.cfg, c.log)
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := rt.Store.Migrate(ctx); err != nil {
		return err
	}
	fmt.Fprintln(c.stderr, "migrations applied")
	return nil
}

// cmdAccountsSecret prints the account's client secret, which signs fello-webhook-signature
// (created on first use); --rotate replaces it first.
func cmdAccountsSecret(ctx context.Context, c *cmdline) error {
	if *c.account == "" {
		return errors.New("--account is required")
	}
	return withServices(ctx, c, func(s *Services) error {
		// the sandbox signs its deliveries with a client secret of its own
		id, err := c.accountID(ctx, s)
		if err != nil {
			return err
		}
		secret, err := s.Secrets.ClientSecret(ctx, id, *c.rotate)
		if err == nil {
			fmt.Fprintln(c.stdout, secret)
		}
		return err
	})
}

// cmdSecretsRekey seals every stored secret under the current key (CONTACTD_SECRET_KEY), for
// moving to a new key while contactd runs: docs/operations.md has the steps.
func cmdSecretsRekey(ctx context.Context, c *cmdline) error {
	return withServices(ctx, c, func(s *Services) error {
		n, err := s.Secrets.Reseal(ctx, false)
		if err != nil {
			return err
		}
		stored, err := s.Idempotency.Reseal(ctx)
		if err != nil {
			return err
		}
		suppressionKey, err := s.Suppressions.Reseal(ctx)
		fmt.Fprintf(c.stderr, "resealed under key %s: %d subscriptions, %d accounts, %d stored idempotent responses, %d suppression list key\n",
			s.Secrets.KeyID(), n.Subscriptions, n.Accounts, stored, map[bool]int{true: 1}[suppressionKey])
		return err
	})
}

func cmdAccountsCreate(ctx context.Context, c *cmdline) error {
	if *c.name == "" {
		return errors.New("--name is required")
	}
	return withServices(ctx, c, func(s *Services) error {
		id, err := s.Auth.CreateAccount(ctx, *c.name)
		if err != nil {
			return err
		}
		if _, err := s.Secrets.ClientSecret(ctx, id, false); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "%s\n", id)
		return nil
	})
}

func stamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
