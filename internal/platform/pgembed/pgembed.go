// Package pgembed runs a private PostgreSQL cluster from the machine's PostgreSQL binaries,
// for `contactd serve` without DATABASE_URL and for the tests. PostgreSQL refuses to run as
// root, so as root the cluster runs as the postgres user.
package pgembed

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
)

// Options configures a cluster.
type Options struct {
	// Dir holds the cluster: data/, run/ (the socket) and postgres.log.
	Dir string
	// Ephemeral trades durability for speed (fsync off): for tests.
	Ephemeral bool
	// Port to listen on (127.0.0.1); 0 picks a free one.
	Port int
	// Settings are more server settings, "name=value" each.
	Settings []string
}

// Cluster is a running (or stopped) private PostgreSQL.
type Cluster struct {
	opt   Options
	bin   string
	runAs *user.User
	Port  int
	// attached is set when the cluster was already running (another contactd started it):
	// we use it and leave it running.
	attached bool
}

// Open is the cluster in opt.Dir, neither made nor started: for the tools that work on its
// files as its user (a restore).
func Open(opt Options) (*Cluster, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(opt.Dir)
	if err != nil {
		return nil, err
	}
	opt.Dir = dir
	c := &Cluster{opt: opt, bin: bin, Port: opt.Port}
	if os.Geteuid() == 0 {
		if c.runAs, err = user.Lookup("postgres"); err != nil {
			return nil, fmt.Errorf("running as root needs a postgres user to run PostgreSQL as: %w", err)
		}
	}
	return c, nil
}

// Start initialises the cluster on first use and starts it.
func Start(ctx context.Context, opt Options) (*Cluster, error) {
	c, err := Open(opt)
	if err != nil {
		return nil, err
	}
	if err := c.prepare(ctx); err != nil {
		return nil, err
	}
	if port, ok := c.running(); ok {
		c.Port, c.attached = port, true
		return c, nil
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// DataDir is the cluster's data directory; SocketDir the directory of its unix socket.
func (c *Cluster) DataDir() string   { return c.path("data") }
func (c *Cluster) SocketDir() string { return c.path("run") }

// RunAs runs program (a path, or a name on the PATH) as the user PostgreSQL runs as, from
// the cluster's directory: tools that read the data directory (pgBackRest) must.
func (c *Cluster) RunAs(ctx context.Context, program string, args ...string) (string, error) {
	return c.runProgram(ctx, program, args...)
}

// Own gives path to the user PostgreSQL runs as (a no-op when that is us).
func (c *Cluster) Own(path string) error { return c.chown(path) }

// StartStandby makes a streaming standby of the running cluster c in opt.Dir, a new
// directory (pg_basebackup of c, with the replication settings that follow c), and starts
// it: it replays what c writes, and answers reads (hot standby).
func (c *Cluster) StartStandby(ctx context.Context, opt Options) (*Cluster, error) {
	s, err := Open(opt)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.opt.Dir, 0o700); err != nil {
		return nil, err
	}
	if err := s.chown(s.opt.Dir); err != nil {
		return nil, err
	}
	out, err := c.run(ctx, "pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(c.Port), "-U", "postgres",
		"-D", s.path("data"), "--write-recovery-conf", "--wal-method=stream", "--checkpoint=fast", "--no-sync")
	if err != nil {
		return nil, fmt.Errorf("pg_basebackup: %w: %s", err, out)
	}
	return Start(ctx, opt)
}

// Program is the path of one of the PostgreSQL programs the cluster runs with (pg_dump, psql).
func (c *Cluster) Program(name string) string { return filepath.Join(c.bin, name) }

// URL is a connection string for database name on this cluster.
func (c *Cluster) URL(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, name)
}

// Start starts a stopped cluster on its port. A cluster without one gets a free port, and
// another one if a process binds it between the check and PostgreSQL's start.
func (c *Cluster) Start(ctx context.Context) error {
	chosen := c.Port == 0
	for attempt := 1; ; attempt++ {
		if chosen {
			port, err := pickPort()
			if err != nil {
				return err
			}
			c.Port = port
		}
		opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=300", c.Port, c.path("run"))
		for _, setting := range c.opt.Settings {
			opts += " -c " + setting
		}
		if c.opt.Ephemeral {
			opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
		}
		logged := logSize(c.path("postgres.log"))
		out, err := c.run(ctx, "pg_ctl", "-D", c.path("data"), "-l", c.path("postgres.log"), "-w", "-t", "60", "-o", opts, "start")
		if err == nil {
			return nil
		}
		if chosen && attempt < 5 && portWasTaken(c.path("postgres.log"), logged) {
			continue
		}
		return fmt.Errorf("start PostgreSQL: %w: %s (see %s)", err, out, c.path("postgres.log"))
	}
}

func logSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// portWasTaken reports whether the log, past offset, says PostgreSQL could not bind its port.
func portWasTaken(path string, offset int64) bool {
	b, err := os.ReadFile(path)
	if err != nil || int64(len(b)) < offset {
		return false
	}
	return strings.Contains(string(b[offset:]), "Address already in use")
}

// Stop stops the cluster, letting sessions end cleanly ("fast" shutdown). A cluster that
// another process started is left running.
func (c *Cluster) Stop() error {
	if c.attached {
		return nil
	}
	out, err := c.run(context.Background(), "pg_ctl", "-D", c.path("data"), "-m", "fast", "-w", "-t", "60", "stop")
	if err != nil {
		return fmt.Errorf("stop PostgreSQL: %w: %s", err, out)
	}
	return nil
}

// EnsureDatabase creates database name if it does not exist.
func (c *Cluster) EnsureDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil || exists {
		return err
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return err
}

// running reports a live server on the data directory and its port, from postmaster.pid.
func (c *Cluster) running() (int, bool) {
	b, err := os.ReadFile(c.path("data", "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 4 {
		return 0, false
	}
	pid, err1 := strconv.Atoi(strings.TrimSpace(lines[0]))
	port, err2 := strconv.Atoi(strings.TrimSpace(lines[3]))
	if err1 != nil || err2 != nil || syscall.Kill(pid, 0) != nil {
		return 0, false
	}
	return port, true
}

func (c *Cluster) prepare(ctx context.Context) error {
	for _, d := range []string{c.opt.Dir, c.path("run")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		if err := c.chown(d); err != nil {
			return err
		}
	}
	if _, err := os.Stat(c.path("data", "PG_VERSION")); err == nil {
		return nil
	}
	out, err := c.run(ctx, "initdb", "-D", c.path("data"), "-U", "postgres", "-A", "trust", "-E", "UTF8",
		"--locale=C.UTF-8", "--no-sync", "--no-instructions")
	if err != nil {
		return fmt.Errorf("initdb: %w: %s", err, out)
	}
	return nil
}

func (c *Cluster) chown(path string) error {
	if c.runAs == nil {
		return nil
	}
	uid, _ := strconv.Atoi(c.runAs.Uid)
	gid, _ := strconv.Atoi(c.runAs.Gid)
	return os.Chown(path, uid, gid)
}

// run runs a PostgreSQL program, as the postgres user when we are root. The program gets
// its own process group so a Ctrl-C at the terminal reaches contactd, which then stops
// PostgreSQL in order, instead of killing the server under it.
func (c *Cluster) run(ctx context.Context, prog string, args ...string) (string, error) {
	return c.runProgram(ctx, filepath.Join(c.bin, prog), args...)
}

func (c *Cluster) runProgram(ctx context.Context, program string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if c.runAs != nil {
		uid, _ := strconv.Atoi(c.runAs.Uid)
		gid, _ := strconv.Atoi(c.runAs.Gid)
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		cmd.Env = append(os.Environ(), "HOME="+c.runAs.HomeDir)
	}
	cmd.Dir = c.opt.Dir
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func (c *Cluster) path(parts ...string) string {
	return filepath.Join(append([]string{c.opt.Dir}, parts...)...)
}

// findBinaries finds initdb and pg_ctl: $CONTACTD_PG_BIN, else the newest
// /usr/lib/postgresql/*/bin, else the PATH.
func findBinaries() (string, error) {
	if dir := os.Getenv("CONTACTD_PG_BIN"); dir != "" {
		return dir, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no PostgreSQL server binaries found (install the postgresql package, or set DATABASE_URL or CONTACTD_PG_BIN)")
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// pickPort chooses a cluster's port (a test takes the first pick itself).
var pickPort = freePort

// freePort is a free loopback port below the kernel's range for ephemeral ports: one found
// free inside it can be taken by any outgoing connection before PostgreSQL binds it, or
// while a test has stopped the cluster to start it again on the same port.
func freePort() (int, error) {
	const low = 10000
	high := 32768 // Linux's default first ephemeral port
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			if first, err := strconv.Atoi(f[0]); err == nil && first > low+100 {
				high = first
			}
		}
	}
	start := rand.IntN(high - low)
	for i := range high - low {
		port := low + (start+i)%(high-low)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, errors.New("no free port below the ephemeral range")
}
