package decisionlog

import (
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultQueueLines bounds the lines an asynchronous sink holds for the disk. At a few hundred bytes a
// line this is a few MiB at most; past it lines are dropped and counted rather than making requests
// wait on I/O.
const DefaultQueueLines = 8192

// sink writes the log's JSONL lines to one io.Writer, either in the caller's goroutine (synchronous,
// what the simulator and tests use) or from a bounded queue drained by one writer goroutine
// (asynchronous, what the server uses: a stalled disk then costs dropped, counted lines, never stalled
// requests). Either way lines reach the writer in order, one Write call per line, and a short or failed
// write never tears the next line: it starts on a fresh line.
type sink struct {
	w      io.Writer
	queue  chan []byte // nil: synchronous
	health health
	// failingSince is set at the first failed write of a run and cleared by the next success. Only the
	// writer side stores it; a successful write costs one atomic load.
	failingSince atomic.Pointer[time.Time]

	mu      sync.Mutex // serializes synchronous writes; guards closed and started
	closed  bool
	started bool
	partial bool          // the last write was short: start the next one on a fresh line (writer side)
	done    chan struct{} // closed when the writer goroutine has drained the queue

	lines, dropped, afterClose, errors, short atomic.Uint64
}

func newSink(w io.Writer, queue int, h health) *sink {
	s := &sink{w: w, done: make(chan struct{}), health: h}
	if queue > 0 {
		s.queue = make(chan []byte, queue)
	}
	return s
}

// start launches the writer goroutine of an asynchronous sink, once.
func (s *sink) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queue == nil || s.started || s.closed {
		return
	}
	s.started = true
	go func() {
		defer close(s.done)
		for line := range s.queue {
			s.writeLine(line)
		}
	}()
}

// put hands one newline-terminated line to the sink. It never blocks on a full queue.
func (s *sink) put(line []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		s.afterClose.Add(1)
	case s.queue == nil:
		s.writeLine(line)
	default:
		select {
		case s.queue <- line:
		default:
			s.dropped.Add(1)
			s.health.report(SinkEvent{Kind: SinkDropped})
		}
	}
}

// writeLine writes one line, serialized by the caller (the sink lock, or the one writer goroutine).
func (s *sink) writeLine(line []byte) {
	if s.partial {
		line = append([]byte{'\n'}, line...)
	}
	n, err := s.w.Write(line)
	switch {
	case n == len(line):
		s.partial = false
	case n > 0:
		s.partial = true
		s.short.Add(1)
	}
	if err != nil || n != len(line) {
		s.errors.Add(1)
		s.failed(err)
		return
	}
	s.lines.Add(1)
	if s.failingSince.Load() != nil {
		s.failingSince.Store(nil)
		s.health.report(SinkEvent{Kind: SinkRecovered})
	}
}

// failed notes a failed write or flush: the start of a failing run, when it is one, and the event.
func (s *sink) failed(err error) {
	if err == nil {
		err = io.ErrShortWrite
	}
	ev := SinkEvent{Kind: SinkWriteFailed, At: s.health.at(), Err: err}
	if !ev.At.IsZero() && s.failingSince.Load() == nil {
		at := ev.At
		s.failingSince.Store(&at)
	}
	s.health.report(ev)
}

// flusher is the buffering a sink's writer may have (bufio.Writer has it).
type flusher interface{ Flush() error }

// flush flushes the writer's own buffering of a synchronous sink. An asynchronous sink is flushed by
// close, after its queue has drained.
func (s *sink) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.queue != nil {
		return nil
	}
	return s.flushWriter()
}

func (s *sink) flushWriter() error {
	f, ok := s.w.(flusher)
	if !ok {
		return nil
	}
	if err := f.Flush(); err != nil {
		s.errors.Add(1)
		s.failed(err)
		return err
	}
	return nil
}

// close stops accepting lines, writes out what is queued (waiting for the writer goroutine, or writing
// the queue itself when it never started) and flushes. It is idempotent.
func (s *sink) close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.queue != nil {
		close(s.queue)
	}
	started := s.started
	s.mu.Unlock()
	if started {
		<-s.done
	} else if s.queue != nil {
		for line := range s.queue {
			s.writeLine(line)
		}
	}
	return s.flushWriter()
}
