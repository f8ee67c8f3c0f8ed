package testkit

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Redis is a private redis-server for one test (scripts/ensure-redis.sh installs it).
type Redis struct {
	URL              string
	bin, dir, socket string
	cmd              *exec.Cmd
}

// StartRedis starts a redis-server on a unix socket of its own directory, without
// persistence, stopped when the test ends. Not a loopback port: one chosen free can be bound
// by another process before Redis binds it, and then another test's Redis answers this one.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not installed (scripts/ensure-redis.sh): %v", err)
	}
	dir, err := os.MkdirTemp("", "redis-") // short: a socket's path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	r := &Redis{bin: bin, dir: dir, socket: filepath.Join(dir, "redis.sock")}
	r.URL = "unix://" + r.socket + "?db=0"
	r.start(t)
	t.Cleanup(r.Stop)
	return r
}

// Restart starts the server again after Stop, at the same socket and empty: a Redis back
// from a crash without persistence.
func (r *Redis) Restart(t testing.TB) {
	t.Helper()
	r.start(t)
}

func (r *Redis) start(t testing.TB) {
	t.Helper()
	r.cmd = exec.Command(r.bin, "--port", "0", "--unixsocket", r.socket, "--unixsocketperm", "700", "--save", "",
		"--appendonly", "no", "--dir", r.dir, "--daemonize", "no", "--loglevel", "warning")
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// ready when it answers PING with PONG: a socket is not enough (a Redis still starting
	// answers -LOADING)
	Eventually(t, "redis-server to answer PING", func() bool { return ping(r.socket) == nil })
}

func ping(socket string) error {
	c, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	answer := make([]byte, 7)
	if _, err := io.ReadFull(c, answer); err != nil {
		return err
	}
	if string(answer) != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", answer)
	}
	return nil
}

// Stop kills the server (a Redis that went away).
func (r *Redis) Stop() {
	if r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
	}
}
