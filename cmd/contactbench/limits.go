package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/gomodule/redigo/redis"
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

// pingRedis is nil once the Redis at socket answers PING (a Redis still loading answers an error).
func pingRedis(socket string) error {
	c, err := redis.Dial("unix", socket, redis.DialConnectTimeout(time.Second), redis.DialReadTimeout(5*time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = redis.String(c.Do("PING"))
	return err
}
