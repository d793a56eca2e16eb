package scrape_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/scrape"
	"github.com/anvil-llm/anvil/router/scheduler"
)

const llama = "meta-llama/Llama-3.1-8B-Instruct"

func present(v float64) scheduler.Metric { return scheduler.Metric{Value: v, Present: true} }

func readPage(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// TestParseVLLMPages runs literal /metrics pages as vLLM (current and legacy) writes
// them through the adapter.
func TestParseVLLMPages(t *testing.T) {
	tests := []struct {
		page  string
		model string
		want  pressure.Sample
	}{
		{
			// Two data-parallel engines: requests add up, KV is the fuller engine.
			page: "current_two_engines.txt", model: llama,
			want: pressure.Sample{Running: present(12), Waiting: present(4), KVUsage: present(0.42)},
		},
		{
			// vLLM < 0.10: no engine label, KV under vllm:gpu_cache_usage_perc.
			page: "legacy.txt", model: llama,
			want: pressure.Sample{Running: present(4), Waiting: present(6), KVUsage: present(0.8125)},
		},
		{
			// vllm:num_requests_waiting_by_reason shares the waiting prefix and is not counted.
			page: "by_reason.txt", model: llama,
			want: pressure.Sample{Running: present(256), Waiting: present(49), KVUsage: present(1)},
		},
		{
			// Other models' series, a model whose name extends ours, an unlabelled series
			// and a legacy KV series next to the current one are all ignored.
			page: "other_models.txt", model: llama,
			want: pressure.Sample{Running: present(1), Waiting: present(0), KVUsage: present(0.015625)},
		},
		{
			page: "other_models.txt", model: "Qwen/Qwen2.5-7B-Instruct",
			want: pressure.Sample{Running: present(90), Waiting: present(300), KVUsage: present(0.99)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.page+"/"+tt.model, func(t *testing.T) {
			got, cl := scrape.Parse(readPage(t, tt.page), tt.model)
			require.Equal(t, pressure.ClassOK, cl)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseNoSeriesForModelIsUnknown(t *testing.T) {
	for _, page := range []string{"current_two_engines.txt", "legacy.txt", "other_models.txt"} {
		t.Run(page, func(t *testing.T) {
			got, cl := scrape.Parse(readPage(t, page), "some-other-model")
			assert.Equal(t, pressure.ClassUnknown, cl)
			assert.Zero(t, got)
		})
	}
	got, cl := scrape.Parse(readPage(t, "legacy.txt"), "")
	assert.Equal(t, pressure.ClassUnknown, cl, "an empty served model matches nothing")
	assert.Zero(t, got)
}

// gauge writes one typed gauge family with the given value lines for llama.
func gauge(name string, values ...string) string {
	var b strings.Builder
	b.WriteString("# TYPE " + name + " gauge\n")
	for i, v := range values {
		b.WriteString(name + `{engine="` + string(rune('0'+i)) + `",model_name="` + llama + `"} ` + v + "\n")
	}
	return b.String()
}

func TestParsePartialSignals(t *testing.T) {
	run, wait, kv := "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"
	tests := []struct {
		name string
		page string
		want pressure.Sample
	}{
		{"requests without KV", gauge(run, "2") + gauge(wait, "3"),
			pressure.Sample{Running: present(2), Waiting: present(3)}},
		{"KV alone", gauge(kv, "0.5"), pressure.Sample{KVUsage: present(0.5)}},
		{"running alone", gauge(run, "1"), pressure.Sample{Running: present(1)}},
		{"untyped family", run + `{model_name="` + llama + `"} 3` + "\n", pressure.Sample{Running: present(3)}},
		{"timestamps ignored", run + `{model_name="` + llama + `"} 3 1700000000000` + "\n", pressure.Sample{Running: present(3)}},
		{"legacy KV only when current absent", gauge("vllm:gpu_cache_usage_perc", "0.25") + gauge(run, "0") + gauge(wait, "0"),
			pressure.Sample{Running: present(0), Waiting: present(0), KVUsage: present(0.25)}},
		{"scientific notation", gauge(run, "1e2") + gauge(kv, "5e-1"),
			pressure.Sample{Running: present(100), KVUsage: present(0.5)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cl := scrape.Parse([]byte(tt.page), llama)
			require.Equal(t, pressure.ClassOK, cl)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseInvalidIsUnknown(t *testing.T) {
	run, wait, kv := "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"
	valid := gauge(wait, "1") + gauge(kv, "0.5")
	tests := []struct {
		name string
		page string
	}{
		{"empty page", ""},
		{"comments only", "# HELP x y\n# just a comment\n"},
		{"syntax error", "vllm:num_requests_running{engine=\"0\" 1 2 three\n"},
		{"bad value", run + " three\n"},
		{"truncated line", run + `{model_name="` + llama},
		{"NaN running", gauge(run, "NaN") + valid},
		{"+Inf running", gauge(run, "+Inf") + valid},
		{"-Inf waiting", gauge(run, "1") + gauge(wait, "-Inf")},
		{"negative running", gauge(run, "-1") + valid},
		{"fractional running", gauge(run, "1.5") + valid},
		{"count above 1e9", gauge(run, "1000000001") + valid},
		{"sum above 1e9", gauge(run, "600000000", "600000000") + valid},
		{"NaN KV", gauge(run, "1") + gauge(wait, "1") + gauge(kv, "NaN")},
		{"KV above 1", gauge(run, "1") + gauge(wait, "1") + gauge(kv, "1.01")},
		{"negative KV", gauge(run, "1") + gauge(wait, "1") + gauge(kv, "-0.1")},
		{"invalid current KV does not fall back", gauge(kv, "2") + gauge("vllm:gpu_cache_usage_perc", "0.5") + gauge(run, "1")},
		{"invalid legacy KV", gauge("vllm:gpu_cache_usage_perc", "Inf") + gauge(run, "1")},
		{"duplicate series", run + `{engine="0",model_name="` + llama + `"} 1` + "\n" +
			run + `{model_name="` + llama + `",engine="0"} 1` + "\n"},
		{"repeated label name", run + `{model_name="` + llama + `",model_name="` + llama + `"} 1` + "\n"},
		{"counter typed running", "# TYPE " + run + " counter\n" + run + `{model_name="` + llama + `"} 1` + "\n"},
		{"histogram typed KV", "# TYPE " + kv + " histogram\n" + kv + `_count{model_name="` + llama + `"} 1` + "\n" + gauge(run, "1")},
		{"duplicate TYPE line", gauge(run, "1") + "# TYPE " + run + " gauge\n"},
		{"binary garbage", "\x00\xff\xfe{}}}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cl := scrape.Parse([]byte(tt.page), llama)
			assert.Equal(t, pressure.ClassUnknown, cl)
			assert.Zero(t, got, "no values survive an unknown page")
		})
	}
}

func TestParseManyEnginesBounded(t *testing.T) {
	var b strings.Builder
	for i := range 65 {
		b.WriteString(`vllm:num_requests_running{engine="e` + strings.Repeat("x", i) + `",model_name="` + llama + `"} 1` + "\n")
	}
	_, cl := scrape.Parse([]byte(b.String()), llama)
	assert.Equal(t, pressure.ClassUnknown, cl)
}

func TestClassString(t *testing.T) {
	assert.Equal(t, "ok", pressure.ClassOK.String())
	assert.Equal(t, "failed", pressure.ClassFailed.String())
	assert.Equal(t, "unknown", pressure.ClassUnknown.String())
	assert.Equal(t, "invalid", pressure.Class(9).String())
}
