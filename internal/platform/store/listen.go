package store

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Follower keeps in-process state (a cache) in step with changes that any process announces
// with NOTIFY on its channel.
type Follower interface {
	// Channel is the NOTIFY channel the follower hears.
	Channel() string
	// Notified receives each payload sent on Channel.
	Notified(payload string)
	// Listening says whether notifications are being heard: true once the listener is
	// connected, false as soon as it is not. While false a follower must not trust what it
	// remembers, since changes may go unheard.
	Listening(up bool)
}

// Listen holds one connection LISTENing on the followers' channels until ctx ends,
// reconnecting with backoff when it is lost: the backoff grows while connecting fails and
// starts over once a connection listened, so a process whose database was away for a while
// is not slow to hear again after its next lost connection. Run it in its own goroutine;
// followers stay in the not-listening state until it connects.
func Listen(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger, followers ...Follower) {
	byChannel := make(map[string][]Follower, len(followers))
	for _, f := range followers {
		byChannel[f.Channel()] = append(byChannel[f.Channel()], f)
	}
	setListening := func(up bool) {
		for _, f := range followers {
			f.Listening(up)
		}
	}
	const firstBackoff = 100 * time.Millisecond
	backoff := firstBackoff
	for ctx.Err() == nil {
		listened, err := listen(ctx, pool, byChannel, setListening)
		setListening(false)
		if listened {
			backoff = firstBackoff
		}
		if ctx.Err() != nil {
			return
		}
		log.Warn("caches off: notification listener lost", slog.Any("error", err), slog.Duration("retry_in", backoff))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// listen listens until its connection is lost; listened says whether it got as far as
// listening.
func listen(ctx context.Context, pool *pgxpool.Pool, byChannel map[string][]Follower, setListening func(bool)) (listened bool, err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	// the connection is the listener's for good: never handed back to the pool.
	raw := conn.Hijack()
	defer raw.Close(context.Background())
	stmts := make([]string, 0, len(byChannel))
	for ch := range byChannel {
		stmts = append(stmts, "LISTEN "+ch)
	}
	if _, err := raw.Exec(ctx, strings.Join(stmts, "; ")); err != nil {
		return false, err
	}
	setListening(true)
	for {
		n, err := raw.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		for _, f := range byChannel[n.Channel] {
			f.Notified(n.Payload)
		}
	}
}
