package testkit

import (
	"encoding/json"
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
	URL string
	cmd *exec.Cmd
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
	n := &NATS{cmd: exec.Command(bin, "-a", "127.0.0.1", "-p", "-1", "-js", "-sd", filepath.Join(dir, "store"),
		"--ports_file_dir", dir, "-l", filepath.Join(dir, "nats.log"))}
	if os.Getuid() == 0 { // a server does not run as root
		nobody, err := user.Lookup("nobody")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(nobody.Uid)
		gid, _ := strconv.Atoi(nobody.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		n.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	ports := filepath.Join(dir, filepath.Base(bin)+"_"+strconv.Itoa(n.cmd.Process.Pid)+".ports")
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
	return n
}

// Stop kills the server (a broker that went away).
func (n *NATS) Stop() {
	if n.cmd.Process != nil {
		_ = n.cmd.Process.Kill()
		_ = n.cmd.Wait()
	}
}
