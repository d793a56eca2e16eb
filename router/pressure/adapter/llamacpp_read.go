package adapter

import (
	dto "github.com/prometheus/client_model/go"

	"github.com/anvil-llm/anvil/router/pressure"
)

// ReadLlamaCpp reads llama-server's page, which names no model: it belongs to the one model the
// member serves, as the readiness check verified from /v1/models, and servedModel only has to be
// non-empty. Running is llamacpp:requests_processing (busy slots), waiting
// llamacpp:requests_deferred (tasks deferred for want of a free slot), and KV usage
// llamacpp:kv_cache_usage_ratio where the server still prints it (used cells over the context
// size, a fraction 0..1). Current servers print no KV figure, so their KV signal is missing and
// the request counts alone make the pressure. llama-server prints these series without labels: a
// labelled one (model="..." of a multi-model router page, say) makes its signal malformed
// (CountSignalAll), never another model's load counted as the served model's.
func ReadLlamaCpp(families map[string]*dto.MetricFamily, _ string) pressure.Sample {
	return pressure.Sample{
		Running: CountSignalAll(families[llamaRunning]),
		Waiting: CountSignalAll(families[llamaWaiting]),
		KVUsage: FractionSignalAll(families[llamaKVUsage]),
	}
}
