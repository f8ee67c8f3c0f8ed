package clustertest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/contactd/contactd/internal/testkit"
)

// TestClusterRollingRestart restarts every contactd process one at a time, as a rolling
// upgrade does (SIGTERM, then started again), while writes go through HAProxy, and no request
// fails: a stopping serve tells HAProxy by /readyz and serves on (CONTACTD_SHUTDOWN_DRAIN)
// until HAProxy has taken it out, a stopping worker finishes its attempts. Every write is
// stored and every event delivered. Writes are sent once, without Idempotency-Keys: a retry
// would hide a failure. (A stopping serve must not close its idle connections as its drain
// begins: HAProxy may be sending a request on one, which would get EOF.
// TestSIGTERMDrainsBehindABalancer shows that case.)
func TestClusterRollingRestart(t *testing.T) {
	if os.Getenv("CONTACTD_CLUSTER_TEST") == "" {
		t.Skip("the cluster tests run with CONTACTD_CLUSTER_TEST=1: make test-cluster")
	}
	c := startCluster(t)
	ctx := context.Background()
	rc, cl, url := c.subscribed(t)
	const writers, between = 4, 100 // acknowledged creates before each restart and after the last
	var acked atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				email := fmt.Sprintf("r%d-%d@cluster.example", g, i)
				st, b, _ := cl.do("POST", url+"/public/v1/contact", c.key, map[string]any{"email": email, "tags": []string{"created"}})
				if st != 200 {
					t.Errorf("create %s during the rolling restart: %d %s", email, st, b)
					return
				}
				acked.Add(1)
			}
		}()
	}
	more := func(what string) {
		t.Helper()
		from := acked.Load()
		testkit.Eventually(t, fmt.Sprintf("%d acknowledged creates %s", between, what), func() bool { return acked.Load() >= from+between })
	}
	more("before the first restart")
	for _, node := range []string{"serve1", "serve2", "worker1", "worker2"} {
		c.script("restart", node) // returns once the node is up again
		if strings.HasPrefix(node, "serve") {
			testkit.Eventually(t, "HAProxy reporting "+node+" UP again", func() bool { return c.backendStatus(node) == "UP" })
		}
		more("after restarting " + node)
	}
	stop.Store(true)
	wg.Wait()
	if len(cl.failures) > 0 {
		var lines []string
		for _, f := range cl.failures {
			lines = append(lines, f.what)
		}
		t.Errorf("%d requests failed during the rolling restart:\n%s", len(cl.failures), strings.Join(lines, "\n"))
	}

	conn := c.db(ctx)
	var stored int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM contacts").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != acked.Load() {
		t.Errorf("%d contacts stored for %d acknowledged creates", stored, acked.Load())
	}
	events := tagsAddedEvents(t, conn)
	rc.waitDelivered(t, conn, events)
	got, dups, _ := rc.summary()
	t.Logf("rolling restart of serve1, serve2, worker1, worker2 under %d writers: %d creates acknowledged, none failed; %d events, %d deliveries received, %d duplicates",
		writers, acked.Load(), len(events), got, dups)
}
