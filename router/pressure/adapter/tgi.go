package adapter

// Hugging Face text-generation-inference's pressure series, printed by its router through
// metrics-exporter-prometheus. A page serves one model and no series carries a label naming it.
// Source: github.com/huggingface/text-generation-inference backends/v3/src/queue.rs (tgi_queue_size),
// backends/v3/src/backend.rs (tgi_batch_current_size, tgi_batch_current_max_tokens),
// backends/v3/src/lib.rs (tgi_batch_max_total_tokens), router/src/server.rs (HELP text);
// docs/source/reference/metrics.md. The same names are printed by backends/v2.
const (
	// gauge, requests in the batch being generated ("Current batch size").
	tgiRunning = "tgi_batch_current_size"
	// gauge, requests queued for the next batch ("Current queue size").
	tgiWaiting = "tgi_queue_size"
	// gauge, tokens the current batch reserves: the sum over its requests of prompt plus
	// max_new_tokens ("Maximum tokens for the current batch").
	tgiBatchTokens = "tgi_batch_current_max_tokens"
	// gauge, the KV token budget found at warmup (max_batch_total_tokens). Printed since TGI 2.3.1
	// (2024-10, "Max token capacity metric"), without a HELP line: server.rs describes
	// tgi_batch_total_tokens instead.
	tgiTotalTokens = "tgi_batch_max_total_tokens"
)
