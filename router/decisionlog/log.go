package decisionlog

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anvil-llm/anvil/router/ident"
)

// Bounds of a Log's configuration.
const (
	MaxRingSize = 1_000_000
)

// Option configures a Log.
type Option func(*options)

type options struct {
	maxLine    int
	membership map[string]map[string]int64
	queue      int
	health     health
}

// WithMaxLineBytes lowers the sink's line bound (newline excluded), within
// ident.MinLineBytes..MaxLineBytes. A longer line is dropped whole and counted in
// Stats.SinkOversize; it is never truncated mid-JSON. The ring still keeps the record.
func WithMaxLineBytes(n int) Option { return func(o *options) { o.maxLine = n } }

// WithAsyncSink makes the sink asynchronous: Add queues each line (at most queue lines, 1..1000000; 0
// means DefaultQueueLines) and returns at once, and one writer goroutine, started by Start, writes the
// queue to the sink in order. A full queue drops the line and counts it in Stats.SinkDropped. Without
// this option Add writes its line before it returns.
func WithAsyncSink(queue int) Option {
	return func(o *options) {
		o.queue = queue
		if queue == 0 {
			o.queue = DefaultQueueLines
		}
	}
}

// WithSinkHealth reports the sink's health to the shell as it changes. now is the shell's clock (the
// Log reads no clock of its own); observe receives a SinkEvent for every failed write or flush, the
// first successful write after failures, and every line dropped from a full queue. observe runs in the
// goroutine that met the event (the writer goroutine, or a request's Add for drops), so it must be safe
// for concurrent use and must not block; it must not call the Log. Without this option Stats still
// counts every failure, and SinkFailingSince stays zero.
func WithSinkHealth(now func() time.Time, observe func(SinkEvent)) Option {
	return func(o *options) { o.health = health{now: now, observe: observe} }
}

// WithMembership makes Add check replica_scheduler evidence against configured
// membership: tier ID -> member ID -> max_concurrency, for every capacity tier. Evidence
// on a tier absent from the map, or failing ValidateEvidence, is discarded. The map is
// copied by New.
func WithMembership(tiers map[string]map[string]int64) Option {
	return func(o *options) { o.membership = tiers }
}

// Stats are a Log's counters since New. The Sink* counters are the sink's one set of statistics,
// readable while the log runs.
type Stats struct {
	Added             uint64 // records stored in the ring
	Rejected          uint64 // records refused by Add (ErrInvalidRecord)
	IDsReplaced       uint64 // ID fields replaced by InvalidMarker
	EvidenceDiscarded uint64 // malformed or misplaced replica_scheduler values dropped
	SinkLines         uint64 // lines written to the sink in full
	SinkDropped       uint64 // lines dropped because the asynchronous queue was full
	SinkOversize      uint64 // lines dropped for exceeding the line bound
	SinkErrors        uint64 // failed or short sink writes and failed flushes
	SinkShortWrites   uint64 // writes that wrote part of a line (also counted in SinkErrors)
	SinkAfterClose    uint64 // lines not written because Close had been called
	// SinkFailingSince is when the sink's current run of failed writes began, by the clock given to
	// WithSinkHealth; zero while the last write succeeded (or none failed, or no clock was given).
	SinkFailingSince time.Time
}

// Log is a bounded ring of recent records plus an optional JSONL sink. It is safe for
// concurrent use. Formatting happens outside every lock; the ring lock never covers
// I/O; sink writes are serialized, one Write call per line.
type Log struct {
	maxLine    int
	membership map[string]map[string]int64

	mu   sync.Mutex
	ring []Record // grows to size, then wraps at next
	size int
	next int

	sink *sink // nil = none

	added, rejected, idsReplaced, evidenceDiscarded, oversize atomic.Uint64
}

// New returns a Log keeping the ringSize most recent records (1..MaxRingSize) and,
// when sink is not nil, writing each record as one JSON line to it (the server passes
// a file opened for append, with WithAsyncSink). The Log does not own the sink: the
// caller closes it after Close. Errors wrap ErrConfig or ErrInvalidEvidence.
func New(ringSize int, sink io.Writer, opts ...Option) (*Log, error) {
	o := options{maxLine: ident.MaxLineBytes}
	for _, opt := range opts {
		opt(&o)
	}
	if ringSize < 1 || ringSize > MaxRingSize {
		return nil, fmt.Errorf("%w: ring size must be 1-%d", ErrConfig, MaxRingSize)
	}
	if o.maxLine < ident.MinLineBytes || o.maxLine > ident.MaxLineBytes {
		return nil, fmt.Errorf("%w: line bound must be %d-%d", ErrConfig, ident.MinLineBytes, ident.MaxLineBytes)
	}
	if o.queue < 0 || o.queue > MaxRingSize {
		return nil, fmt.Errorf("%w: sink queue must be 1-%d lines", ErrConfig, MaxRingSize)
	}
	membership, err := copyMembership(o.membership)
	if err != nil {
		return nil, err
	}
	l := &Log{
		maxLine:    o.maxLine,
		membership: membership,
		ring:       make([]Record, 0, min(ringSize, 1024)),
		size:       ringSize,
	}
	if sink != nil {
		l.sink = newSink(sink, o.queue, o.health)
	}
	return l, nil
}

func copyMembership(tiers map[string]map[string]int64) (map[string]map[string]int64, error) {
	if tiers == nil {
		return nil, nil
	}
	out := make(map[string]map[string]int64, len(tiers))
	for tier, members := range tiers {
		if !ident.ValidID(tier) {
			return nil, fmt.Errorf("%w: malformed membership", ErrInvalidEvidence)
		}
		if err := checkMembership(members); err != nil {
			return nil, err
		}
		m := make(map[string]int64, len(members))
		for id, c := range members {
			m[id] = c
		}
		out[tier] = m
	}
	return out, nil
}

// Add normalizes r (see Record), stores it and writes it to the sink. It returns an
// error wrapping ErrInvalidRecord, and stores nothing, only when r breaks a record
// invariant; sanitized IDs and discarded evidence are counted, not errors. Sink
// failures are counted in Stats, never returned.
func (l *Log) Add(r Record) error { return l.add(r, l.membership) }

func (l *Log) add(r Record, membership map[string]map[string]int64) error {
	n, err := normalize(r)
	l.idsReplaced.Add(uint64(n.replacedIDs))
	if err != nil {
		l.rejected.Add(1)
		return fmt.Errorf("%w: %w", ErrInvalidRecord, err)
	}
	rec := n.rec
	if rec.ReplicaScheduler != nil && membership != nil {
		members, ok := membership[rec.Tier]
		// normalize already rebuilt the evidence and New checked the membership.
		if !ok || fitsMembership(*rec.ReplicaScheduler, members) != nil {
			rec.ReplicaScheduler = nil
			n.evidenceDiscarded = true
		}
	}
	if n.evidenceDiscarded {
		l.evidenceDiscarded.Add(1)
	}
	var line []byte
	if l.sink != nil {
		line = append(appendJSON(make([]byte, 0, 512), &rec), '\n')
	}
	l.push(rec)
	if line != nil {
		l.write(line)
	}
	return nil
}

func (l *Log) push(r Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ring) < l.size {
		l.ring = append(l.ring, r)
	} else {
		l.ring[l.next] = r
		l.next = (l.next + 1) % l.size
	}
	l.added.Add(1)
}

// write sends one newline-terminated line to the sink, unless it exceeds the line bound: a line is
// dropped whole, never truncated mid-JSON.
func (l *Log) write(line []byte) {
	if len(line)-1 > l.maxLine {
		l.oversize.Add(1)
		return
	}
	l.sink.put(line)
}

// Recent returns copies of the n most recent records, oldest first and newest last;
// fewer when fewer are held, none when n <= 0.
// Records are copied shallowly under the lock and their evidence after it: stored
// evidence is private and never mutated, so a long read does not hold up Add.
func (l *Log) Recent(n int) []Record {
	l.mu.Lock()
	n = min(n, len(l.ring))
	if n <= 0 {
		l.mu.Unlock()
		return nil
	}
	out := make([]Record, n)
	// The oldest record sits at next once the ring has wrapped, at 0 before.
	start := (l.next + len(l.ring) - n) % len(l.ring)
	for i := range out {
		out[i] = l.ring[(start+i)%len(l.ring)]
	}
	l.mu.Unlock()
	for i := range out {
		out[i] = out[i].clone()
	}
	return out
}

// Stats returns the counters. Each is read atomically; together they are not one
// snapshot.
func (l *Log) Stats() Stats {
	st := Stats{
		Added:             l.added.Load(),
		Rejected:          l.rejected.Load(),
		IDsReplaced:       l.idsReplaced.Load(),
		EvidenceDiscarded: l.evidenceDiscarded.Load(),
		SinkOversize:      l.oversize.Load(),
	}
	if s := l.sink; s != nil {
		st.SinkLines, st.SinkDropped, st.SinkErrors = s.lines.Load(), s.dropped.Load(), s.errors.Load()
		st.SinkShortWrites, st.SinkAfterClose = s.short.Load(), s.afterClose.Load()
		if since := s.failingSince.Load(); since != nil {
			st.SinkFailingSince = *since
		}
	}
	return st
}

// Start launches the writer goroutine of an asynchronous sink (see WithAsyncSink); it does nothing
// for a synchronous sink or none, and nothing the second time. Lines added before Start wait in the
// queue.
func (l *Log) Start() {
	if l.sink != nil {
		l.sink.start()
	}
}

// Flush flushes a synchronous sink's own buffering when it has any (a Flush() error
// method); lines are otherwise written as they are added. A failure is counted and
// returned. An asynchronous sink is flushed by Close.
func (l *Log) Flush() error {
	if l.sink == nil {
		return nil
	}
	if err := l.sink.flush(); err != nil {
		return fmt.Errorf("decisionlog: flush sink: %w", err)
	}
	return nil
}

// Close stops writing to the sink, after writing out every queued line and flushing,
// so the caller may close the file; later records still reach the ring and are
// counted in Stats.SinkAfterClose. Close is idempotent.
func (l *Log) Close() error {
	if l.sink == nil {
		return nil
	}
	if err := l.sink.close(); err != nil {
		return fmt.Errorf("decisionlog: flush sink: %w", err)
	}
	return nil
}
