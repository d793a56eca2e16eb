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

// FuzzParse: Parse never panics, a malformed signal carries no value, accepted values
// are exactly what the normalizer treats as valid signals, and the class is OK exactly
// when some signal is valid and none malformed.
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
		if cl != pressure.ClassOK && cl != pressure.ClassUnknown {
			t.Fatalf("Parse returned class %v; it never fails a collection", cl)
		}
		signals := []scheduler.Metric{s.Running, s.Waiting, s.KVUsage}
		malformed, valid := false, false
		for i, m := range signals {
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
	})
}
