package scrape_test

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/scrape"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// FuzzParse: Parse never panics, only ClassOK carries values, and accepted values
// are exactly what the normalizer treats as valid signals.
func FuzzParse(f *testing.F) {
	pages, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, llama)
	}
	f.Add([]byte(gauge("vllm:num_requests_running", "NaN")), llama)
	f.Add([]byte(gauge("vllm:kv_cache_usage_perc", "0.5", "0.7")), llama)
	f.Add([]byte(`{"vllm:num_requests_running",model_name="m"} 1`+"\n"), "m")
	f.Add([]byte("vllm:num_requests_running{model_name=\"m\"} 1e9\n"), "m")
	f.Fuzz(func(t *testing.T, body []byte, model string) {
		s, cl := scrape.Parse(body, model)
		if cl != pressure.ClassOK {
			if cl != pressure.ClassUnknown {
				t.Fatalf("Parse returned class %v; it never fails a collection", cl)
			}
			if s != (pressure.Sample{}) {
				t.Fatalf("non-OK class carries values: %+v", s)
			}
			return
		}
		if !s.Running.Present && !s.Waiting.Present && !s.KVUsage.Present {
			t.Fatal("ClassOK without any signal")
		}
		for _, m := range []scheduler.Metric{s.Running, s.Waiting} {
			if m.Present && (!(m.Value >= 0 && m.Value <= scheduler.MaxRequestCount) || math.Trunc(m.Value) != m.Value) {
				t.Fatalf("invalid count accepted: %v", m.Value)
			}
			if !m.Present && m.Value != 0 {
				t.Fatal("absent metric carries a value")
			}
		}
		if kv := s.KVUsage; kv.Present && !(kv.Value >= 0 && kv.Value <= 1) {
			t.Fatalf("invalid KV accepted: %v", kv.Value)
		}
	})
}
