package server

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/relay"
)

// The shutdown's two log lines: "shutdown started" says what is in flight (per tier: leases held and
// requests waiting in the admission queue), "shutdown finished" what the front door finished since
// and what the shutdown cut (per tier; tier "-" is a request that ended before it resolved to one).
// A request is cut when the shutdown ended its context past shutdown_grace: an attempt recorded as
// outcome shutdown, or a queued request refused with 503.

// shutdownTally counts the front-door requests that end during a shutdown. Until it is started
// note costs one atomic load.
type shutdownTally struct {
	on            atomic.Bool
	mu            sync.Mutex
	started       time.Time
	finished, cut map[string]int // by tier
}

// start begins the count at now.
func (t *shutdownTally) start(now time.Time) {
	t.mu.Lock()
	t.started, t.finished, t.cut = now, map[string]int{}, map[string]int{}
	t.mu.Unlock()
	t.on.Store(true)
}

// note counts one finished request of tier, if a shutdown is under way. ctx is the request's context.
func (t *shutdownTally) note(ctx context.Context, r decisionlog.Record) {
	if !t.on.Load() {
		return
	}
	tier := r.Tier
	if tier == "" {
		tier = "-"
	}
	cut := r.Outcome == decisionlog.OutcomeShutdown || errors.Is(context.Cause(ctx), relay.ErrShutdown)
	t.mu.Lock()
	defer t.mu.Unlock()
	if cut {
		t.cut[tier]++
	} else {
		t.finished[tier]++
	}
}

// logShutdownStarted writes "shutdown started" with the grace and what is in flight now.
func (s *Server) logShutdownStarted(grace time.Duration) {
	s.ending.start(s.now())
	var active, waiting []slog.Attr
	var totalActive, totalWaiting int64
	for _, sn := range s.current().router.Admission().Snapshots() {
		active = append(active, slog.Int64(sn.ID, sn.Active))
		waiting = append(waiting, slog.Int(sn.ID, sn.Waiting))
		totalActive += sn.Active
		totalWaiting += int64(sn.Waiting)
	}
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "shutdown started",
		slog.Int64("grace_ms", grace.Milliseconds()), slog.Int64("in_flight", totalActive),
		slog.Int64("queued", totalWaiting), slog.Attr{Key: "in_flight_by_tier", Value: slog.GroupValue(active...)},
		slog.Attr{Key: "queued_by_tier", Value: slog.GroupValue(waiting...)})
}

// logShutdownFinished writes "shutdown finished" once every handler has returned.
func (s *Server) logShutdownFinished() {
	t := &s.ending
	t.mu.Lock()
	defer t.mu.Unlock()
	group := func(m map[string]int) (slog.Value, int) {
		attrs, n := make([]slog.Attr, 0, len(m)), 0
		for _, tier := range slices.Sorted(maps.Keys(m)) {
			attrs = append(attrs, slog.Int(tier, m[tier]))
			n += m[tier]
		}
		return slog.GroupValue(attrs...), n
	}
	fin, nFin := group(t.finished)
	cut, nCut := group(t.cut)
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "shutdown finished",
		slog.Int64("duration_ms", s.now().Sub(t.started).Milliseconds()), slog.Int("finished", nFin),
		slog.Int("cut", nCut), slog.Attr{Key: "finished_by_tier", Value: fin}, slog.Attr{Key: "cut_by_tier", Value: cut})
}
