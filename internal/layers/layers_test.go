package layers

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/contactd/contactd/"

// leaves are the packages that import nothing of ours but other leaves.
var leaves = []string{"internal/apperr", "internal/config", "internal/address", "internal/apitime", "internal/platform/ids",
	"internal/platform/token", "internal/platform/seal", "internal/platform/tracing", "gen/"}

// rules: a package (or every package under a prefix ending in "/") may not import these,
// but for the exceptions.
var rules = []struct {
	pkgs, forbidden, except []string
	why                     string
}{
	{leaves, []string{"internal/", "gen/"}, leaves, "leaves import nothing of ours but other leaves"},
	{[]string{"internal/platform/store"}, []string{"internal/", "gen/api"}, []string{"internal/apperr"},
		"the database boundary knows only the generated queries and apperr"},
	{[]string{"internal/platform/"}, []string{"internal/", "gen/api"}, []string{"internal/platform/", "internal/apperr"},
		"the platform (the database, queues, secrets at rest, random tokens, the API's ids, the embedded PostgreSQL and its backups, metrics, tracing, turns) serves every package and knows none of the domain"},
	{[]string{"internal/httpapi"}, []string{"gen/db", "internal/platform/store"}, nil, "handlers reach the database only through the domain services"},
	{[]string{"internal/contact", "internal/contact/search", "internal/event", "internal/subscription", "internal/delivery", "internal/enrich", "internal/auth",
		"internal/idempotency", "internal/platform/queue", "internal/ratelimit", "internal/segment", "internal/field"},
		[]string{"gen/api", "internal/httpapi", "internal/console", "internal/importer", "internal/app", "github.com/labstack/echo/v4"},
		nil, "domain services know nothing of HTTP"},
	{[]string{"internal/event"}, []string{"internal/"}, []string{"internal/platform/", "internal/apperr", "internal/apitime"},
		"events (the outbox, its fan-out, the feed) sit beneath every resource that writes them: subscriptions, deliveries and contacts import event, never the reverse"},
	{[]string{"internal/subscription"}, []string{"internal/delivery", "internal/contact", "internal/segment"}, nil,
		"a subscription is read by the deliveries and the fan-out, and knows neither"},
	{[]string{"internal/importer", "internal/console"}, []string{"internal/httpapi"}, nil,
		"other front ends call the domain services, not the API's handlers"},
	{[]string{"internal/apicore"}, []string{"internal/httpapi", "internal/console", "internal/importer", "internal/platform/store",
		"gen/db", "github.com/labstack/echo/v4"}, nil,
		"the API's work without HTTP sits below every front end and reaches the database through the domain services"},
	{[]string{"internal/"}, []string{"internal/app", "internal/testkit"}, nil, "only cmd/ wires the application; testkit is for tests"},
}

// allowed are the imports that break a rule today, each a debt with its reason. The list is
// kept exact: paying a debt off fails the test until it is taken off.
var allowed = map[string]string{}

func TestDependenciesPointDownward(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	used := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(strings.ReplaceAll(line, module, ""))
		pkg, imports := fields[0], fields[1:]
		for _, r := range rules {
			if !matches(pkg, r.pkgs) || (pkg == "internal/app" || pkg == "internal/testkit") {
				continue
			}
			for _, imp := range imports {
				if !matches(imp, r.forbidden) || matches(imp, r.except) || imp == pkg {
					continue
				}
				edge := pkg + " -> " + imp
				if _, ok := allowed[edge]; ok {
					used[edge] = true
					continue
				}
				t.Errorf("%s: %s", edge, r.why)
			}
		}
	}
	for edge := range allowed {
		if !used[edge] {
			t.Errorf("allowed lists %s, which no longer exists: take it off", edge)
		}
	}
}

// matches reports whether pkg is one of pkgs, or under one that ends in "/".
func matches(pkg string, pkgs []string) bool {
	return slices.ContainsFunc(pkgs, func(p string) bool {
		return pkg == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(pkg, p))
	})
}
