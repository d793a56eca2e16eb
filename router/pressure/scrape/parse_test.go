package scrape_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestParseUnreadablePagesCarryNothing: a page that does not parse has no signal at all,
// so every signal is missing (not invalid: nothing could be read).
func TestParseUnreadablePagesCarryNothing(t *testing.T) {
	run := "vllm:num_requests_running"
	tests := []struct {
		name string
		page string
	}{
		{"empty page", ""},
		{"comments only", "# HELP x y\n# just a comment\n"},
		{"syntax error", "vllm:num_requests_running{engine=\"0\" 1 2 three\n"},
		{"bad value", run + " three\n"},
		{"truncated line", run + `{model_name="` + llama},
		{"duplicate TYPE line", gauge(run, "1") + "# TYPE " + run + " gauge\n"},
		{"binary garbage", "\x00\xff\xfe{}}}"},
		{"repeated label name", run + `{model_name="` + llama + `",model_name="` + llama + `"} 1` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cl := scrape.Parse([]byte(tt.page), llama)
			assert.Equal(t, pressure.ClassUnknown, cl)
			assert.Zero(t, got, "an unreadable page carries no signal")
		})
	}
}

// TestParseMalformedSignalsAreInvalid: a page that parses but holds a malformed pressure series is
// unknown, and the sample marks exactly that signal malformed (no raw value kept), keeping the other
// signals as read, so the normalized pressure says "invalid" where the page was wrong and "missing"
// only where it was silent.
func TestParseMalformedSignalsAreInvalid(t *testing.T) {
	run, wait, kv := "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"
	bad := scheduler.MalformedMetric()
	valid := gauge(wait, "1") + gauge(kv, "0.5")
	validRest := pressure.Sample{Waiting: present(1), KVUsage: present(0.5)}
	withRunning := func(m scheduler.Metric) pressure.Sample { s := validRest; s.Running = m; return s }
	tests := []struct {
		name string
		page string
		want pressure.Sample
	}{
		{"NaN running", gauge(run, "NaN") + valid, withRunning(bad)},
		{"+Inf running", gauge(run, "+Inf") + valid, withRunning(bad)},
		{"-Inf waiting", gauge(run, "1") + gauge(wait, "-Inf"), pressure.Sample{Running: present(1), Waiting: bad}},
		{"negative running", gauge(run, "-1") + valid, withRunning(bad)},
		{"fractional running", gauge(run, "1.5") + valid, withRunning(bad)},
		{"count above 1e9", gauge(run, "1000000001") + valid, withRunning(bad)},
		{"sum above 1e9", gauge(run, "600000000", "600000000") + valid, withRunning(bad)},
		{"NaN in one engine of two", gauge(run, "1", "NaN") + valid, withRunning(bad)},
		{"NaN KV", gauge(run, "1") + gauge(wait, "1") + gauge(kv, "NaN"), pressure.Sample{Running: present(1), Waiting: present(1), KVUsage: bad}},
		{"KV above 1", gauge(run, "1") + gauge(wait, "1") + gauge(kv, "1.01"), pressure.Sample{Running: present(1), Waiting: present(1), KVUsage: bad}},
		{"negative KV", gauge(run, "1") + gauge(wait, "1") + gauge(kv, "-0.1"), pressure.Sample{Running: present(1), Waiting: present(1), KVUsage: bad}},
		{"invalid current KV does not fall back", gauge(kv, "2") + gauge("vllm:gpu_cache_usage_perc", "0.5") + gauge(run, "1"),
			pressure.Sample{Running: present(1), KVUsage: bad}},
		{"invalid legacy KV", gauge("vllm:gpu_cache_usage_perc", "Inf") + gauge(run, "1"), pressure.Sample{Running: present(1), KVUsage: bad}},
		{"duplicate series", run + `{engine="0",model_name="` + llama + `"} 1` + "\n" +
			run + `{model_name="` + llama + `",engine="0"} 1` + "\n", pressure.Sample{Running: bad}},
		{"counter typed running", "# TYPE " + run + " counter\n" + run + `{model_name="` + llama + `"} 1` + "\n" + valid, withRunning(bad)},
		{"histogram typed KV", "# TYPE " + kv + " histogram\n" + kv + `_count{model_name="` + llama + `"} 1` + "\n" + gauge(run, "1"),
			pressure.Sample{Running: present(1), KVUsage: bad}},
		{"every signal malformed", gauge(run, "NaN") + gauge(wait, "-1") + gauge(kv, "+Inf"), pressure.Sample{Running: bad, Waiting: bad, KVUsage: bad}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cl := scrape.Parse([]byte(tt.page), llama)
			assert.Equal(t, pressure.ClassUnknown, cl)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestMalformedSeriesNormalizesInvalid follows a malformed page through normalization: the member's
// pressure is unknown with the malformed signal invalid, never missing.
func TestMalformedSeriesNormalizesInvalid(t *testing.T) {
	run, wait, kv := "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"
	job := pressure.Job{Tier: "chat", Member: "a", Started: time.Unix(100, 0), Capacity: 4}
	tests := []struct {
		name    string
		page    string
		req, kv scheduler.SignalState
	}{
		{"NaN running, KV valid", gauge(run, "NaN") + gauge(wait, "0") + gauge(kv, "0.5"), scheduler.SignalInvalid, scheduler.SignalValid},
		{"negative KV, requests valid", gauge(run, "1") + gauge(wait, "0") + gauge(kv, "-1"), scheduler.SignalValid, scheduler.SignalInvalid},
		{"wrong type waiting, KV missing", gauge(run, "1") + "# TYPE " + wait + " counter\n" + wait + `{model_name="` + llama + `"} 1` + "\n",
			scheduler.SignalInvalid, scheduler.SignalMissing},
		{"unreadable page", "garbage{", scheduler.SignalMissing, scheduler.SignalMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, cl := scrape.Parse([]byte(tt.page), llama)
			c, err := pressure.NewCore([]pressure.TierSpec{{ID: "chat", ServedModel: llama, Members: []pressure.MemberSpec{
				{ID: "a", Endpoint: "http://127.0.0.1:9001", Capacity: 4}, {ID: "b", Endpoint: "http://127.0.0.1:9002", Capacity: 4}}}})
			require.NoError(t, err)
			_, err = c.Snapshot("chat", job.Started)
			require.NoError(t, err)
			j, ok := c.Next(job.Started)
			require.True(t, ok)
			c.Complete(j, job.Started, s, cl)
			got, err := c.Peek("chat", job.Started)
			require.NoError(t, err)
			p := got[j.Member]
			assert.Equal(t, scheduler.FreshnessUnknown, p.Freshness())
			assert.Equal(t, tt.req, p.RequestState())
			assert.Equal(t, tt.kv, p.KVState())
			_, has := p.PPM()
			assert.False(t, has)
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
