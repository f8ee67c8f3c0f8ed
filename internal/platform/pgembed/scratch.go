package pgembed

import (
	"os"
	"syscall"
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
func ScratchDir(pattern string) (string, error) {
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
