package adapter

import (
	dto "github.com/prometheus/client_model/go"

	"github.com/anvil-llm/anvil/router/pressure"
)

// ReadSGLang keeps the series whose model_name equals servedModel exactly (SGLang labels every
// scheduler series with its served model name) and reads sglang:num_running_reqs,
// sglang:num_queue_reqs and sglang:token_usage. Request counts are summed over data-parallel
// groups (dp_rank; a page without it is one group, a page with it on some series only is
// malformed) and, within a group, the largest rank's series
// is taken: with --enable-metrics-for-all-schedulers every tensor- and pipeline-parallel rank
// repeats its group's batch and queue, and adding them would count each request once per rank.
// KV usage is the fullest series, as for vLLM. token_usage is already a fraction of the KV token
// pool; a value outside 0..1 is malformed. A page with neither current count family but one of
// SGLang's first names (sglang:num_requests_running, sglang:num_requests_waiting) is read with
// those, as readLegacySGLang does.
func ReadSGLang(families map[string]*dto.MetricFamily, servedModel string) pressure.Sample {
	if families[sglangRunning] == nil && families[sglangWaiting] == nil &&
		(families[sglangLegacyRunning] != nil || families[sglangLegacyWaiting] != nil) {
		return readLegacySGLang(families, servedModel)
	}
	return pressure.Sample{
		Running: ReplicaCountSignal(families[sglangRunning], sglangModel, servedModel, sglangDPRank),
		Waiting: ReplicaCountSignal(families[sglangWaiting], sglangModel, servedModel, sglangDPRank),
		KVUsage: FractionSignal(families[sglangKVUsage], sglangModel, servedModel),
	}
}

// readLegacySGLang reads SGLang's first metrics: the series labelled name=servedModel (already
// summed over processes by prometheus_client, so several matching series are summed as vLLM's
// engines are) of sglang:num_requests_running, sglang:num_requests_waiting and
// sglang:token_usage, a fraction 0..1.
func readLegacySGLang(families map[string]*dto.MetricFamily, servedModel string) pressure.Sample {
	return pressure.Sample{
		Running: CountSignal(families[sglangLegacyRunning], sglangLegacyModel, servedModel),
		Waiting: CountSignal(families[sglangLegacyWaiting], sglangLegacyModel, servedModel),
		KVUsage: FractionSignal(families[sglangKVUsage], sglangLegacyModel, servedModel),
	}
}
