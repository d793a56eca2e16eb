package server

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBudget(t *testing.T) {
	b, h := newBudget(10), &holder{}
	assert.Equal(t, budgetOK, b.take(h, 0))
	assert.Equal(t, budgetOK, b.take(h, 10))
	assert.Equal(t, budgetExhausted, b.take(h, 1), "full")
	b.give(h, 4)
	assert.Equal(t, budgetExhausted, b.take(h, 5))
	assert.Equal(t, budgetOK, b.take(h, 4))
	b.give(h, 10)
	assert.Zero(t, b.inUse())
	assert.Zero(t, h.held())
}

// TestBudgetCallerShare: a caller at its share is refused while another caller still fits; a
// refusal of the whole budget reserves nothing in the caller's share either.
func TestBudgetCallerShare(t *testing.T) {
	b, a, o := newBudget(10), &holder{}, &holder{}
	b.setLimits(10, 6)
	require.Equal(t, budgetOK, b.take(a, 6))
	assert.Equal(t, budgetCallerShare, b.take(a, 1), "a holds its share")
	assert.Equal(t, budgetOK, b.take(o, 4), "another caller fits")
	assert.Equal(t, budgetExhausted, b.take(o, 1))
	assert.Equal(t, int64(4), o.held(), "the refused take left nothing behind")
	b.setLimits(10, 0) // the share switched off: a's bytes still count
	b.give(o, 4)
	assert.Equal(t, budgetOK, b.take(a, 4))
	assert.Equal(t, int64(10), a.held())
	b.give(a, 10)
	assert.Zero(t, b.inUse())
}

func TestCallerShare(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		limit, pct, body, share int64
		callers                 int
	}{
		{"quarter of 64 MiB", 64 << 20, 25, 1 << 20, 16 << 20, 2},
		{"off", 64 << 20, 0, 1 << 20, 0, 5},
		{"one caller: nobody to share with", 64 << 20, 25, 1 << 20, 0, 1},
		{"never below one largest body", 6144, 25, 4096, 4096, 3},
		{"never above the budget", 100, 100, 10, 100, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.share, callerShare(tc.limit, tc.pct, tc.body, tc.callers))
		})
	}
}

// TestBudgetShareProperty: over any sequence of takes, gives and bound changes by several callers, no
// count is ever negative, a caller never holds more than the share in force when it took, the total
// never exceeds the limit in force when it took, and every give returns exactly what its take took.
// The sequences are drawn from fixed seeds (pgregory.net/rapid would add its image encoders to this
// test binary, which BenchmarkHostileBodiesRSS re-executes as the router: its resident memory is the
// figure that bench reports).
func TestBudgetShareProperty(t *testing.T) {
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 26))
		limit := rng.Int64N(1000) + 1
		share := rng.Int64N(limit + 1)
		b := newBudget(limit)
		b.setLimits(limit, share)
		hs := []*holder{{}, {}, {}}
		held := [][]int64{nil, nil, nil} // what each caller took and has not given back
		for range rng.IntN(100) + 1 {
			i := rng.IntN(len(hs))
			switch rng.IntN(3) {
			case 0:
				n := rng.Int64N(limit + 1)
				before := hs[i].held()
				if b.take(hs[i], n) == budgetOK {
					held[i] = append(held[i], n)
					if share > 0 {
						require.LessOrEqual(t, before+n, share, "seed %d: within the share", seed)
					}
					require.LessOrEqual(t, b.inUse(), limit, "seed %d: within the limit", seed)
				} else {
					require.Equal(t, before, hs[i].held(), "seed %d: a refusal takes nothing", seed)
				}
			case 1:
				if len(held[i]) > 0 {
					b.give(hs[i], held[i][0])
					held[i] = held[i][1:]
				}
			case 2:
				limit = rng.Int64N(1000) + 1
				share = rng.Int64N(limit + 1)
				b.setLimits(limit, share)
			}
			total := int64(0)
			for j, h := range hs {
				sum := int64(0)
				for _, n := range held[j] {
					sum += n
				}
				require.Equal(t, sum, h.held(), "seed %d: caller %d holds what it took", seed, j)
				require.GreaterOrEqual(t, h.held(), int64(0))
				total += sum
			}
			require.Equal(t, total, b.inUse(), "seed %d", seed)
		}
	}
}

// TestBudgetNeverOverCommits: concurrent takers never hold more than the limit together, nor one
// caller more than its share, and everything comes back.
func TestBudgetNeverOverCommits(t *testing.T) {
	b := newBudget(100)
	b.setLimits(100, 40)
	hs := []*holder{{}, {}, {}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	peak, peakCaller := int64(0), int64(0)
	for g := range 8 {
		h := hs[g%len(hs)]
		wg.Go(func() {
			for i := range 2000 {
				n := int64((g*31+i)%40 + 1)
				if b.take(h, n) != budgetOK {
					continue
				}
				mu.Lock()
				peak, peakCaller = max(peak, b.inUse()), max(peakCaller, h.held())
				mu.Unlock()
				b.give(h, n)
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, peak, int64(100))
	assert.LessOrEqual(t, peakCaller, int64(40))
	assert.Zero(t, b.inUse())
	for _, h := range hs {
		assert.Zero(t, h.held())
	}
}
