package store_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/contactd/contactd/internal/platform/store"
	"github.com/contactd/contactd/internal/testkit"
)

// listenRecorder is a Follower that reports each change of its listening state.
type listenRecorder struct{ ups chan bool }

func (r listenRecorder) Channel() string   { return "contactd_test_listen" }
func (r listenRecorder) Notified(string)   {}
func (r listenRecorder) Listening(up bool) { r.ups <- up }

// retries is a slog.Handler that keeps the retry_in of each lost-listener record.
type retries struct {
	mu  sync.Mutex
	got []time.Duration
}

func (h *retries) Enabled(context.Context, slog.Level) bool { return true }
func (h *retries) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *retries) WithGroup(string) slog.Handler            { return h }
func (h *retries) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "retry_in" {
			h.mu.Lock()
			h.got = append(h.got, a.Value.Duration())
			h.mu.Unlock()
		}
		return true
	})
	return nil
}

// A listener that lost its connection after listening retries after the first backoff, not
// after the one its earlier failures had grown to: its backoff never started over, so a process
// whose database had been away for a while (a failover) kept its caches off for up to 10 s
// after each later lost connection.
func TestTheListenersBackoffStartsOverOnceItListened(t *testing.T) {
	t.Parallel()
	st := testkit.NewStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	rec := listenRecorder{ups: make(chan bool, 16)}
	logged := &retries{}
	done := make(chan struct{})
	go func() {
		store.Listen(ctx, testkit.Pool(st), slog.New(logged), rec)
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
	await := func(want bool) {
		t.Helper()
		select {
		case up := <-rec.ups:
			if up != want {
				t.Fatalf("listening %v, want %v", up, want)
			}
		case <-time.After(time.Minute):
			t.Fatalf("never listening %v", want)
		}
	}
	await(true)
	const losses = 3
	for range losses {
		tag, err := testkit.Pool(st).Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'LISTEN contactd_test_listen%' AND pid <> pg_backend_pid()`)
		if err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("terminating the listener's connection: %v, %d rows", err, tag.RowsAffected())
		}
		await(false)
		await(true)
	}
	logged.mu.Lock()
	defer logged.mu.Unlock()
	if want := slices.Repeat([]time.Duration{100 * time.Millisecond}, losses); !slices.Equal(logged.got, want) {
		t.Errorf("retried after %v, want %v", logged.got, want)
	}
}
