package adapter

// llama.cpp llama-server's pressure series (started with --metrics). A page serves one model and
// no series carries a label naming it. Current names and help text: github.com/ggml-org/llama.cpp
// tools/server/server-task.cpp (server_task_result_metrics::to_metrics); older servers,
// examples/server/server.cpp (the "metrics" handler, 2024), also printed the KV gauges below.
const (
	// gauge, busy slots ("Number of requests processing"; older: "Number of request processing.").
	llamaRunning = "llamacpp:requests_processing"
	// gauge, tasks deferred because no slot was free ("Number of requests deferred").
	llamaWaiting = "llamacpp:requests_deferred"
	// gauge, fraction 0..1 of the context's KV cells in use, used cells / n_ctx ("KV-cache usage.
	// 1 means 100 percent usage."). Removed in ggml-org/llama.cpp#13660 (May 2025; see #22879):
	// current servers print no KV figure at all.
	llamaKVUsage = "llamacpp:kv_cache_usage_ratio"
	// llamacpp:kv_cache_tokens (gauge, KV cells in use, "KV-cache tokens.", removed with
	// llamaKVUsage) is not read: without n_ctx on the page it has no denominator.
)
