package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A clone taken mid-run evolves exactly as the original under the same calls, and calls on the
// clone leave the original untouched.
func TestCloneEvolvesIdenticallyAndIndependently(t *testing.T) {
	p := roundProfile()
	p.Jitter = 0.2
	e := newEngine(t, p)
	for i := range 12 {
		submit(t, e, ms(float64(i)), Request{ID: uint64(i), PromptTokens: 40 + 7*i, MaxTokens: 30 + i, StopAfter: 20 + i})
	}
	e.Advance(t0.Add(ms(25)), nil)
	before := e.Metrics()

	c := e.Clone()
	require.Equal(t, before, c.Metrics())
	// The clone is independent: aborting and submitting on it changes nothing in the original.
	require.True(t, c.Abort(t0.Add(ms(26)), 3))
	submit(t, c, ms(27), Request{ID: 99, PromptTokens: 500, MaxTokens: 40})
	require.Equal(t, before, e.Metrics())

	// A second clone, driven like the original, produces the same events.
	d := e.Clone()
	for _, x := range []*Engine{e, d} {
		submit(t, x, ms(30), Request{ID: 50, PromptTokens: 64, MaxTokens: 16})
	}
	require.Equal(t, drain(t, e), drain(t, d))
	require.Equal(t, e.Metrics(), d.Metrics())
	require.Equal(t, uint64(1), c.Metrics().Success.Abort, "the clone's abort stayed its own")
	require.Zero(t, e.Metrics().Success.Abort)
}
