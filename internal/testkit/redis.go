package testkit

import (
	"fmt"
	"io"
	"net"
	"os/exec"
	"testing"
	"time"
)

// Redis is a private redis-server for one test (scripts/ensure-redis.sh installs it).
type Redis struct {
	URL  string
	Addr string
	cmd  *exec.Cmd
}

// StartRedis starts a redis-server on a free loopback port, without persistence, stopped
// when the test ends.
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not installed (scripts/ensure-redis.sh): %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	r := &Redis{Addr: fmt.Sprintf("127.0.0.1:%d", port), URL: fmt.Sprintf("redis://127.0.0.1:%d/0", port)}
	r.cmd = exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--daemonize", "no", "--loglevel", "warning")
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	// ready when it answers PING with PONG: a listening socket is not enough (a Redis still
	// starting answers -LOADING, and the port might have been taken by another process)
	Eventually(t, "redis-server to answer PING", func() bool { return ping(r.Addr) == nil })
	return r
}

func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
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
