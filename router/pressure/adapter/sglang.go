package adapter

// SGLang's pressure series, as its scheduler prints them through prometheus_client (multiprocess
// mode "mostrecent", so one series per reporting scheduler process). Names and help text:
// github.com/sgl-project/sglang python/sglang/srt/metrics/collector.py (SchedulerMetricsCollector);
// labels: python/sglang/srt/managers/scheduler_metrics_mixin.py (init_metrics).
const (
	// gauge, requests in the running batch of one scheduler ("The number of running requests.").
	sglangRunning = "sglang:num_running_reqs"
	// gauge, requests in one scheduler's waiting queue ("The number of requests in the waiting
	// queue."). The grammar queue (sglang:num_grammar_queue_reqs) and the disaggregation queues
	// are separate families and are not read.
	sglangWaiting = "sglang:num_queue_reqs"
	// gauge, fraction 0..1 of the KV token pool in use: num_used_tokens / max_total_num_tokens
	// (for a hybrid SWA model the larger of the full and SWA pools) ("The token usage.").
	sglangKVUsage = "sglang:token_usage"

	// The served model (server_args.served_model_name, what /v1/models lists). Every SGLang
	// version with metrics carries it; before 2025 it was the only label.
	sglangModel = "model_name"
	// Current SGLang adds engine_type ("unified", "prefill" or "decode"), tp_rank and pp_rank to
	// every scheduler series, and dp_rank under data parallelism. Ranks of one data-parallel group
	// run the same batch, so with --enable-metrics-for-all-schedulers every tensor- and
	// pipeline-parallel rank repeats the group's counts: replicas, not extra requests. Only
	// dp_rank tells groups apart.
	sglangDPRank = "dp_rank"
)

// SGLang's first metrics (0.3, python/sglang/srt/metrics/metrics_collector.py, late 2024; sample
// page: docs/references/production_metrics.md of that time), replaced by the names above. Each
// gauge was registered with multiprocess_mode="sum", so prometheus_client printed one series per
// model summed over the processes, and the only label was name, the served model name.
const (
	// gauge, "Number of requests currently running on GPU".
	sglangLegacyRunning = "sglang:num_requests_running"
	// gauge, "Number of requests waiting to be processed.".
	sglangLegacyWaiting = "sglang:num_requests_waiting"
	// The served model's label on those pages (token_usage included).
	sglangLegacyModel = "name"
)
