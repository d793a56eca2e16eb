package enginepage_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/internal/enginepage"
	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/adapter"
	"github.com/anvil-llm/anvil/router/scheduler"
)

func v(x float64) scheduler.Metric { return scheduler.Metric{Value: x, Present: true} }

// TestAdaptersReadThePages: every page this package renders (current and legacy names) reads back
// through the router's adapter of its engine to the engine model's exact state; a signal the page
// does not carry is missing, never zero.
func TestAdaptersReadThePages(t *testing.T) {
	full := pressure.Sample{Running: v(3), Waiting: v(2), KVUsage: v(0.3)}
	noKV := pressure.Sample{Running: v(3), Waiting: v(2)}
	want := map[string][2]pressure.Sample{ // current, legacy
		enginepage.VLLM:     {full, full},
		enginepage.SGLang:   {full, full},
		enginepage.TRTLLM:   {full, full},
		enginepage.LlamaCpp: {noKV, full},
		enginepage.TGI:      {full, noKV},
	}
	require.Equal(t, adapter.Engines(), enginepage.Engines(), "the pages speak every engine the router reads")
	for _, e := range enginepage.Engines() {
		read, err := adapter.For(e)
		require.NoError(t, err)
		for i, legacy := range []bool{false, true} {
			p, err := enginepage.New(enginepage.Options{Engine: e, Model: llama, BlockSize: 16, MaxNumSeqs: 64, Legacy: legacy})
			require.NoError(t, err)
			p.Set(busy)
			got := read(p.Families(), llama)
			assert.Equal(t, want[e][i], got, "%s legacy=%v", e, legacy)
			assert.Equal(t, pressure.ClassOK, adapter.Classify(got))
		}
	}
}

// TestAdaptersRefuseOtherPages: a page of another engine, or of another model on an engine whose
// page names its model, carries no signal: unknown, never a made-up zero.
func TestAdaptersRefuseOtherPages(t *testing.T) {
	for _, e := range enginepage.Engines() {
		read, err := adapter.For(e)
		require.NoError(t, err)
		for _, other := range enginepage.Engines() {
			if other == e {
				continue
			}
			p, err := enginepage.New(enginepage.Options{Engine: other, Model: llama, BlockSize: 16, MaxNumSeqs: 64})
			require.NoError(t, err)
			p.Set(busy)
			got := read(p.Families(), llama)
			assert.Equal(t, pressure.Sample{}, got, "%s reading %s's page", e, other)
			assert.Equal(t, pressure.ClassUnknown, adapter.Classify(got))
		}
		if e == enginepage.LlamaCpp || e == enginepage.TGI {
			continue // their pages name no model: the readiness check vouches for it
		}
		p, err := enginepage.New(enginepage.Options{Engine: e, Model: "another-model", BlockSize: 16, MaxNumSeqs: 64})
		require.NoError(t, err)
		p.Set(busy)
		assert.Equal(t, pressure.ClassUnknown, adapter.Classify(read(p.Families(), llama)), "%s: another model only", e)
	}
}

// BenchmarkAdapterOfPage is the simulator's per-scrape work: refresh a page, read it.
func BenchmarkAdapterOfPage(b *testing.B) {
	for _, e := range enginepage.Engines() {
		b.Run(e, func(b *testing.B) {
			read, _ := adapter.For(e)
			p, _ := enginepage.New(enginepage.Options{Engine: e, Model: llama, BlockSize: 16, MaxNumSeqs: 64})
			b.ReportAllocs()
			for b.Loop() {
				p.Set(busy)
				_ = read(p.Families(), llama)
			}
		})
	}
}

// TestTGIPrintsItsRequestSeriesFromTheFirstRequest: TGI's exporter prints a series only once it is
// set, so before its first request a TGI member's page has only the warmup's token budget, and its
// pressure is unknown (never an idle zero); every other engine prints its zeros from the start.
func TestTGIPrintsItsRequestSeriesFromTheFirstRequest(t *testing.T) {
	for _, e := range enginepage.Engines() {
		read, err := adapter.For(e)
		require.NoError(t, err)
		p, err := enginepage.New(enginepage.Options{Engine: e, Model: llama, BlockSize: 16, MaxNumSeqs: 64})
		require.NoError(t, err)
		p.Set(engine.Metrics{TotalBlocks: 4000})
		got := read(p.Families(), llama)
		if e != enginepage.TGI {
			assert.Equal(t, v(0), got.Running, e)
			continue
		}
		var names []string
		for _, mf := range p.Gather() {
			names = append(names, mf.GetName())
		}
		assert.Equal(t, []string{"tgi_batch_max_total_tokens"}, names)
		assert.Len(t, p.Families(), 1)
		assert.Equal(t, pressure.ClassUnknown, adapter.Classify(got))
		p.Set(engine.Metrics{TotalBlocks: 4000, Submitted: 1, Running: 1, UsedBlocks: 40})
		assert.Equal(t, pressure.Sample{Running: v(1), Waiting: v(0), KVUsage: v(0.01)}, read(p.Families(), llama))
	}
}

// TestTritonEnsemblePageNamesItsBackend: a page for a served ensemble or BLS step labels its
// nv_trt_llm_* series tensorrt_llm, the backend model those steps run on, as Triton does; the
// router's adapter reads the served step's pressure through its fallback. Any other served model
// runs the backend itself and labels the series with its own name.
func TestTritonEnsemblePageNamesItsBackend(t *testing.T) {
	read, err := adapter.For(enginepage.TRTLLM)
	require.NoError(t, err)
	for served, label := range map[string]string{"ensemble": "tensorrt_llm", "tensorrt_llm_bls": "tensorrt_llm",
		"tensorrt_llm": "tensorrt_llm", llama: llama} {
		p, err := enginepage.New(enginepage.Options{Engine: enginepage.TRTLLM, Model: served, BlockSize: 16, MaxNumSeqs: 64})
		require.NoError(t, err)
		p.Set(busy)
		for _, mf := range p.Families() {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "model" {
						assert.Equal(t, label, l.GetValue(), "%s: %s", served, mf.GetName())
					}
				}
			}
		}
		assert.Equal(t, pressure.Sample{Running: v(3), Waiting: v(2), KVUsage: v(0.3)}, read(p.Families(), served), served)
	}
}
