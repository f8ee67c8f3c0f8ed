package pgembed

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A port taken between its choice and PostgreSQL's bind is not a failed start: the cluster
// starts on another one.
func TestStartMovesOffAPortTakenMeanwhile(t *testing.T) {
	if _, err := findBinaries(); err != nil {
		t.Skip(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	picks := 0
	pickPort = func() (int, error) {
		if picks++; picks == 1 {
			return takenPort, nil
		}
		return freePort()
	}
	defer func() { pickPort = freePort }()

	dir := openTempDir(t, "pgembed-test-")
	c, err := Start(context.Background(), Options{Dir: dir, Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	log, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
	if picks != 2 || c.Port == takenPort || !strings.Contains(string(log), "Address already in use") {
		t.Fatalf("picks %d, port %d (taken %d); log:\n%s", picks, c.Port, takenPort, log)
	}
}

// A scratch cluster whose owner process is gone (a test binary killed, or stopped by go
// test's timeout, runs no cleanup) is stopped and removed by the next ScratchDir of its
// pattern; the scratch directories of live processes, and one not yet owned, are left alone.
func TestAnAbandonedScratchClusterIsSweptAway(t *testing.T) {
	if _, err := findBinaries(); err != nil {
		t.Skip(err)
	}
	root := openTempDir(t, "pgembed-sweep-")
	t.Setenv("CONTACTD_SCRATCH_DIR", root)
	const pattern = "contactd-sweep-test-"
	abandoned, err := ScratchDir(pattern)
	if err == nil {
		err = os.Chmod(abandoned, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(context.Background(), Options{Dir: abandoned, Ephemeral: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.running(); !ok {
		t.Fatal("the cluster is not running")
	}
	pidFile, _ := os.ReadFile(filepath.Join(abandoned, "data", "postmaster.pid"))
	pid, _ := strconv.Atoi(strings.SplitN(string(pidFile), "\n", 2)[0])
	defer func() { // when the sweep failed
		if running(pid) {
			_ = syscall.Kill(pid, syscall.SIGQUIT)
		}
	}()
	// its owner gone: an identity no live process has (this process, started at another time)
	if err := os.WriteFile(filepath.Join(abandoned, ownerFile), []byte(strconv.Itoa(os.Getpid())+" 1"), 0o644); err != nil {
		t.Fatal(err)
	}
	unowned := filepath.Join(root, pattern+"being-made")
	if err := os.Mkdir(unowned, 0o755); err != nil {
		t.Fatal(err)
	}

	mine, err := ScratchDir(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if running(pid) {
		t.Errorf("the abandoned cluster's postmaster (pid %d) still runs", pid)
	}
	if _, err := os.Stat(abandoned); !os.IsNotExist(err) {
		t.Errorf("the abandoned scratch directory is still there (%v)", err)
	}
	for _, dir := range []string{mine, unowned} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s was swept: %v", dir, err)
		}
	}
	SweepScratch(pattern)
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("the scratch directory of a live process was swept: %v", err)
	}
}

// openTempDir makes a temporary directory the postgres user can enter (PostgreSQL runs as it
// when the tests run as root), removed when the test ends.
func openTempDir(t *testing.T, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
