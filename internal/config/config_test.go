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
