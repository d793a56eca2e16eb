package adapter_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/adapter"
	"github.com/anvil-llm/anvil/router/scheduler"
)

var bad = scheduler.MalformedMetric()

func sample(running, waiting, kv scheduler.Metric) pressure.Sample {
	return pressure.Sample{Running: running, Waiting: waiting, KVUsage: kv}
}

type trap struct {
	name, page string
	want       pressure.Sample
}

func runTraps(t *testing.T, engine, model string, traps []trap) {
	t.Helper()
	for _, tt := range traps {
		t.Run(tt.name, func(t *testing.T) {
			got, cl := read(t, engine, []byte(tt.page), model)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, adapter.Classify(tt.want), cl)
		})
	}
}

func sgl(name, labels, value string) string {
	return fmt.Sprintf("# TYPE %s gauge\n%s{model_name=%q%s} %s\n", name, name, llama, labels, value)
}

// old is a series of SGLang's first metrics, labelled name.
func old(name, model, value string) string {
	return fmt.Sprintf("# TYPE %s gauge\n%s{name=%q} %s\n", name, name, model, value)
}

func TestSGLangTraps(t *testing.T) {
	many := "# TYPE sglang:num_running_reqs gauge\n"
	for i := range 65 {
		many += fmt.Sprintf("sglang:num_running_reqs{model_name=%q,dp_rank=\"%d\"} 1\n", llama, i)
	}
	runTraps(t, adapter.SGLang, llama, []trap{
		{"only KV: counts missing, not zero", sgl("sglang:token_usage", "", "0.5"), sample(missing, missing, present(0.5))},
		{"replicas that disagree: the largest", "# TYPE sglang:num_running_reqs gauge\n" +
			fmt.Sprintf("sglang:num_running_reqs{model_name=%q,tp_rank=\"0\"} 5\nsglang:num_running_reqs{model_name=%q,tp_rank=\"1\"} 4\n", llama, llama),
			sample(present(5), missing, missing)},
		{"other model's series ignored", sgl("sglang:num_queue_reqs", `,dp_rank="0"`, "3") +
			"sglang:num_queue_reqs{model_name=\"Qwen/Qwen2.5-7B-Instruct\",dp_rank=\"1\"} 900\n",
			sample(missing, present(3), missing)},
		{"NaN count", sgl("sglang:num_running_reqs", "", "NaN"), sample(bad, missing, missing)},
		{"fractional count", sgl("sglang:num_queue_reqs", "", "1.5"), sample(missing, bad, missing)},
		{"negative count in one rank", sgl("sglang:num_running_reqs", `,tp_rank="0"`, "2") +
			fmt.Sprintf("sglang:num_running_reqs{model_name=%q,tp_rank=\"1\"} -1\n", llama), sample(bad, missing, missing)},
		{"token usage above 1", sgl("sglang:token_usage", "", "1.2"), sample(missing, missing, bad)},
		{"counter instead of gauge", "# TYPE sglang:num_running_reqs counter\n" +
			fmt.Sprintf("sglang:num_running_reqs{model_name=%q} 3\n", llama), sample(bad, missing, missing)},
		{"duplicate series", sgl("sglang:num_running_reqs", `,tp_rank="0"`, "2") +
			fmt.Sprintf("sglang:num_running_reqs{model_name=%q,tp_rank=\"0\"} 2\n", llama), sample(bad, missing, missing)},
		{"too many series", many, sample(bad, missing, missing)},
		// One series with dp_rank and one without: a group or a total? Refused, never summed.
		{"dp_rank on some series only", sgl("sglang:num_running_reqs", `,dp_rank="0"`, "4") +
			fmt.Sprintf("sglang:num_running_reqs{model_name=%q,tp_rank=\"0\"} 4\n", llama) + sgl("sglang:num_queue_reqs", "", "1"),
			sample(bad, present(1), missing)},
		{"dp_rank on every series", sgl("sglang:num_running_reqs", `,dp_rank="0"`, "4") +
			fmt.Sprintf("sglang:num_running_reqs{model_name=%q,dp_rank=\"1\"} 2\n", llama), sample(present(6), missing, missing)},
		{"old names, labelled name", old("sglang:num_requests_running", llama, "3") + old("sglang:num_requests_waiting", llama, "1") +
			old("sglang:token_usage", llama, "0.5"), sample(present(3), present(1), present(0.5))},
		{"old names, other model", old("sglang:num_requests_running", "Qwen/Qwen2.5-7B-Instruct", "3"), sample(missing, missing, missing)},
		{"old waiting only", old("sglang:num_requests_waiting", llama, "2"), sample(missing, present(2), missing)},
		{"current names win over old", sgl("sglang:num_running_reqs", "", "4") + old("sglang:num_requests_running", llama, "9"),
			sample(present(4), missing, missing)},
		{"old token usage above 1", old("sglang:num_requests_running", llama, "1") + old("sglang:token_usage", llama, "1.5"),
			sample(present(1), missing, bad)},
	})
}

func trt(family, key string, rows ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# TYPE %s gauge\n", family)
	for _, r := range rows { // "version kind value [model]"
		f := strings.Fields(r)
		model := triton
		if len(f) == 4 {
			model = f[3]
		}
		fmt.Fprintf(&b, "%s{%s=%q,model=%q,version=%q} %s\n", family, key, f[1], model, f[0], f[2])
	}
	return b.String()
}

func reqs(rows ...string) string { return trt("nv_trt_llm_request_metrics", "request_type", rows...) }
func kv(rows ...string) string {
	return trt("nv_trt_llm_kv_cache_block_metrics", "kv_cache_block_type", rows...)
}

func TestTRTLLMTraps(t *testing.T) {
	runTraps(t, adapter.TRTLLM, triton, []trap{
		{"no KV family: KV missing", reqs("1 scheduled 3", "1 active 5", "1 waiting 2"), sample(present(3), present(2), missing)},
		{"another Triton model ignored", reqs("1 scheduled 3", "1 waiting 1", "1 scheduled 70 llama_trt", "1 waiting 90 llama_trt") +
			kv("1 fraction 0.25", "1 fraction 0.99 llama_trt"), sample(present(3), present(1), present(0.25))},
		{"a version lost its scheduled series", reqs("1 scheduled 3", "1 waiting 0", "2 waiting 1"), sample(bad, present(1), missing)},
		{"derived waiting: active below scheduled", reqs("1 scheduled 6", "1 active 5"), sample(present(6), bad, missing)},
		{"derived waiting: active missing", reqs("1 scheduled 6"), sample(present(6), missing, missing)},
		{"used above max", kv("1 used 11", "1 max 10"), sample(missing, missing, bad)},
		// A max of 0 blocks is no KV figure: missing in both paths, and the counts stay usable.
		{"legacy max of 0", reqs("1 scheduled 3", "1 waiting 1") + kv("1 used 0", "1 max 0"),
			sample(present(3), present(1), missing)},
		{"fraction with max of 0", reqs("1 scheduled 3", "1 waiting 1") + kv("1 fraction 0", "1 used 0", "1 max 0"),
			sample(present(3), present(1), missing)},
		{"a version with max 0 beside a full one", kv("1 fraction 0", "1 max 0", "2 fraction 0.75", "2 max 100"),
			sample(missing, missing, present(0.75))},
		{"used above a max of 0 is still no figure", kv("1 used 5", "1 max 0"), sample(missing, missing, missing)},
		{"used without max", kv("1 used 3", "1 free 7"), sample(missing, missing, missing)},
		{"fraction above 1", kv("1 fraction 1.5", "1 used 3", "1 max 10"), sample(missing, missing, bad)},
		{"fraction preferred to blocks", kv("1 fraction 0.5", "1 used 3", "1 max 10"), sample(missing, missing, present(0.5))},
		{"worst version, mixed reporters", kv("1 fraction 0.5", "2 used 9", "2 max 10"), sample(missing, missing, present(0.9))},
		{"one version without KV", kv("1 fraction 0.5", "2 free 10"), sample(missing, missing, bad)},
		{"two series for one version and type", reqs("1 scheduled 3") +
			fmt.Sprintf("nv_trt_llm_request_metrics{request_type=\"scheduled\",model=%q,version=\"1\",instance=\"b\"} 4\n", triton),
			sample(bad, bad, missing)},
	})
}

func gauge(name, value string) string {
	return fmt.Sprintf("# TYPE %s gauge\n%s %s\n", name, name, value)
}

func TestLlamaCppTraps(t *testing.T) {
	runTraps(t, adapter.LlamaCpp, llama, []trap{
		{"deferred missing", gauge("llamacpp:requests_processing", "1"), sample(present(1), missing, missing)},
		{"NaN slots", gauge("llamacpp:requests_processing", "NaN"), sample(bad, missing, missing)},
		{"ratio above 1", gauge("llamacpp:kv_cache_usage_ratio", "1.01"), sample(missing, missing, bad)},
		{"tokens without a ratio", gauge("llamacpp:kv_cache_tokens", "4096"), sample(missing, missing, missing)},
		// llama-server prints no labels; a labelled series (router mode's model="other") is refused,
		// never counted as the served model's and never skipped.
		{"another model's slots", gauge("llamacpp:requests_processing", "1") +
			"llamacpp:requests_processing{model=\"other\"} 7\n" + gauge("llamacpp:requests_deferred", "0"),
			sample(bad, present(0), missing)},
		{"only labelled series", "# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred{model=\"other\"} 3\n",
			sample(missing, bad, missing)},
		{"labelled ratio", "# TYPE llamacpp:kv_cache_usage_ratio gauge\nllamacpp:kv_cache_usage_ratio{slot=\"0\"} 0.5\n",
			sample(missing, missing, bad)},
	})
}

func TestTGITraps(t *testing.T) {
	budget := gauge("tgi_batch_max_total_tokens", "1000")
	runTraps(t, adapter.TGI, llama, []trap{
		{"before the first batch", budget + gauge("tgi_queue_size", "0"), sample(missing, present(0), missing)},
		{"budget of 0", gauge("tgi_batch_current_max_tokens", "0") + gauge("tgi_batch_max_total_tokens", "0"), sample(missing, missing, bad)},
		// Prefix caching reserves a shared prefix once per request: above the budget is full, and
		// the valid counts beside it stay usable.
		{"reservation above the budget", gauge("tgi_batch_current_size", "30") + gauge("tgi_queue_size", "9") +
			gauge("tgi_batch_current_max_tokens", "70000") + gauge("tgi_batch_max_total_tokens", "64000"),
			sample(present(30), present(9), present(1))},
		{"infinite reservation", gauge("tgi_batch_current_max_tokens", "+Inf") + budget, sample(missing, missing, bad)},
		{"fractional tokens", gauge("tgi_batch_current_max_tokens", "10.5") + budget, sample(missing, missing, bad)},
		{"full", gauge("tgi_batch_current_max_tokens", "1000") + budget, sample(missing, missing, present(1))},
		{"two budgets", gauge("tgi_batch_current_max_tokens", "10") + budget + "tgi_batch_max_total_tokens{shard=\"1\"} 2000\n",
			sample(missing, missing, bad)},
		{"labelled batch size", gauge("tgi_queue_size", "2") + "# TYPE tgi_batch_current_size gauge\ntgi_batch_current_size{model=\"other\"} 9\n",
			sample(bad, present(2), missing)},
		{"labelled queue beside the plain one", gauge("tgi_queue_size", "2") + "tgi_queue_size{shard=\"1\"} 5\n",
			sample(missing, bad, missing)},
		{"infinite budget", gauge("tgi_batch_current_max_tokens", "10") + gauge("tgi_batch_max_total_tokens", "+Inf"), sample(missing, missing, bad)},
	})
}

func TestBlockFraction(t *testing.T) {
	tests := []struct {
		used, total, want scheduler.Metric
	}{
		{present(1), present(4), present(0.25)},
		{present(0), present(4), present(0)},
		{present(4), present(4), present(1)},
		{missing, present(4), missing},
		{present(1), missing, missing},
		{bad, missing, bad},
		{present(5), present(4), bad},
		{present(-1), present(4), bad},
		{present(1), present(0), bad},
		{present(1), present(-4), bad},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, adapter.BlockFraction(tt.used, tt.total), "%v/%v", tt.used, tt.total)
	}
}

// TestReservationFraction: an upper estimate above its total is a full cache; everything else is
// read as BlockFraction reads it (here the used > total case is the only difference).
func TestReservationFraction(t *testing.T) {
	tests := []struct {
		used, total, want scheduler.Metric
	}{
		{present(70000), present(64000), present(1)},
		{present(1), present(4), present(0.25)},
		{present(5), present(0), bad},
		{present(5.5), present(4), bad},
		{present(-1), present(4), bad},
		{missing, present(4), missing},
		{bad, present(4), bad},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, adapter.ReservationFraction(tt.used, tt.total), "%v/%v", tt.used, tt.total)
	}
}
