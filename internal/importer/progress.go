package importer

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress shows how far an import is: on a terminal a bar over the file's bytes with the
// rows, their rate and the time left; otherwise (a log, CI) a plain line every few seconds.
type progress struct {
	done chan struct{}
	wg   sync.WaitGroup
}

// plainEvery is how often a non-terminal gets a progress line (a variable for the tests).
var plainEvery = 5 * time.Second

func newProgress(w io.Writer, terminal bool, total int64, read *atomic.Int64, sum func() Summary) *progress {
	p := &progress{done: make(chan struct{})}
	if w == nil {
		return p
	}
	start := time.Now()
	status := func() (Summary, float64) {
		s := sum()
		return s, float64(s.Rows) / max(time.Since(start).Seconds(), 1e-9)
	}
	var bar *progressbar.ProgressBar
	every := plainEvery
	if terminal {
		bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(w), progressbar.OptionSetWidth(30),
			progressbar.OptionShowBytes(true), progressbar.OptionSetPredictTime(true), progressbar.OptionFullWidth(),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
		every = 200 * time.Millisecond
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				if bar != nil {
					_ = bar.Finish()
				}
				return
			case <-t.C:
			}
			s, rate := status()
			n := read.Load()
			if bar != nil {
				bar.Describe(fmt.Sprintf("%d rows (%.0f/s), %d rejected", s.Rows, rate, s.Rejected))
				_ = bar.Set64(n)
				continue
			}
			eta := "?"
			if n > 0 && n < total {
				eta = (time.Duration(float64(time.Since(start)) * float64(total-n) / float64(n))).Round(time.Second).String()
			}
			fmt.Fprintf(w, "import: %.0f%% of the file, %d rows (%.0f rows/s), %d rejected, about %s left\n",
				100*float64(n)/float64(max(total, 1)), s.Rows, rate, s.Rejected, eta)
		}
	}()
	return p
}

func (p *progress) stop() {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	p.wg.Wait()
}
