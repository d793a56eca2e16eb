package adapter_test

import (
	"math"
	"testing"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/adapter"
	"github.com/anvil-llm/anvil/router/pressure/scrape"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// fuzzAdapter seeds with the engine's fixtures and a few hand-made traps and checks, on any page
// and model, what FuzzParse checks for vLLM: no panic (the adapters return no errors, so no raw
// value or label can leak through one), a malformed signal carries no value, an accepted value is
// a valid count or fraction, and the class is OK exactly when some signal is valid and none is
// malformed. Work is bounded by the page: the adapters walk each family once.
func fuzzAdapter(f *testing.F, engine string, seeds ...string) {
	a, err := adapter.For(engine)
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range enginePages[engine] {
		f.Add(readPage(f, p), llama)
		f.Add(readPage(f, p), triton)
	}
	for _, s := range seeds {
		f.Add([]byte(s), triton)
	}
	f.Fuzz(func(t *testing.T, body []byte, model string) {
		s, cl := scrape.ParseWith(a, body, model)
		checkSample(t, s, cl)
	})
}

func checkSample(t *testing.T, s pressure.Sample, cl pressure.Class) {
	t.Helper()
	malformed, valid := false, false
	for i, m := range []scheduler.Metric{s.Running, s.Waiting, s.KVUsage} {
		switch {
		case m.Malformed:
			if m != scheduler.MalformedMetric() {
				t.Fatalf("a malformed signal carries a value: %+v", m)
			}
			malformed = true
		case !m.Present:
			if m.Value != 0 {
				t.Fatal("absent metric carries a value")
			}
		case i < 2 && (!(m.Value >= 0 && m.Value <= scheduler.MaxRequestCount) || math.Trunc(m.Value) != m.Value):
			t.Fatalf("invalid count accepted: %v", m.Value)
		case i == 2 && !(m.Value >= 0 && m.Value <= 1):
			t.Fatalf("invalid KV accepted: %v", m.Value)
		default:
			valid = true
		}
	}
	if want := valid && !malformed; (cl == pressure.ClassOK) != want {
		t.Fatalf("class %v for a sample with valid=%t malformed=%t", cl, valid, malformed)
	}
}

func FuzzSGLang(f *testing.F) {
	fuzzAdapter(f, adapter.SGLang,
		"sglang:num_running_reqs{model_name=\"tensorrt_llm\",dp_rank=\"0\",tp_rank=\"0\"} 3\n"+
			"sglang:num_running_reqs{model_name=\"tensorrt_llm\",dp_rank=\"0\",tp_rank=\"1\"} 1e300\n",
		"sglang:token_usage{model_name=\"tensorrt_llm\"} -0\n")
}

func FuzzTRTLLM(f *testing.F) {
	fuzzAdapter(f, adapter.TRTLLM,
		reqs("1 scheduled 3", "1 active 2", "2 waiting 1")+kv("1 used 5", "1 max 0", "2 fraction NaN"),
		reqs("1 scheduled 999999999", "2 scheduled 999999999"))
}

func FuzzLlamaCpp(f *testing.F) {
	fuzzAdapter(f, adapter.LlamaCpp,
		gauge("llamacpp:requests_processing", "+Inf")+gauge("llamacpp:kv_cache_usage_ratio", "0.5"),
		"llamacpp:requests_deferred{a=\"1\"} 1\nllamacpp:requests_deferred{a=\"2\"} 2\n")
}

func FuzzTGI(f *testing.F) {
	fuzzAdapter(f, adapter.TGI,
		gauge("tgi_batch_current_max_tokens", "1e308")+gauge("tgi_batch_max_total_tokens", "1e-308"),
		gauge("tgi_queue_size", "3")+"tgi_batch_current_size{x=\"\"} 2\n")
}
