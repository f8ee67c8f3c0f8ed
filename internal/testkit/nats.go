package testkit

import (
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// NATS is a private nats-server with JetStream for one test (scripts/ensure-nats.sh installs
// it), run as nobody when the test runs as root.
type NATS struct {
	URL      string
	bin, dir string
	cmd      *exec.Cmd
}

// StartNATS starts a nats-server with JetStream on a loopback port it picks itself (and
// reports in its ports file: a port chosen free here could be taken before it binds),
// storing in a directory of its own, stopped when the test ends.
func StartNATS(t testing.TB) *NATS {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nats-server"); serr != nil {
			t.Fatalf("nats-server is not installed (scripts/ensure-nats.sh): %v", err)
		}
		bin = "/usr/sbin/nats-server"
	}
	dir, err := os.MkdirTemp("", "nats-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Getuid() == 0 {
		uid, gid := nobody(t)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	n := &NATS{bin: bin, dir: dir}
	n.start(t, "-1")
	t.Cleanup(n.Stop)
	return n
}

// Restart starts the server again after Stop, on the same port with the same store: the
// broker back, its streams and their duplicate windows as it left them.
func (n *NATS) Restart(t testing.TB) {
	t.Helper()
	u, err := url.Parse(n.URL)
	if err != nil {
		t.Fatal(err)
	}
	n.start(t, u.Port())
}

func (n *NATS) start(t testing.TB, port string) {
	t.Helper()
	n.cmd = exec.Command(n.bin, "-a", "127.0.0.1", "-p", port, "-js", "-sd", filepath.Join(n.dir, "store"),
		"--ports_file_dir", n.dir, "-l", filepath.Join(n.dir, "nats.log"))
	if os.Getuid() == 0 { // a server does not run as root
		uid, gid := nobody(t)
		n.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ports := filepath.Join(n.dir, filepath.Base(n.bin)+"_"+strconv.Itoa(n.cmd.Process.Pid)+".ports")
	Eventually(t, "nats-server to report its port", func() bool {
		raw, err := os.ReadFile(ports)
		if err != nil {
			return false
		}
		var p struct{ Nats []string }
		if json.Unmarshal(raw, &p) != nil || len(p.Nats) == 0 {
			return false
		}
		n.URL = p.Nats[0]
		return true
	})
}

func nobody(t testing.TB) (uid, gid int) {
	t.Helper()
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

// Stop kills the server (a broker that went away).
func (n *NATS) Stop() {
	if n.cmd.Process != nil {
		_ = n.cmd.Process.Kill()
		_ = n.cmd.Wait()
	}
}
