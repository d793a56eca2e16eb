package admission

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/scheduler"
)

func TestRoundRobinDistribution(t *testing.T) {
	for _, n := range []int{2, 5, 16} {
		t.Run(memberIDs(n)[n-1], func(t *testing.T) {
			ceilings := make([]int64, n) // no member ceilings
			tier := newTierT(t, replicaSpec("r", StrategyRoundRobin, 0, ceilings...))
			ids := memberIDs(n)
			ready := allReady(ids...)
			counts := map[string]int{}
			for k := range 3 * n {
				l, err := acquire(tier, ready, nil)
				require.NoError(t, err)
				assert.Equal(t, ids[k%n], l.Member(), "strict rotation in sorted order")
				_, ok := l.Decision()
				assert.False(t, ok, "round robin carries no decision")
				counts[l.Member()]++
				require.True(t, l.Release())
			}
			for _, id := range ids {
				assert.Equal(t, 3, counts[id], id)
			}
		})
	}
}

func TestRoundRobinSkips(t *testing.T) {
	ids := memberIDs(4)
	tests := []struct {
		name      string
		ceilings  []int64
		ready     map[string]bool
		quiesce   []string
		hold      []string // members to fill with one lease each first (all ready)
		cursorAt  int      // the cursor after the holds
		want      []string // successive picks
		wantFinal error
	}{
		{
			name:  "not ready and absent members",
			ready: map[string]bool{"m00": true, "m01": false, "m03": true},
			want:  []string{"m00", "m03", "m00", "m03"},
		},
		{
			name:    "quiesced member",
			ready:   allReady(ids...),
			quiesce: []string{"m01", "m02"},
			want:    []string{"m00", "m03", "m00"},
		},
		{
			name:     "full member",
			ceilings: []int64{1, 0, 2, 0},
			ready:    allReady(ids...),
			hold:     []string{"m00"},
			cursorAt: 1,
			want:     []string{"m01", "m02", "m03", "m01", "m02", "m03", "m01", "m03"},
		},
		{
			name:      "every member full",
			ceilings:  []int64{1, 1, 1, 1},
			ready:     allReady(ids...),
			want:      []string{"m00", "m01", "m02", "m03"},
			wantFinal: ErrExhausted,
		},
		{
			name:      "nothing ready",
			ready:     map[string]bool{"m00": false},
			wantFinal: ErrExhausted,
		},
		{
			name:      "nil readiness",
			wantFinal: ErrExhausted,
		},
		{
			name:      "every member quiesced",
			ready:     allReady(ids...),
			quiesce:   ids,
			wantFinal: ErrQuiesced,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ceilings := tt.ceilings
			if ceilings == nil {
				ceilings = make([]int64, len(ids))
			}
			tier := newTierT(t, replicaSpec("r", StrategyRoundRobin, 0, ceilings...))
			for _, id := range tt.hold {
				mustAcquire(t, tier, map[string]bool{id: true}, nil, id)
			}
			for _, id := range tt.quiesce {
				require.NoError(t, tier.QuiesceMember(id, "test"))
			}
			require.Equal(t, tt.cursorAt, tier.Snapshot().Cursor)
			for _, want := range tt.want {
				mustAcquire(t, tier, tt.ready, nil, want)
			}
			if tt.wantFinal != nil {
				before := tier.Snapshot()
				l, err := acquire(tier, tt.ready, nil)
				assert.Nil(t, l)
				assert.ErrorIs(t, err, tt.wantFinal)
				assert.Equal(t, before, tier.Snapshot(), "a refusal changes nothing")
			}
			checkInvariants(t, tier.Snapshot())
		})
	}
}

func TestRoundRobinCursorAdvancesPastSelection(t *testing.T) {
	tier := newTierT(t, replicaSpec("r", StrategyRoundRobin, 0, 0, 0, 0, 0))
	// Only m02 ready: the cursor jumps to 3, so m03 is next once all are ready.
	mustAcquire(t, tier, map[string]bool{"m02": true}, nil, "m02")
	assert.Equal(t, 3, tier.Snapshot().Cursor)
	mustAcquire(t, tier, allReady(memberIDs(4)...), nil, "m03")
	assert.Equal(t, 0, tier.Snapshot().Cursor, "wraps around")
}

func TestRoundRobinTierCeiling(t *testing.T) {
	tier := newTierT(t, replicaSpec("r", StrategyRoundRobin, 3, 0, 0))
	ready := allReady("m00", "m01")
	for range 3 {
		_, err := acquire(tier, ready, nil)
		require.NoError(t, err)
	}
	before := tier.Snapshot()
	_, err := acquire(tier, ready, nil)
	assert.ErrorIs(t, err, ErrExhausted)
	assert.Equal(t, before, tier.Snapshot())
	checkInvariants(t, before)
}

func TestRoundRobinValidatesPressureButIgnoresIt(t *testing.T) {
	tier := newTierT(t, replicaSpec("r", StrategyRoundRobin, 0, 0, 0))
	ready := allReady("m00", "m01")
	// A low pressure on m01 does not move round robin off m00.
	p := map[string]scheduler.Pressure{"m00": fresh(t, 900000), "m01": fresh(t, 0)}
	mustAcquire(t, tier, ready, p, "m00")
	_, err := acquire(tier, ready, map[string]scheduler.Pressure{"ghost": fresh(t, 0)})
	assert.ErrorIs(t, err, ErrInvalidSnapshot)
}
