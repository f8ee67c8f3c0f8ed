package app_test

import (
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/contactd/contactd/internal/testkit"
)

// /readyz is open to anyone who reaches the port: a flood of probes costs the database a
// couple of pings a second and leaves nothing behind (each probe once opened a database handle,
// and its goroutine, that it never closed).
func TestReadinessProbesCostNothing(t *testing.T) {
	a := testkit.NewAPI(t) // not parallel: it counts the process's goroutines
	get := func() int {
		resp, err := http.Get(a.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	testkit.Eventually(t, "ready", func() bool { return get() == 200 })
	before, goroutines := a.Store.Pool.Stat().AcquireCount(), runtime.NumGoroutine()
	start := time.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 250 {
				if s := get(); s != 200 {
					t.Errorf("/readyz: %d", s)
					return
				}
			}
		})
	}
	wg.Wait()
	pings := a.Store.Pool.Stat().AcquireCount() - before
	// one check per half second at most, however slow the machine made the 2,000 probes
	if most := 2 + 2*int64(time.Since(start).Seconds()+1); pings > most {
		t.Errorf("2,000 probes in %v took %d database connections, want at most %d", time.Since(start).Round(time.Millisecond), pings, most)
	}
	http.DefaultClient.CloseIdleConnections()
	testkit.Eventually(t, "the probes' goroutines gone", func() bool { return runtime.NumGoroutine() < goroutines+50 })
	t.Logf("2,000 probes in %v: %d database connections acquired", time.Since(start).Round(time.Millisecond), pings)
}
