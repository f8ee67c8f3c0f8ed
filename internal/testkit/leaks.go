package testkit

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// Baseline is what the process holds at a quiet moment: its goroutines and its live heap
// (after a collection). A leak check takes one before some requests and asks, after them,
// that the process returns to it: Returned. It counts the whole test process, so it belongs
// in a test that runs alone in its package (not t.Parallel beside others).
type Baseline struct {
	Goroutines int
	Heap       uint64
}

// TakeBaseline measures the process now: its heap as a collection found it live. (HeapAlloc
// read after a collection also counts what the process allocated since it ended: under load,
// tens of megabytes of garbage a moment, more on a faster machine.)
func TakeBaseline() Baseline {
	runtime.GC()
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	return Baseline{Goroutines: runtime.NumGoroutine(), Heap: live[0].Value.Uint64()}
}

// Returned waits until the process is back within slack goroutines and heapSlack bytes of
// live heap of b, and fails the test naming what stayed if it never is. Connections closing
// and pools shrinking take their time: it waits for them, never for a clock.
func (b Baseline) Returned(t testing.TB, slack int, heapSlack uint64) {
	t.Helper()
	end := deadline(t)
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		now := TakeBaseline()
		if now.Goroutines <= b.Goroutines+slack && now.Heap <= b.Heap+heapSlack {
			t.Logf("back to %d goroutines (baseline %d) and %d MB of live heap (baseline %d MB)",
				now.Goroutines, b.Goroutines, now.Heap>>20, b.Heap>>20)
			return
		}
		if time.Now().After(end) {
			buf := make([]byte, 1<<20)
			t.Fatalf("after %v still %d goroutines (baseline %d, slack %d) and %d MB of live heap (baseline %d MB, slack %d MB); goroutines:\n%s",
				Patience, now.Goroutines, b.Goroutines, slack, now.Heap>>20, b.Heap>>20, heapSlack>>20, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(wait)
	}
}
