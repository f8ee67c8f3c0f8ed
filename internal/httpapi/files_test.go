package httpapi_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contactd/contactd/gen/api"
)

// Each operation's handler lives in the file named after its tag in openapi.yaml (a tag's
// handlers in one place: webhooks.go holds every Webhooks operation; contacts*.go the
// Contacts ones), so a reader finds a handler from the spec without searching.
func TestHandlersLiveInTheirTagsFile(t *testing.T) {
	spec, err := api.GetSwagger()
	if err != nil {
		t.Fatal(err)
	}
	tagOf := map[string]string{} // handler method name -> tag
	for _, item := range spec.Paths.Map() {
		for _, op := range item.Operations() {
			if len(op.Tags) != 1 {
				t.Errorf("%s has %d tags, want 1", op.OperationID, len(op.Tags))
				continue
			}
			tagOf[strings.ToUpper(op.OperationID[:1])+op.OperationID[1:]] = op.Tags[0]
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil {
				continue
			}
			tag, ok := tagOf[fn.Name.Name]
			if !ok {
				continue
			}
			found++
			if want := strings.ToLower(tag); !strings.HasPrefix(name, want) {
				t.Errorf("%s (tag %s) is in %s, want %s.go or %s_*.go", fn.Name.Name, tag, name, want, want)
			}
		}
	}
	if found != len(tagOf) {
		t.Errorf("found %d of the spec's %d operations' handlers", found, len(tagOf))
	}
}
