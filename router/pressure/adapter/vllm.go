package adapter

import (
	dto "github.com/prometheus/client_model/go"

	"github.com/anvil-llm/anvil/router/pressure"
)

// vLLM's pressure series. Names are matched whole: vllm:num_requests_waiting is a
// prefix of vllm:num_requests_waiting_by_reason, which must not be counted.
const (
	vllmRunning  = "vllm:num_requests_running"
	vllmWaiting  = "vllm:num_requests_waiting"
	vllmKVUsage  = "vllm:kv_cache_usage_perc"
	vllmKVLegacy = "vllm:gpu_cache_usage_perc" // vLLM < 0.10 name of vllmKVUsage
	vllmModel    = "model_name"
)

// ReadVLLM keeps, for each signal, the series whose model_name label equals servedModel exactly
// and aggregates over the remaining labels (vLLM's engine label, one series per data-parallel
// engine): request counts are summed, KV usage takes the maximum engine, because a fraction does
// not add up and the fullest engine is the conservative reading. The KV signal is
// vllm:kv_cache_usage_perc, or vllm:gpu_cache_usage_perc only when the current name has no series
// for the model.
func ReadVLLM(families map[string]*dto.MetricFamily, servedModel string) pressure.Sample {
	s := pressure.Sample{
		Running: CountSignal(families[vllmRunning], vllmModel, servedModel),
		Waiting: CountSignal(families[vllmWaiting], vllmModel, servedModel),
		KVUsage: FractionSignal(families[vllmKVUsage], vllmModel, servedModel),
	}
	if !s.KVUsage.Present {
		s.KVUsage = FractionSignal(families[vllmKVLegacy], vllmModel, servedModel)
	}
	return s
}
