package config

import (
	"flag"
	"strings"
	"testing"
	"time"
)

func parse(t *testing.T, env map[string]string, args ...string) (Config, error) {
	t.Helper()
	c := Default()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c.Flags(fs, func(k string) string { return env[k] })
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return c, c.Finish()
}

// With nothing set, contactd listens on loopback only: a development machine's API is not
// the network's.
func TestDefaultsListenOnLoopback(t *testing.T) {
	t.Parallel()
	c, err := parse(t, nil)
	if err != nil || c.Addr != "127.0.0.1:8080" || c.PublicURL != "http://127.0.0.1:8080" {
		t.Errorf("defaults: addr %q public URL %q (%v)", c.Addr, c.PublicURL, err)
	}
	c, err = parse(t, map[string]string{"CONTACTD_ADDR": ":9090"})
	if err != nil || c.Addr != ":9090" || c.PublicURL != "http://localhost:9090" {
		t.Errorf("every interface: addr %q public URL %q (%v)", c.Addr, c.PublicURL, err)
	}
}

// A flag overrides its variable; a variable that does not parse is an error naming it.
func TestVariablesAndFlags(t *testing.T) {
	t.Parallel()
	env := map[string]string{"CONTACTD_WEBHOOK_TIMEOUT": "3s", "CONTACTD_EXPORTS": "7", "CONTACTD_ADDR": "127.0.0.1:1"}
	c, err := parse(t, env, "--addr", "127.0.0.1:2")
	if err != nil || c.WebhookTimeout != 3*time.Second || c.Exports != 7 || c.Addr != "127.0.0.1:2" {
		t.Errorf("got timeout %v exports %d addr %q (%v)", c.WebhookTimeout, c.Exports, c.Addr, err)
	}
	for name, value := range map[string]string{"CONTACTD_WEBHOOK_TIMEOUT": "soon", "CONTACTD_EXPORTS": "many", "CONTACTD_ADDR": "nowhere"} {
		if _, err := parse(t, map[string]string{name: value}); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: %v, want an error naming it", name, value, err)
		}
	}
}

// Every setting's variable comes from its flag's name, and each kind of value parses from
// the environment: a whole number, a duration, a boolean, a string, DATABASE_URL.
func TestEveryFlagHasItsVariable(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": "postgres://db/contactd", "CONTACTD_MAX_BODY_BYTES": "2048",
		"CONTACTD_DB_MAX_CONNS": "9", "CONTACTD_WEBHOOK_RESCUE_AFTER": "2m", "CONTACTD_WEBHOOK_ALLOW_HTTP": "true",
		"CONTACTD_RATE_READS_PER_10S": "7", "CONTACTD_SECRET_KEYS_OLD": "a2V5LWtleS1rZXkta2V5LWtleS1rZXkta2V5LWtleS0=", "CONTACTD_LOG_LEVEL": "debug"}
	c, err := parse(t, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.DatabaseURL != "postgres://db/contactd" || c.MaxBodyBytes != 2048 || c.DBMaxConns != 9 || c.WebhookRescueAfter != 2*time.Minute ||
		!c.WebhookAllowHTTP || c.RateReadsPer10s != 7 || c.SecretKeysOld == "" || c.LogLevel != "debug" {
		t.Errorf("from the environment: %+v", c)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	own := fs.String("name", "", "a command's own flag")
	d := Default()
	d.Flags(fs, func(k string) string {
		if k == "CONTACTD_NAME" {
			return "from the environment"
		}
		return ""
	})
	if *own != "" {
		t.Errorf("a command's own flag read CONTACTD_NAME: %q", *own)
	}
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "name" {
			if strings.Contains(f.Usage, "CONTACTD_") {
				t.Errorf("a command's own flag names a variable: %q", f.Usage)
			}
			return
		}
		n++
		if want := "(" + EnvName(f.Name) + ")"; !strings.HasSuffix(f.Usage, want) {
			t.Errorf("--%s: usage %q does not end with %s", f.Name, f.Usage, want)
		}
	})
	if n < 30 {
		t.Errorf("%d settings registered", n)
	}
	for name, value := range map[string]string{"CONTACTD_WEBHOOK_ALLOW_HTTP": "maybe", "CONTACTD_MAX_BODY_BYTES": "64k"} {
		if _, err := parse(t, map[string]string{name: value}); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: %v, want an error naming it", name, value, err)
		}
	}
}

// The drain's bound and its count of checks come from their variables, and a negative one is
// refused by name: it would make a stop end its drain at once, or never on the checks.
func TestShutdownDrainSettings(t *testing.T) {
	t.Parallel()
	c, err := parse(t, map[string]string{"CONTACTD_SHUTDOWN_DRAIN": "10s", "CONTACTD_SHUTDOWN_DRAIN_CHECKS": "3"})
	if err != nil || c.ShutdownDrain != 10*time.Second || c.ShutdownDrainChecks != 3 {
		t.Errorf("drain %v checks %d (%v), want 10s and 3", c.ShutdownDrain, c.ShutdownDrainChecks, err)
	}
	for name, value := range map[string]string{"CONTACTD_SHUTDOWN_DRAIN": "-1s", "CONTACTD_SHUTDOWN_DRAIN_CHECKS": "-1"} {
		if _, err := parse(t, map[string]string{name: value}); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%s: %v, want an error naming it", name, value, err)
		}
	}
}
