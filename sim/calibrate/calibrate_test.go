package calibrate_test

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/internal/ceiling"
	"github.com/anvil-llm/anvil/internal/figure"
	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim/calibrate"
)

func uniform(lo, hi float64) scenarios.Dist {
	return scenarios.Dist{Dist: scenarios.DistUniform, Min: lo, Max: hi}
}

// tinyOptions sweeps the tiny profile (8 sequences, a 64-block KV pool) with requests small enough
// that 8 of them always fit the KV pool: max_num_seqs is the engine's only limit.
func tinyOptions() calibrate.Options {
	return calibrate.Options{
		Profile:      engine.TinyProfile(),
		Workload:     scenarios.Workload{Closed: &scenarios.Closed{Clients: 1}, PromptTokens: uniform(16, 48), OutputTokens: uniform(24, 40)},
		WorkloadName: "test",
		Seed:         7,
	}
}

// The knee is where the engine stops taking more sequences: max_num_seqs, derived from the profile
// (8 requests of at most 48+7+40 tokens hold 48 of the 64 KV blocks, so KV never binds first).
func TestKneeIsMaxNumSeqsWhenKVDoesNotBind(t *testing.T) {
	o := tinyOptions()
	p := o.Profile
	perRequest := (48 + 7 + 40 + p.BlockSize - 1) / p.BlockSize
	require.LessOrEqual(t, p.MaxNumSeqs*perRequest, p.NumGPUBlocks-1, "the premise: the KV pool holds max_num_seqs requests")
	r, err := calibrate.Run(o)
	require.NoError(t, err)
	assert.Equal(t, p.MaxNumSeqs, r.Recommendation.Knee)
	assert.Equal(t, p.MaxNumSeqs, r.Recommendation.MaxConcurrency, "no SLO: the knee is recommended")
	for i, pt := range r.Points {
		assert.True(t, pt.Stable, "ceiling %d held until stable", pt.Ceiling)
		if i > 0 && pt.Ceiling <= p.MaxNumSeqs {
			assert.Greater(t, pt.Throughput, r.Points[i-1].Throughput, "each slot up to max_num_seqs adds throughput")
		}
	}
	// Past max_num_seqs requests wait inside the engine: TTFT p99 jumps, throughput does not.
	var atKnee, past ceiling.Point
	for _, pt := range r.Points {
		switch pt.Ceiling {
		case p.MaxNumSeqs:
			atKnee = pt
		case p.MaxNumSeqs + 2:
			past = pt
		}
	}
	assert.Greater(t, past.TTFTP99, 3*atKnee.TTFTP99)
	assert.InEpsilon(t, atKnee.Throughput, past.Throughput, 0.05)
}

// An SLO tighter than the knee's latency brings the recommendation down to its limit.
func TestSLOLowersTheRecommendation(t *testing.T) {
	o := tinyOptions()
	r, err := calibrate.Run(o)
	require.NoError(t, err)
	itl := r.Points[2].TPOTP99 // the third ceiling's TPOT p99 is the target: ceilings 1-3 meet it
	o.SLO = ceiling.SLO{TPOT: time.Duration(math.Ceil(itl * float64(time.Millisecond)))}
	r, err = calibrate.Run(o)
	require.NoError(t, err)
	assert.Equal(t, ceiling.ReasonSLO, r.Recommendation.Reason)
	assert.GreaterOrEqual(t, r.Recommendation.MaxConcurrency, 3)
	assert.Less(t, r.Recommendation.MaxConcurrency, r.Recommendation.Knee)
	assert.LessOrEqual(t, r.Points[len(r.Points)-1].Goodput, r.Points[len(r.Points)-1].Requests)
}

func render(t *testing.T, r *calibrate.Report) [3][]byte {
	t.Helper()
	var out [3]bytes.Buffer
	require.NoError(t, r.Text(&out[0]))
	require.NoError(t, r.Markdown(&out[1]))
	require.NoError(t, r.JSON(&out[2]))
	return [3][]byte{out[0].Bytes(), out[1].Bytes(), out[2].Bytes()}
}

// Same options, same bytes, in every format; another seed draws other lengths.
func TestDeterministic(t *testing.T) {
	o := tinyOptions()
	o.Profile.Jitter = 0.1 // the engine's seeded jitter too
	o.SLO = ceiling.SLO{TTFT: 5 * time.Millisecond}
	a, err := calibrate.Run(o)
	require.NoError(t, err)
	b, err := calibrate.Run(o)
	require.NoError(t, err)
	assert.Equal(t, render(t, a), render(t, b))
	o.Seed++
	c, err := calibrate.Run(o)
	require.NoError(t, err)
	assert.NotEqual(t, render(t, a)[2], render(t, c)[2])
	txt := string(render(t, a)[0])
	assert.Contains(t, txt, "Recommended max_concurrency:")
	assert.Contains(t, txt, "SLO ttft=5ms")
}

func TestFigureWrites(t *testing.T) {
	r, err := calibrate.Run(tinyOptions())
	require.NoError(t, err)
	f, err := r.Figure()
	require.NoError(t, err)
	assert.Equal(t, "tiny-calibration", f.Name)
	for _, format := range []string{figure.PNG, figure.SVG} {
		var b bytes.Buffer
		require.NoError(t, f.WriteTo(&b, format))
		assert.NotEmpty(t, b.Bytes())
	}
}

func TestDefaults(t *testing.T) {
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, calibrate.DefaultCeilings(engine.TinyProfile()))
	h := calibrate.DefaultCeilings(engine.DefaultProfile())
	assert.Equal(t, 1, h[0])
	assert.Contains(t, h, 256, "max_num_seqs is always swept")
	assert.Equal(t, 320, h[len(h)-1])
	assert.Len(t, h, 41)
}

func TestInvalidOptions(t *testing.T) {
	for name, change := range map[string]func(*calibrate.Options){
		"descending ceilings": func(o *calibrate.Options) { o.Ceilings = []int{2, 1} },
		"zero ceiling":        func(o *calibrate.Options) { o.Ceilings = []int{0} },
		"empty ceilings":      func(o *calibrate.Options) { o.Ceilings = []int{} },
		"window":              func(o *calibrate.Options) { o.Window = time.Microsecond },
		"windows":             func(o *calibrate.Options) { o.MaxWindows = 2 },
		"tolerance":           func(o *calibrate.Options) { o.Tolerance = 1 },
		"knee share":          func(o *calibrate.Options) { o.KneeShare = 1.5 },
		"too long for the model": func(o *calibrate.Options) {
			o.Workload.PromptTokens = scenarios.Dist{Dist: scenarios.DistConstant, Value: 1000}
		},
		"no loop": func(o *calibrate.Options) { o.Workload.Closed = nil },
		"profile": func(o *calibrate.Options) { o.Profile.MaxNumSeqs = 0 },
	} {
		t.Run(name, func(t *testing.T) {
			o := tinyOptions()
			change(&o)
			_, err := calibrate.Run(o)
			require.ErrorIs(t, err, calibrate.ErrInvalid)
		})
	}
}

// A step in which no request ended has no latency sample: its figures are NaN (null in JSON, "-"
// in the table) and it does not meet the SLO, so nothing is recommended on no evidence.
func TestAStepWithoutSamplesDoesNotMeetTheSLO(t *testing.T) {
	o := tinyOptions()
	o.Workload.OutputTokens = scenarios.Dist{Dist: scenarios.DistConstant, Value: 150}
	o.Ceilings, o.Window, o.MaxWindows = []int{1, 2}, 10*time.Millisecond, 3
	o.SLO = ceiling.SLO{TTFT: time.Hour, TPOT: time.Hour}
	r, err := calibrate.Run(o)
	require.NoError(t, err)
	for _, pt := range r.Points {
		assert.Zero(t, pt.Samples, "no request of 150 tokens ends within 30 ms")
		assert.True(t, math.IsNaN(pt.TTFTP99) && math.IsNaN(pt.TPOTP99))
		assert.False(t, o.SLO.Met(pt))
	}
	assert.Zero(t, r.Recommendation.MaxConcurrency)
	assert.Equal(t, ceiling.ReasonNoSLO, r.Recommendation.Reason)
	out := render(t, r)
	assert.Contains(t, string(out[2]), `"ttft_p99_ms": null`)
	assert.Contains(t, string(out[0]), "broken")
}
