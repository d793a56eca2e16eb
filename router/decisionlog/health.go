package decisionlog

import "time"

// SinkEventKind says what happened to the sink.
type SinkEventKind uint8

// Sink events.
const (
	// SinkWriteFailed: a write (or flush) failed or was short; the line is lost. Stats.SinkErrors counts
	// it, and Stats.SinkFailingSince holds when the current run of failures began.
	SinkWriteFailed SinkEventKind = iota
	// SinkRecovered: a write succeeded after failures; the failing run is over.
	SinkRecovered
	// SinkDropped: the asynchronous queue was full and a line was dropped (Stats.SinkDropped).
	SinkDropped
)

func (k SinkEventKind) String() string {
	switch k {
	case SinkWriteFailed:
		return "write_failed"
	case SinkRecovered:
		return "recovered"
	case SinkDropped:
		return "dropped"
	}
	return "invalid"
}

// SinkEvent is one change in the sink's health, for the shell to log (see WithSinkHealth).
type SinkEvent struct {
	Kind SinkEventKind
	At   time.Time // by the shell's clock
	Err  error     // the write or flush error, for SinkWriteFailed
}

// health is the shell's clock and observer; the zero value reads no clock and reports nothing.
type health struct {
	now     func() time.Time
	observe func(SinkEvent)
}

// at reads the shell's clock, or returns the zero time without one.
func (h health) at() time.Time {
	if h.now == nil {
		return time.Time{}
	}
	return h.now()
}

func (h health) report(ev SinkEvent) {
	if h.observe == nil {
		return
	}
	if ev.At.IsZero() {
		ev.At = h.at()
	}
	h.observe(ev)
}
