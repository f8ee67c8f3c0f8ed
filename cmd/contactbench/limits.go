package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"time"
)

// The rate limits' price: a second contactd, the same binary over the same database, with
// the rate limits on (so high that no request is refused) and counted in a Redis shared by
// every process, as a cluster counts them (make cluster). Its workloads are the first one's,
// interleaved with the same baselines, so their ratios compare with the first one's.

// limitedProcess is the second contactd and its Redis.
type limitedProcess struct {
	cd    *process
	addr  string
	redis *process
}

func (l *limitedProcess) stop() {
	if l.cd != nil {
		l.cd.stop()
	}
	if l.redis != nil {
		l.redis.stop()
	}
}

// startLimited starts a redis-server on a unix socket in dir and the second contactd.
func startLimited(ctx context.Context, bin, dbURL, dir string) (*limitedProcess, error) {
	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("the rate limits' workloads need redis-server (make redis-deps): %w", err)
	}
	socket := filepath.Join(dir, "redis.sock")
	l := &limitedProcess{}
	if l.redis, err = spawn(redisBin, []string{"--port", "0", "--unixsocket", socket, "--unixsocketperm", "700",
		"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no", "--loglevel", "warning"}); err != nil {
		return nil, err
	}
	// a Redis still starting answers -LOADING: ready when it answers PING with PONG
	for deadline := time.Now().Add(30 * time.Second); pingRedis(socket) != nil; {
		if time.Now().After(deadline) || ctx.Err() != nil {
			l.stop()
			return nil, fmt.Errorf("redis-server did not answer PING: %s", l.redis.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	const never = "1000000000" // per 10 s and per day: counted, never reached
	args := append(serveArgs(dbURL, true), "--rate-reads-per-10s", never, "--rate-writes-per-10s", never,
		"--rate-account-per-day", never, "--redis-url", "unix://"+socket+"?db=0")
	if l.cd, l.addr, err = startContactd(ctx, bin, args); err != nil {
		l.stop()
		return nil, err
	}
	return l, nil
}

func pingRedis(socket string) error {
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
