package app

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// logFlushEvery bounds how long a log line waits in memory.
const logFlushEvery = 100 * time.Millisecond

// logWriter buffers the log and writes it out every logFlushEvery and on Close: a busy server
// writes its access log in a few large writes instead of one write system call per request.
// A process killed outright loses at most the last logFlushEvery of lines.
type logWriter struct {
	mu   sync.Mutex
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

func newLogWriter(w io.Writer) *logWriter {
	l := &logWriter{w: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go l.flushEvery(logFlushEvery)
	return l
}

func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *logWriter) flushEvery(d time.Duration) {
	defer close(l.done)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.flush()
		}
	}
}

func (l *logWriter) flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Flush()
}

// Close writes out what is buffered and stops the flushing.
func (l *logWriter) Close() error {
	close(l.stop)
	<-l.done
	return l.flush()
}
