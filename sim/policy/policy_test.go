package policy

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func src(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// m builds an eligible member with the given leases and engine sample.
func m(active int64, running, waiting int64, kv float64) Member {
	return Member{Eligible: true, Active: active, Ceiling: 16,
		Load: Load{Known: true, Running: running, Waiting: waiting, KV: kv}, Completion: Never}
}

func off(x Member) Member { x.Eligible = false; return x }

func aged(x Member, age time.Duration) Member { x.Load.Age = age; return x }

func done(x Member, at time.Duration) Member { x.Completion = at; return x }

// choices runs f many times and returns which indices it chose.
func choices(f Func, ms []Member) map[int]int {
	r := src(1)
	out := map[int]int{}
	for range 400 {
		out[f(ms, r)]++
	}
	return out
}

func TestChoices(t *testing.T) {
	tests := []struct {
		name string
		f    Func
		ms   []Member
		want []int // the set of indices the policy may choose; {-1}: none
	}{
		{"least connections: fewest leases", ChooseLeastConnections, []Member{m(3, 0, 0, 0), m(1, 9, 9, .9), m(2, 0, 0, 0)}, []int{1}},
		{"least connections: ties at random", ChooseLeastConnections, []Member{m(1, 0, 0, 0), m(4, 0, 0, 0), m(1, 0, 0, 0)}, []int{0, 2}},
		{"least connections: ineligible never", ChooseLeastConnections, []Member{off(m(0, 0, 0, 0)), m(5, 0, 0, 0)}, []int{1}},
		{"least connections: none eligible", ChooseLeastConnections, []Member{off(m(0, 0, 0, 0)), off(m(0, 0, 0, 0))}, []int{-1}},
		{"random: every eligible member", ChooseRandom, []Member{m(9, 0, 0, 0), off(m(0, 0, 0, 0)), m(0, 0, 0, 0)}, []int{0, 2}},
		{"random: none eligible", ChooseRandom, []Member{off(m(0, 0, 0, 0)), off(m(0, 0, 0, 0))}, []int{-1}},
		{"power of two: lower reported load of the pair", ChoosePowerOfTwo, []Member{m(0, 8, 4, 0), m(9, 1, 0, 0)}, []int{1}},
		{"power of two: tie goes to the first drawn", ChoosePowerOfTwo, []Member{m(0, 2, 0, 0), m(0, 1, 1, 0)}, []int{0, 1}},
		// With three members the most loaded one never wins a pair.
		{"power of two: the worst never wins", ChoosePowerOfTwo, []Member{m(0, 1, 0, 0), m(0, 2, 0, 0), m(0, 9, 9, 0)}, []int{0, 1}},
		{"power of two: no sample falls back to leases", ChoosePowerOfTwo, []Member{{Eligible: true, Active: 0}, m(0, 3, 0, 0)}, []int{0}},
		{"power of two: one eligible", ChoosePowerOfTwo, []Member{off(m(0, 0, 0, 0)), m(7, 7, 7, 0)}, []int{1}},
		{"queue+kv: shortest queue, same KV", ChooseQueueKV, []Member{m(0, 0, 6, .5), m(0, 0, 2, .5), m(0, 0, 4, .5)}, []int{1}},
		{"queue+kv: KV decides when queues are equal", ChooseQueueKV, []Member{m(0, 0, 3, .9), m(0, 0, 3, .2)}, []int{1}},
		// Queue scores 1 and 0 (weight 2 each) against KV 0.9 and 0.1: 2+0.2 < 0+1.8? no: 2.2 > 1.8.
		{"queue+kv: weighted sum", ChooseQueueKV, []Member{m(0, 0, 0, .9), m(0, 0, 5, .1)}, []int{0}},
		{"queue+kv: equal scores at random", ChooseQueueKV, []Member{m(0, 0, 1, .3), m(9, 9, 1, .3)}, []int{0, 1}},
		{"queue+kv: stale sample is saturated", ChooseQueueKV, []Member{aged(m(0, 0, 0, 0), 3*time.Second), m(0, 0, 9, .8)}, []int{1}},
		{"queue+kv: all stale still places", ChooseQueueKV, []Member{aged(m(0, 0, 0, 0), 3*time.Second), off(m(0, 0, 0, 0))}, []int{0}},
		{"oracle: earliest completion", ChooseOracle, []Member{done(m(0, 0, 0, 0), 3*time.Second), done(m(9, 9, 9, .9), time.Second)}, []int{1}},
		{"oracle: tie to fewer leases", ChooseOracle, []Member{done(m(4, 0, 0, 0), time.Second), done(m(2, 0, 0, 0), time.Second)}, []int{1}},
		{"oracle: never completes still places", ChooseOracle, []Member{off(m(0, 0, 0, 0)), m(3, 0, 0, 0), m(1, 0, 0, 0)}, []int{2}},
		{"oracle: none eligible", ChooseOracle, []Member{off(m(0, 0, 0, 0)), off(m(0, 0, 0, 0))}, []int{-1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := choices(tt.f, tt.ms)
			for i := range got {
				assert.Contains(t, tt.want, i, "chose %d", i)
			}
			if len(tt.want) > 1 {
				assert.Len(t, got, len(tt.want), "every allowed choice is taken sometimes: %v", got)
			}
		})
	}
}

// A random choice is uniform over the eligible members (chi-square-free check: each within 20%).
func TestRandomIsUniform(t *testing.T) {
	ms := []Member{m(0, 0, 0, 0), m(0, 0, 0, 0), off(m(0, 0, 0, 0)), m(0, 0, 0, 0)}
	r := src(3)
	n := map[int]int{}
	for range 30000 {
		n[ChooseRandom(ms, r)]++
	}
	require.Zero(t, n[2])
	for _, i := range []int{0, 1, 3} {
		assert.InDelta(t, 10000, n[i], 2000)
	}
}

// Same seed, same choices.
func TestDeterministic(t *testing.T) {
	ms := []Member{m(1, 2, 3, .1), m(1, 2, 3, .1), m(1, 2, 3, .1), m(1, 2, 3, .1)}
	for _, name := range All() {
		f, ok := Lookup(name)
		if !ok {
			continue
		}
		a, b := src(9), src(9)
		for range 100 {
			require.Equal(t, f(ms, a), f(ms, b), name)
		}
	}
}

func TestParse(t *testing.T) {
	got, err := Parse("all")
	require.NoError(t, err)
	assert.Equal(t, All(), got)
	got, err = Parse("oracle, random")
	require.NoError(t, err)
	assert.Equal(t, []string{Capacity, Oracle, Random}, got, "capacity always first")
	got, err = Parse("random,capacity")
	require.NoError(t, err)
	assert.Equal(t, []string{Capacity, Random}, got)
	_, err = Parse("random,bogus")
	require.ErrorIs(t, err, ErrUnknown)
	assert.NotContains(t, err.Error(), "bogus", "no raw input in the error")
	_, err = Parse("random,random")
	require.ErrorIs(t, err, ErrRepeated)
	for _, n := range All() {
		_, ok := Lookup(n)
		assert.Equal(t, Reference(n), ok, n)
	}
}

// Parse takes a command-line flag: whatever it is given, it returns a list of known, distinct
// policies starting with capacity, or ErrUnknown (or the repeat error) without echoing the input.
const unknownMessage = "policy: unknown policy (want one of capacity, round_robin, least_connections, random, power_of_two, queue_kv, oracle, or all)"

func FuzzParse(f *testing.F) {
	for _, s := range []string{"all", "capacity", "oracle,random", " queue_kv , power_of_two ", "random,random", "", ",", "bogus", "all,oracle"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Parse(s)
		if errors.Is(err, ErrUnknown) {
			require.Equal(t, unknownMessage, err.Error(), "a fixed message, never the input")
			return
		}
		if errors.Is(err, ErrRepeated) {
			name := strings.TrimPrefix(err.Error(), ErrRepeated.Error()+": ")
			require.Contains(t, All(), name, "only a known name is echoed")
			return
		}
		require.NoError(t, err)
		require.NotEmpty(t, got)
		require.Equal(t, Capacity, got[0])
		seen := map[string]bool{}
		for _, n := range got {
			require.Contains(t, All(), n)
			require.False(t, seen[n], "listed twice")
			seen[n] = true
		}
	})
}
