// Package logwriter takes log output off the request path: each Write is copied into a bounded
// buffer and returns at once, and one goroutine writes whatever has accumulated to the real output in
// one call.
//
// Under load, the lines of many requests share one system call instead of each request paying its
// own write (and waiting on the logger's lock while another request writes). At low load a line is
// written as soon as the goroutine wakes, so nothing waits for a timer. Lines keep their order.
//
// A stalled output (a full pipe, a stopped terminal) never stalls a request: once the buffer holds
// its bound, further lines are dropped and counted, and when the output takes writes again the
// buffered lines are followed by one line saying how many were lost after them. What a crash can
// lose is what the buffer held at that moment: the lines written while the goroutine's last write
// was in progress. Close waits for the buffered lines at most CloseWait, so a stalled output delays
// a shutdown by that much, never forever.
package logwriter

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// DefaultMax bounds the buffered bytes: about 4,000 request lines.
const DefaultMax = 1 << 20

// CloseWait bounds how long Close waits for a stalled output.
const CloseWait = 5 * time.Second

// ErrStalled is Close's answer when the output did not take the buffered lines within CloseWait.
var ErrStalled = errors.New("logwriter: the log output did not take the buffered lines")

// maxSpare keeps a burst's large buffer from being held for the process's life.
const maxSpare = 64 << 10

// Writer is an io.Writer for a log handler. Its methods are safe for concurrent use.
type Writer struct {
	out  io.Writer
	max  int
	wake chan struct{} // one pending signal is enough: the goroutine takes everything buffered
	done chan struct{} // closed when the goroutine has written its last bytes

	mu      sync.Mutex
	pending []byte
	dropped int  // lines refused since the last write
	closed  bool // Close began: writes go straight to out
}

// New starts the writer over out. max bounds the buffered bytes; zero or less means DefaultMax.
// Close it to write what is buffered and stop the goroutine.
func New(out io.Writer, max int) *Writer {
	if max <= 0 {
		max = DefaultMax
	}
	w := &Writer{out: out, max: max, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go w.run()
	return w
}

// Write buffers p (a log handler writes one whole line per call) and returns len(p) and no error.
// A line that does not fit the bound is dropped and counted. After Close, p is written to the output
// directly.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		<-w.done // after the buffered lines, in order
		return w.out.Write(p)
	}
	defer w.mu.Unlock() // the signal is sent under the lock: Close closes the channel under it too
	if len(w.pending)+len(p) > w.max {
		w.dropped++
		return len(p), nil
	}
	w.pending = append(w.pending, p...)
	select {
	case w.wake <- struct{}{}:
	default: // a signal is already pending
	}
	return len(p), nil
}

// Close writes what is buffered, stops the goroutine and sends later writes straight to the output
// (each after the buffered lines). It returns once the buffered lines are written, or ErrStalled
// after CloseWait. Calling it again only waits again.
func (w *Writer) Close() error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.wake)
	}
	w.mu.Unlock()
	t := time.NewTimer(CloseWait)
	defer t.Stop()
	select {
	case <-w.done:
		return nil
	case <-t.C:
		return ErrStalled
	}
}

func (w *Writer) run() {
	defer close(w.done)
	var spare []byte
	for range w.wake {
		spare = w.flush(spare)
	}
	w.flush(nil) // what arrived between the last signal and Close
}

// flush swaps the pending bytes for spare, writes them, and returns the emptied buffer for reuse.
func (w *Writer) flush(spare []byte) []byte {
	w.mu.Lock()
	out, dropped := w.pending, w.dropped
	w.pending, w.dropped = spare[:0], 0
	w.mu.Unlock()
	if len(out) > 0 {
		_, _ = w.out.Write(out) // nowhere to report a failing log output but the log itself
	}
	if dropped > 0 { // the lost lines came after the buffered ones
		fmt.Fprintf(w.out, "logwriter: log lines dropped: %d (the log output was not keeping up)\n", dropped)
	}
	if cap(out) > maxSpare {
		return nil
	}
	return out[:0]
}
