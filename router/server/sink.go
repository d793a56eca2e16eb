package server

import (
	"io"
	"sync"
	"sync/atomic"
)

// sinkQueue bounds the decision lines waiting for the disk. At a few hundred bytes a line this is a few
// MiB at most; past it lines are dropped and counted rather than making requests wait on I/O.
const sinkQueue = 8192

// asyncSink moves decision-log file writes off the request path: Write copies the line into a bounded
// queue and returns at once, one goroutine writes the queue to the file in order. A stalled disk then
// costs dropped (counted) lines, never stalled requests.
type asyncSink struct {
	w       io.Writer
	lines   chan []byte
	done    chan struct{}
	once    sync.Once
	mu      sync.Mutex // guards closed against Write racing Close
	closed  bool
	dropped atomic.Uint64
	failed  atomic.Uint64
}

func newAsyncSink(w io.Writer) *asyncSink {
	a := &asyncSink{w: w, lines: make(chan []byte, sinkQueue), done: make(chan struct{})}
	go a.run()
	return a
}

func (a *asyncSink) run() {
	defer close(a.done)
	for line := range a.lines {
		if _, err := a.w.Write(line); err != nil {
			a.failed.Add(1)
		}
	}
}

// Write queues one line. It never blocks and never fails: an overflowing or closed queue drops the line
// and counts it.
func (a *asyncSink) Write(p []byte) (int, error) {
	line := append([]byte(nil), p...)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		a.dropped.Add(1)
		return len(p), nil
	}
	select {
	case a.lines <- line:
	default:
		a.dropped.Add(1)
	}
	return len(p), nil
}

// Close stops accepting lines and returns when every queued line has been written.
func (a *asyncSink) Close() {
	a.once.Do(func() {
		a.mu.Lock()
		a.closed = true
		close(a.lines)
		a.mu.Unlock()
	})
	<-a.done
}
