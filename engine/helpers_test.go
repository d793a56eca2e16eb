package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// roundProfile has round costs so step times are easy to compute by hand.
func roundProfile() Profile {
	return Profile{
		Name:                "round",
		StepBase:            time.Millisecond,
		PrefillPerToken:     10 * time.Microsecond,
		DecodePerSeq:        100 * time.Microsecond,
		ContextPerToken:     time.Microsecond,
		MaxNumSeqs:          4,
		MaxNumBatchedTokens: 256,
		NumGPUBlocks:        65,
		BlockSize:           16,
	}
}

func newEngine(t testing.TB, p Profile) *Engine {
	t.Helper()
	e, err := New(p, t0, 1)
	require.NoError(t, err)
	return e
}

func submit(t testing.TB, e *Engine, at time.Duration, r Request) {
	t.Helper()
	require.NoError(t, e.Submit(t0.Add(at), r))
}

// drain advances step by step until the engine is idle and returns every
// event, checking that events never go back in time.
func drain(t testing.TB, e *Engine) []Event {
	t.Helper()
	var all []Event
	for i := 0; ; i++ {
		require.Less(t, i, 1_000_000, "engine never went idle")
		at, ok := e.NextEventAt()
		if !ok {
			break
		}
		all = e.Advance(at, all)
	}
	for i := 1; i < len(all); i++ {
		require.False(t, all[i].At.Before(all[i-1].At), "events out of time order at %d", i)
	}
	return all
}

func only(evs []Event, id uint64, kinds ...EventKind) []Event {
	var out []Event
	for _, ev := range evs {
		if ev.ID != id {
			continue
		}
		for _, k := range kinds {
			if ev.Kind == k {
				out = append(out, ev)
			}
		}
	}
	return out
}

func firstOf(t testing.TB, evs []Event, id uint64, k EventKind) Event {
	t.Helper()
	got := only(evs, id, k)
	require.NotEmpty(t, got, "no %v event for %d", k, id)
	return got[0]
}

// tb is what both *testing.T and *rapid.T offer to require.
type tb interface {
	require.TestingT
	Helper()
}

// checkConsistent verifies the engine's internal bookkeeping.
func checkConsistent(t tb, e *Engine) {
	t.Helper()
	used := 0
	live := 0
	for i := range e.slots {
		s := &e.slots[i]
		if s.state == stateFree {
			continue
		}
		live++
		used += int(s.blocks)
		require.LessOrEqual(t, s.computed, s.prompt+s.generated, "computed beyond context")
		require.LessOrEqual(t, s.computed+s.sched, s.capTokens, "scheduled tokens without KV")
		require.Equal(t, int(s.blocks)*e.p.BlockSize, int(s.capTokens))
		if s.state == stateWaiting {
			require.Zero(t, s.blocks, "waiting request holds KV blocks")
		}
	}
	require.Equal(t, used, e.used, "block accounting")
	require.Equal(t, live, len(e.ids), "id index")
	require.Equal(t, live, len(e.running)+e.waiting.len(), "running + waiting")
	require.LessOrEqual(t, len(e.running), e.p.MaxNumSeqs)
	require.LessOrEqual(t, e.used, e.usable)
	for _, idx := range e.running {
		require.Equal(t, stateRunning, e.slots[idx].state)
	}
	require.LessOrEqual(t, e.batchLen, len(e.running))
	for i, idx := range e.running {
		require.Equal(t, i < e.batchLen && e.inFlight, e.slots[idx].sched > 0, "the batch is a prefix of running")
	}
	for i := 0; i < e.waiting.len(); i++ {
		require.Equal(t, stateWaiting, e.slots[e.waiting.at(i)].state)
	}
}
