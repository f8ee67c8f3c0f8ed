package consumer_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contactd/contactd/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// repoRoot is where openapi.yaml and tools/ are, seen from this package's directory.
const repoRoot = "../.."

// nodeTools is the pinned Node tooling that scripts/ensure-node.sh installs.
var nodeTools = filepath.Join(repoRoot, "tools", "node")

// needTool returns the path of a program the test runs. `make test` sets
// CONTACTD_CONSUMER_TESTS=1 after installing everything, so a missing tool is a failure there;
// a bare `go test` on a machine without Node or Chromium skips with the command that fixes it.
func needTool(t *testing.T, path, install string) string {
	t.Helper()
	p, err := exec.LookPath(path)
	if err == nil {
		return p
	}
	if os.Getenv("CONTACTD_CONSUMER_TESTS") != "" {
		t.Fatalf("%s is missing (%v); %s installs it", path, err, install)
	}
	t.Skipf("%s is missing; run %s (make test does)", path, install)
	return ""
}

// nodeBin is an executable of tools/node/node_modules/.bin.
func nodeBin(t *testing.T, name string) string {
	t.Helper()
	needTool(t, "node", "make node-deps")
	return needTool(t, filepath.Join(nodeTools, "node_modules", ".bin", name), "make node-deps")
}

// run runs a command to completion, failing the test with its output when it fails.
func run(t *testing.T, timeout time.Duration, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// lines streams a running process's stdout line by line.
func lines(t *testing.T, r io.Reader) <-chan string {
	ch := make(chan string, 16)
	go func() {
		defer close(ch)
		s := bufio.NewScanner(r)
		s.Buffer(make([]byte, 1<<20), 1<<20)
		for s.Scan() {
			ch <- s.Text()
		}
	}()
	return ch
}

func nextLine(t *testing.T, ch <-chan string, timeout time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatal("the process ended early")
		}
		return l
	case <-time.After(timeout):
		t.Fatalf("no output within %v", timeout)
	}
	return ""
}
