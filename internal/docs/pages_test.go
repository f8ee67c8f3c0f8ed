package docs_test

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	contactd "github.com/contactd/contactd"
	"github.com/contactd/contactd/internal/config"
)

// The pages under docs/ explain openapi.yaml and the configuration; these tests keep them from
// contradicting either: the lists the spec and the code enumerate must be the pages' lists,
// and every link between the pages must lead somewhere.

const root = "../.."

func page(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func specEnum(t *testing.T, schema, property string) []string {
	t.Helper()
	spec, err := openapi3.NewLoader().LoadFromData(contactd.OpenAPIYAML)
	if err != nil {
		t.Fatal(err)
	}
	s := spec.Components.Schemas[schema].Value
	if property != "" {
		s = s.Properties[property].Value
	}
	var out []string
	for _, v := range s.Enum {
		out = append(out, v.(string))
	}
	slices.Sort(out)
	return out
}

// tableColumn is the backquoted words of a column of the markdown table that follows heading.
func tableColumn(t *testing.T, text, heading string, column int) []string {
	t.Helper()
	i := strings.Index(text, heading)
	if i < 0 {
		t.Fatalf("no %q on the page", heading)
	}
	var out []string
	inTable := false
	for _, line := range strings.Split(text[i:], "\n")[1:] {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(line, "|")
		if len(cells) <= column+1 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		for _, m := range regexp.MustCompile("`([A-Za-z]+)`").FindAllStringSubmatch(cells[column+1], -1) {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func TestErrorCodesPageMatchesSpec(t *testing.T) {
	want := specEnum(t, "Error", "code")
	got := tableColumn(t, page(t, "docs/api.md"), "## Error codes", 0)
	if !slices.Equal(got, want) {
		t.Errorf("docs/api.md error codes %v\nopenapi.yaml Error.code   %v", got, want)
	}
}

func TestEventTypesPageMatchesSpec(t *testing.T) {
	want := specEnum(t, "EventType", "")
	got := tableColumn(t, page(t, "docs/webhooks.md"), "| eventType |", 0)
	if !slices.Equal(got, want) {
		t.Errorf("docs/webhooks.md event types %v\nopenapi.yaml EventType        %v", got, want)
	}
}

// Every setting contactd reads is in the configuration table, and the table names no other.
func TestConfigurationPageMatchesSettings(t *testing.T) {
	fs := flag.NewFlagSet("contactd", flag.ContinueOnError)
	cfg := config.Default()
	cfg.Flags(fs, func(string) string { return "" })
	var settings []string
	fs.VisitAll(func(f *flag.Flag) {
		for _, m := range regexp.MustCompile(`\((DATABASE_URL|CONTACTD_[A-Z0-9_]+)\)`).FindAllStringSubmatch(f.Usage, -1) {
			settings = append(settings, m[1])
		}
	})
	settings = append(settings, config.EnvOnly...)
	ops := page(t, "docs/operations.md")
	table := ops[strings.Index(ops, "### Configuration"):]
	table = table[:strings.Index(table, "\n\n**")]
	documented := regexp.MustCompile("`(DATABASE_URL|CONTACTD_[A-Z0-9_]+)`").FindAllStringSubmatch(table, -1)
	var names []string
	for _, m := range documented {
		names = append(names, m[1])
	}
	for _, s := range settings {
		if !slices.Contains(names, s) {
			t.Errorf("%s is a setting but not in docs/operations.md's configuration table", s)
		}
	}
	for _, n := range names {
		if !slices.Contains(settings, n) {
			t.Errorf("docs/operations.md documents %s, which contactd does not read", n)
		}
	}
}

// Every relative link of the README and docs/ leads to a file, and an anchor to a heading of it.
func TestPageLinksResolve(t *testing.T) {
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	more, _ := filepath.Glob(filepath.Join(root, "docs", "decisions", "*.md"))
	pages = append(append(pages, more...), filepath.Join(root, "README.md"))
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := p
			if file != "" {
				path = filepath.Join(filepath.Dir(p), file)
			}
			info, err := os.Stat(path)
			if err != nil {
				t.Errorf("%s links to %s, which does not exist", p, target)
				continue
			}
			if anchor != "" && !info.IsDir() && !slices.Contains(anchors(t, path), anchor) {
				t.Errorf("%s links to %s, but %s has no heading #%s", p, target, file, anchor)
			}
		}
	}
}

// anchors is the GitHub anchors of a markdown file's headings.
func anchors(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	inCode := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		h = regexp.MustCompile(`[^a-z0-9 _-]`).ReplaceAllString(h, "")
		out = append(out, strings.ReplaceAll(h, " ", "-"))
	}
	return out
}
