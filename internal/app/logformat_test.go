package app

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// openTerminal opens a pseudo-terminal and returns its terminal side, as a shell gives a
// program its stderr.
func openTerminal(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return tty
}

// On a terminal the log is text for people unless JSON is asked for; anywhere else it is JSON
// unless text is asked for.
func TestLogFormatFollowsTheTerminal(t *testing.T) {
	tty := openTerminal(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, c := range []struct {
		format string
		w      io.Writer
		people bool
	}{
		{"auto", tty, true}, {"json", tty, false}, {"text", tty, true},
		{"auto", w, false}, {"auto", &bytes.Buffer{}, false}, {"text", w, true},
	} {
		if got := logForPeople(c.format, c.w); got != c.people {
			t.Errorf("format %s to %T (terminal: %v): for people %v, want %v", c.format, c.w, c.w == io.Writer(tty), got, c.people)
		}
	}
	var text, js bytes.Buffer
	newLogger("info", true, &text).Info("contactd listening", "addr", "127.0.0.1:8080")
	newLogger("info", false, &js).Info("contactd listening", "addr", "127.0.0.1:8080")
	newLogger("info", true, &text).Debug("below the level")
	if !regexp.MustCompile(`^time=\d\d:\d\d:\d\d\.\d{3} level=INFO msg="contactd listening" addr=127.0.0.1:8080\n$`).Match(text.Bytes()) {
		t.Errorf("text log %q", text.String())
	}
	if !regexp.MustCompile(`^\{"time":"[^"]+","level":"INFO","msg":"contactd listening","addr":"127.0.0.1:8080"\}\n$`).Match(js.Bytes()) {
		t.Errorf("JSON log %q", js.String())
	}
}
