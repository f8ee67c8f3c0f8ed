package pgembed

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// shm is where a throwaway cluster goes when it can (ScratchDir).
const shm = "/dev/shm"

// scratchRoom is the free memory /dev/shm must have for a throwaway cluster to go there: a
// test binary's cluster, its WAL (up to max_wal_size, 1 GB, between checkpoints) and its
// databases, for the two test binaries go test runs at once, with room to spare.
const scratchRoom = 4 << 30

// ScratchDir makes a new directory for a cluster thrown away after use (the tests', the
// schema dump's): in $CONTACTD_SCRATCH_DIR when it is set (the mutation test gives each mutant's
// run one, to stop the servers a run cut short leaves), else in /dev/shm when it is a tmpfs
// with scratchRoom free, else in the temp dir.
// A test makes and drops a database per test, hundreds of files each: on ext4 each new file
// searches the inode table past the recently deleted ones, which made a database cost several
// times the CPU it costs on a tmpfs (docs/development.md).
// The directory names its owner, this process; the clusters of directories of the same
// pattern whose owner is gone are stopped and removed first (SweepScratch).
func ScratchDir(pattern string) (string, error) {
	SweepScratch(pattern)
	dir, err := makeScratch(pattern)
	if err != nil {
		return "", err
	}
	if self, ok := processID(os.Getpid()); ok {
		if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(self), 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func makeScratch(pattern string) (string, error) {
	if dir := os.Getenv("CONTACTD_SCRATCH_DIR"); dir != "" {
		return os.MkdirTemp(dir, pattern)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(shm, &st); err == nil && st.Type == tmpfsMagic && st.Bavail*uint64(st.Bsize) >= scratchRoom {
		if dir, err := os.MkdirTemp(shm, pattern); err == nil {
			return dir, nil
		}
	}
	return os.MkdirTemp("", pattern)
}

// tmpfsMagic is a tmpfs's f_type (linux/magic.h).
const tmpfsMagic = 0x01021994

// ownerFile holds the identity of the process a scratch directory belongs to (processID).
const ownerFile = "owner"

// SweepScratch stops the clusters of the scratch directories of pattern whose owner process is
// gone, and removes the directories. A test binary stopped by go test's timeout, or killed,
// runs none of its cleanups: its PostgreSQL went on running, holding memory (and /dev/shm
// space) until someone noticed. A directory without an owner (being made) is left alone.
func SweepScratch(pattern string) {
	if _, ok := processID(os.Getpid()); !ok {
		return // no /proc to tell the living from the gone
	}
	roots := []string{os.Getenv("CONTACTD_SCRATCH_DIR"), shm, os.TempDir()}
	for _, root := range roots {
		if root == "" {
			continue
		}
		dirs, _ := filepath.Glob(filepath.Join(root, pattern+"*"))
		for _, dir := range dirs {
			owner, err := os.ReadFile(filepath.Join(dir, ownerFile))
			if err != nil || alive(string(owner)) {
				continue
			}
			stopAbandoned(dir)
			_ = os.RemoveAll(dir)
		}
	}
}

// processID identifies a live process: its pid and its start time (clock ticks after boot,
// the 22nd field of /proc/PID/stat), so that a pid used again is not taken for it.
func processID(pid int) (string, bool) {
	f := statFields(pid)
	if len(f) < 20 {
		return "", false
	}
	return strconv.Itoa(pid) + " " + f[19], true
}

// statFields is /proc/PID/stat from its 3rd field on (the state), nil when there is no such
// process.
func statFields(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	end := strings.LastIndexByte(s, ')') // the command's name may hold spaces
	if end < 0 {
		return nil
	}
	return strings.Fields(s[end+1:])
}

func alive(owner string) bool {
	pid, err := strconv.Atoi(strings.Fields(owner + " 0")[0])
	if err != nil {
		return true // unreadable: not ours to judge
	}
	id, ok := processID(pid)
	return ok && id == strings.TrimSpace(owner)
}

// stopAbandoned stops, at once, every PostgreSQL server running on a data directory under dir
// (a test's cluster, or a replica test's primary and standby), and waits until each is gone.
func stopAbandoned(dir string) {
	pids, _ := filepath.Glob(filepath.Join(dir, "data", "postmaster.pid"))
	more, _ := filepath.Glob(filepath.Join(dir, "*", "data", "postmaster.pid"))
	for _, pidFile := range append(pids, more...) {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
		if err != nil || !runsOn(pid, filepath.Dir(pidFile)) {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGQUIT) // immediate shutdown: nothing in it is kept
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && running(pid); {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// running reports whether pid is a process that has not exited (an exited one its parent has
// not reaped yet is gone too).
func running(pid int) bool {
	f := statFields(pid)
	return len(f) > 0 && f[0] != "Z"
}

// runsOn reports whether pid is a server started on data (its command line names it), so that
// a pid used again by another process is never signalled.
func runsOn(pid int, data string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	for i, a := range args {
		if a == "-D" && i+1 < len(args) && filepath.Clean(args[i+1]) == filepath.Clean(data) {
			return true
		}
	}
	return false
}
