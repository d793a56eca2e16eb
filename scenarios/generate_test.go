package scenarios

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestStreamsAreSeededAndIndependent(t *testing.T) {
	a, b := NewStreams(42), NewStreams(42)
	for range 10 {
		assert.Equal(t, a.Arrivals.Uint64(), b.Arrivals.Uint64())
	}
	// Extra draws in one stream never shift another.
	c, d := NewStreams(42), NewStreams(42)
	for range 1000 {
		c.Faults.Uint64()
	}
	for range 10 {
		assert.Equal(t, c.Lengths.Uint64(), d.Lengths.Uint64())
		assert.Equal(t, c.Jitter.Uint64(), d.Jitter.Uint64())
	}
	// Engine seeds have their own stream: drawing them never shifts the scrape jitter.
	f, g := NewStreams(42), NewStreams(42)
	for range 16 {
		f.Engines.Uint64()
	}
	assert.Equal(t, g.Jitter.Uint64(), f.Jitter.Uint64())
	// Streams of one seed differ from each other, and seeds differ.
	e := NewStreams(42)
	first := []uint64{e.Arrivals.Uint64(), e.Lengths.Uint64(), e.Faults.Uint64(), e.Jitter.Uint64(), e.Engines.Uint64()}
	slices.Sort(first)
	assert.Len(t, slices.Compact(first), 5, "five distinct streams")
	assert.NotEqual(t, NewStreams(1).Arrivals.Uint64(), NewStreams(2).Arrivals.Uint64())
}

func TestDistSampleStaysInBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lo := rapid.Float64Range(1, 1000).Draw(t, "min")
		hi := lo + rapid.Float64Range(0, 5000).Draw(t, "span")
		lo, hi = math.Floor(lo), math.Floor(hi)
		kind := rapid.SampledFrom([]string{DistUniform, DistLognormal, DistNormal}).Draw(t, "dist")
		d := Dist{Dist: kind, Min: lo, Max: hi}
		switch kind {
		case DistLognormal:
			d.Median, d.Sigma = rapid.Float64Range(1, 10000).Draw(t, "median"), rapid.Float64Range(0.01, 5).Draw(t, "sigma")
		case DistNormal:
			d.Mean, d.StdDev = rapid.Float64Range(1, 10000).Draw(t, "mean"), rapid.Float64Range(0.01, 5000).Draw(t, "sd")
		}
		require.NoError(t, d.validate("d"))
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))
		for range 100 {
			v := d.Sample(r)
			require.GreaterOrEqual(t, float64(v), lo)
			require.LessOrEqual(t, float64(v), hi)
		}
	})
}

func TestDistMeans(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []Dist{
		{Dist: DistConstant, Value: 77},
		{Dist: DistUniform, Min: 10, Max: 30},
		{Dist: DistLognormal, Median: 100, Sigma: 0.5, Min: 1, Max: 1e6},
		{Dist: DistNormal, Mean: 500, StdDev: 50, Min: 1, Max: 1e6},
	}
	for _, d := range cases {
		t.Run(d.Dist, func(t *testing.T) {
			var sum float64
			const n = 50000
			for range n {
				sum += float64(d.Sample(r))
			}
			assert.InEpsilon(t, d.Expected(), sum/n, 0.02)
		})
	}
}

func TestArrivalProcesses(t *testing.T) {
	cases := []struct {
		open   Open
		wantCV float64
	}{
		{Open{Process: ProcessConstant, Rate: 4}, 0},
		{Open{Process: ProcessPoisson, Rate: 4}, 1},
		{Open{Process: ProcessGamma, Rate: 4, Shape: 0.25}, 2}, // CV = 1/sqrt(k)
		{Open{Process: ProcessGamma, Rate: 4, Shape: 4}, 0.5},
	}
	for _, c := range cases {
		t.Run(c.open.Process, func(t *testing.T) {
			r := rand.New(rand.NewPCG(9, 9))
			const n = 100000
			var sum, sq float64
			for range n {
				g := c.open.Gap(r)
				require.Positive(t, g)
				s := g.Seconds()
				sum += s
				sq += s * s
			}
			mean := sum / n
			cv := math.Sqrt(sq/n-mean*mean) / mean
			assert.InEpsilon(t, 1/c.open.Rate, mean, 0.03)
			assert.InDelta(t, c.wantCV, cv, 0.06)
		})
	}
}

func TestGeneratorDrawsAlignedRolls(t *testing.T) {
	sc, err := Parse([]byte(minimal))
	require.NoError(t, err)
	sc.Workload.Cancel = &Cancel{Share: 1, AfterMin: time.Second, AfterMax: 2 * time.Second}
	g := NewGenerator(sc.Workload, NewStreams(5))
	for range 100 {
		sh := g.Next()
		assert.Equal(t, 16, sh.Prompt)
		assert.Equal(t, 8, sh.Output)
		assert.True(t, sh.Stream)
		assert.GreaterOrEqual(t, sh.CancelAfter, time.Second)
		assert.LessOrEqual(t, sh.CancelAfter, 2*time.Second)
		for _, roll := range []float64{sh.ErrorRoll, sh.CutRoll, sh.CutFrac} {
			assert.GreaterOrEqual(t, roll, 0.0)
			assert.Less(t, roll, 1.0)
		}
	}
	// Cancellation settings change no roll: the fault stream advances by the same draws.
	plain := sc.Workload
	plain.Cancel = nil
	with, without := NewGenerator(sc.Workload, NewStreams(5)), NewGenerator(plain, NewStreams(5))
	for range 10 {
		x, y := with.Next(), without.Next()
		assert.Equal(t, y.ErrorRoll, x.ErrorRoll)
		assert.Equal(t, y.CutRoll, x.CutRoll)
		assert.Equal(t, y.Prompt, x.Prompt)
		assert.Zero(t, y.CancelAfter)
	}
}
