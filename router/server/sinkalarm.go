package server

import (
	"log/slog"
	"sync"
	"time"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

// sinkSummaryEvery is the least time between two log lines about a failing decision sink.
const sinkSummaryEvery = 30 * time.Second

// sinkAlarm turns the decision sink's health events into log lines while failures happen, not only at
// shutdown: one warning when a run of failed writes starts (or lines start being dropped), then at most
// one summary per sinkSummaryEvery while it lasts, and one line when writes succeed again. Its lock is
// taken only on the failure path: a healthy sink never reaches it.
type sinkAlarm struct {
	log   *slog.Logger
	every time.Duration

	mu       sync.Mutex
	failing  bool      // a run of failed writes is under way
	lastDrop time.Time // the last dropped line; a drop after a quiet interval starts a new run
	last     time.Time // the last line logged
	errs     uint64    // failed writes since the last line
	drops    uint64    // dropped lines since the last line
}

func newSinkAlarm(log *slog.Logger, every time.Duration) *sinkAlarm {
	return &sinkAlarm{log: log, every: every}
}

// observe is the decisionlog.WithSinkHealth observer.
func (a *sinkAlarm) observe(ev decisionlog.SinkEvent) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch ev.Kind {
	case decisionlog.SinkWriteFailed:
		if !a.failing {
			a.failing = true
			a.log.Warn("decision sink write failed; decision lines are being lost",
				"error", ev.Err, "dropped_since_last_report", a.drops)
			a.reported(ev.At)
			return
		}
		a.errs++
	case decisionlog.SinkDropped:
		quiet := a.lastDrop.IsZero() || ev.At.Sub(a.lastDrop) >= a.every
		a.lastDrop = ev.At
		if quiet && !a.failing {
			a.log.Warn("decision sink queue full; decision lines are being dropped",
				"failed_writes_since_last_report", a.errs)
			a.reported(ev.At)
			return
		}
		a.drops++
	case decisionlog.SinkRecovered:
		a.failing = false
		a.log.Info("decision sink writing again",
			"failed_writes_since_last_report", a.errs, "dropped_since_last_report", a.drops)
		a.reported(ev.At)
		return
	}
	if ev.At.Sub(a.last) >= a.every {
		a.log.Warn("decision sink still losing lines",
			"failed_writes_since_last_report", a.errs, "dropped_since_last_report", a.drops)
		a.reported(ev.At)
	}
}

func (a *sinkAlarm) reported(at time.Time) {
	a.last, a.errs, a.drops = at, 0, 0
}
