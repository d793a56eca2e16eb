package adapter_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/adapter"
	"github.com/anvil-llm/anvil/router/pressure/scrape"
	"github.com/anvil-llm/anvil/router/scheduler"
)

const (
	llama  = "meta-llama/Llama-3.1-8B-Instruct"
	triton = "tensorrt_llm" // the Triton model that runs the TensorRT-LLM backend in the fixtures
)

func present(v float64) scheduler.Metric { return scheduler.Metric{Value: v, Present: true} }

var missing scheduler.Metric

func readPage(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// tb is what read needs of a test: *testing.T, *testing.B and *rapid.T all have it.
type tb interface {
	require.TestingT
	Helper()
}

// read parses a page as the scrape shell does and hands it to the engine's adapter.
func read(t tb, engine string, page []byte, model string) (pressure.Sample, pressure.Class) {
	t.Helper()
	a, err := adapter.For(engine)
	require.NoError(t, err)
	return scrape.ParseWith(a, page, model)
}

// TestEngineFixtures runs each engine's real pages (testdata, see each file's header) through
// scrape.ParseWith to the exact normalized fields.
func TestEngineFixtures(t *testing.T) {
	tests := []struct {
		engine, page, model string
		want                pressure.Sample
	}{
		// Two data-parallel groups: requests add up, KV is the fuller group.
		{adapter.SGLang, "sglang_current_dp2.txt", llama,
			pressure.Sample{Running: present(12), Waiting: present(2), KVUsage: present(0.61)}},
		// Two tensor-parallel ranks of one group repeat its counts: counted once.
		{adapter.SGLang, "sglang_all_schedulers_tp2.txt", llama,
			pressure.Sample{Running: present(5), Waiting: present(1), KVUsage: present(0.33)}},
		// SGLang 0.4: model_name is the only label.
		{adapter.SGLang, "sglang_v0_4.txt", llama,
			pressure.Sample{Running: present(162), Waiting: present(2826), KVUsage: present(0.28)}},
		// SGLang 0.3, its first names: the served model is the label name.
		{adapter.SGLang, "sglang_v0_3.txt", llama,
			pressure.Sample{Running: present(7), Waiting: present(3), KVUsage: present(0.41)}},
		// Two versions: scheduled and waiting add up, KV is the fuller version's own fraction.
		{adapter.TRTLLM, "trtllm_current.txt", triton,
			pressure.Sample{Running: present(11), Waiting: present(4), KVUsage: present(0.679436)}},
		// No "waiting" and no "fraction": waiting is active - scheduled, KV is used/max blocks.
		{adapter.TRTLLM, "trtllm_2024.txt", triton,
			pressure.Sample{Running: present(16), Waiting: present(4), KVUsage: present(0.75)}},
		// Current llama-server prints no KV figure: missing, not zero.
		{adapter.LlamaCpp, "llamacpp_current.txt", llama,
			pressure.Sample{Running: present(4), Waiting: present(2), KVUsage: missing}},
		{adapter.LlamaCpp, "llamacpp_2024.txt", llama,
			pressure.Sample{Running: present(2), Waiting: present(0), KVUsage: present(0.4375)}},
		// 23040 reserved tokens of a 65536-token budget.
		{adapter.TGI, "tgi_3.txt", llama,
			pressure.Sample{Running: present(14), Waiting: present(3), KVUsage: present(0.3515625)}},
		// Before TGI 2.3.1 the page has no budget: KV missing.
		{adapter.TGI, "tgi_2_3.txt", llama,
			pressure.Sample{Running: present(14), Waiting: present(3), KVUsage: missing}},
	}
	for _, tt := range tests {
		t.Run(tt.page, func(t *testing.T) {
			got, cl := read(t, tt.engine, readPage(t, tt.page), tt.model)
			require.Equal(t, pressure.ClassOK, cl)
			assert.Equal(t, tt.want, got)
		})
	}
}

// enginePages are each engine's fixtures; the vLLM ones are the scrape shell's.
var enginePages = map[string][]string{
	adapter.VLLM: {"../../scrape/testdata/current_two_engines.txt", "../../scrape/testdata/legacy.txt",
		"../../scrape/testdata/by_reason.txt", "../../scrape/testdata/other_models.txt"},
	adapter.SGLang:   {"sglang_current_dp2.txt", "sglang_all_schedulers_tp2.txt", "sglang_v0_4.txt", "sglang_v0_3.txt"},
	adapter.TRTLLM:   {"trtllm_current.txt", "trtllm_2024.txt"},
	adapter.LlamaCpp: {"llamacpp_current.txt", "llamacpp_2024.txt"},
	adapter.TGI:      {"tgi_3.txt", "tgi_2_3.txt"},
}

// TestWrongEnginePageIsUnknown reads every engine's pages with every other engine's adapter,
// under the page's own model: no signal at all, never a made-up zero.
func TestWrongEnginePageIsUnknown(t *testing.T) {
	for pageEngine, pages := range enginePages {
		for _, readAs := range adapter.Engines() {
			if readAs == pageEngine {
				continue
			}
			for _, page := range pages {
				for _, model := range []string{llama, triton} {
					t.Run(readAs+"/"+filepath.Base(page)+"/"+model, func(t *testing.T) {
						got, cl := read(t, readAs, readPage(t, page), model)
						assert.Equal(t, pressure.ClassUnknown, cl)
						assert.Equal(t, pressure.Sample{}, got)
					})
				}
			}
		}
	}
}

// TestOtherModelOnlyIsUnknown: engines that label their series with the model ignore another
// model's series, so a page of another model only carries no signal.
func TestOtherModelOnlyIsUnknown(t *testing.T) {
	tests := []struct{ engine, page, model string }{
		{adapter.SGLang, "sglang_current_dp2.txt", "Qwen/Qwen2.5-7B-Instruct"},
		{adapter.SGLang, "sglang_v0_4.txt", "meta-llama/Llama-3.1-8B"}, // a prefix of the page's
		{adapter.SGLang, "sglang_all_schedulers_tp2.txt", llama + "-AWQ"},
		{adapter.SGLang, "sglang_v0_3.txt", "Qwen/Qwen2.5-7B-Instruct"},
	}
	for _, tt := range tests {
		t.Run(tt.page+"/"+tt.model, func(t *testing.T) {
			got, cl := read(t, tt.engine, readPage(t, tt.page), tt.model)
			assert.Equal(t, pressure.ClassUnknown, cl)
			assert.Equal(t, pressure.Sample{}, got)
		})
	}
	// A model that is not one of Triton's TensorRT-LLM steps (a vLLM-backend model beside an
	// unrelated tensorrt_llm model on one Triton) never borrows tensorrt_llm's pressure.
	for _, page := range []string{"trtllm_current.txt", "trtllm_2024.txt"} {
		for _, served := range []string{"llama_vllm", "preprocessing", "Ensemble", "ensemble_2"} {
			got, cl := read(t, adapter.TRTLLM, readPage(t, page), served)
			assert.Equal(t, pressure.ClassUnknown, cl, page+"/"+served)
			assert.Equal(t, pressure.Sample{}, got, page+"/"+served)
		}
	}
	// A Triton page whose nv_trt_llm_* series name another repository's engine model (neither the
	// served model nor the conventional tensorrt_llm backend) carries no signal for the ensemble.
	for _, page := range []string{"trtllm_current.txt", "trtllm_2024.txt"} {
		other := bytes.ReplaceAll(readPage(t, page), []byte(`model="tensorrt_llm"`), []byte(`model="llama_70b_engine"`))
		got, cl := read(t, adapter.TRTLLM, other, "ensemble")
		assert.Equal(t, pressure.ClassUnknown, cl, page)
		assert.Equal(t, pressure.Sample{}, got, page)
	}
}

// TestTritonEnsembleReadsItsBackend: a tier serving Triton's ensemble (or BLS) model reads the
// tensorrt_llm backend model's executor, the one its requests run on, exactly as a tier that
// serves tensorrt_llm itself does; only those step names borrow it.
func TestTritonEnsembleReadsItsBackend(t *testing.T) {
	for _, tt := range []struct{ page, served string }{
		{"trtllm_current.txt", "ensemble"},
		{"trtllm_2024.txt", "tensorrt_llm_bls"},
	} {
		page := readPage(t, tt.page)
		want, wantClass := read(t, adapter.TRTLLM, page, "tensorrt_llm")
		require.Equal(t, pressure.ClassOK, wantClass)
		got, cl := read(t, adapter.TRTLLM, page, tt.served)
		assert.Equal(t, pressure.ClassOK, cl, tt.page)
		assert.Equal(t, want, got, tt.page)
	}
}

// TestUnlabelledEnginesTakeThePageAsTheServedModels: llama.cpp and TGI name no model on the page,
// so any served model reads the same figures (readiness verified the model; nothing here can).
func TestUnlabelledEnginesTakeThePageAsTheServedModels(t *testing.T) {
	for engine, page := range map[string]string{adapter.LlamaCpp: "llamacpp_2024.txt", adapter.TGI: "tgi_3.txt"} {
		a, _ := read(t, engine, readPage(t, page), llama)
		b, cl := read(t, engine, readPage(t, page), "/models/qwen2.5-7b-instruct-q4_k_m.gguf")
		assert.Equal(t, pressure.ClassOK, cl)
		assert.Equal(t, a, b)
	}
}
