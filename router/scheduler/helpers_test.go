package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// t0 carries no monotonic reading; tests pass explicit instants.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func some(v float64) Metric { return Metric{Value: v, Present: true} }

func mustPressure(t testing.TB, f Freshness, ppm int64, has bool, req, kv SignalState) Pressure {
	t.Helper()
	p, err := NewPressure(f, ppm, has, req, kv)
	require.NoError(t, err)
	return p
}

// freshP is fresh pressure carried by the request signal.
func freshP(t testing.TB, ppm int64) Pressure {
	return mustPressure(t, FreshnessFresh, ppm, true, SignalValid, SignalMissing)
}

func classP(t testing.TB, f Freshness) Pressure {
	switch f {
	case FreshnessFresh:
		return freshP(t, 0)
	case FreshnessStale:
		return mustPressure(t, FreshnessStale, 0, false, SignalValid, SignalValid)
	case FreshnessFailed:
		return mustPressure(t, FreshnessFailed, 0, false, SignalMissing, SignalMissing)
	}
	return UnknownPressure()
}

func cand(t testing.TB, id string, eligible bool, active, capacity int64, p Pressure) Candidate {
	t.Helper()
	c, err := NewCandidate(id, eligible, active, capacity, p)
	require.NoError(t, err)
	return c
}

// selected returns the decision's selected member or "" when none.
func selected(d Decision) string {
	id, _ := d.SelectedMemberID()
	return id
}
