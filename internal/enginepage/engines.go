package enginepage

import "github.com/anvil-llm/anvil/engine"

// Each engine's page: the pressure series as the engine prints them (names, help text, types,
// labels, units), plus its token counters. Sources are the engines' own code; the router's adapters
// cite theirs independently (router/pressure/adapter).

// vLLM >= 0.12 (vllm/v1/metrics/loggers.py), one engine: labels engine and model_name. Only the
// pressure series: anvil-fakevllm's own collector prints vLLM's full page.
const (
	vllmRunning  = "vllm:num_requests_running"
	vllmWaiting  = "vllm:num_requests_waiting"
	vllmKV       = "vllm:kv_cache_usage_perc"
	vllmKVLegacy = "vllm:gpu_cache_usage_perc"
)

func buildVLLM(b *builder) {
	l := []string{"engine", "0", "model_name", b.o.Model}
	b.gauge(vllmRunning, "Number of requests in model execution batches.", one(running, l...))
	b.gauge(vllmWaiting, "Number of requests waiting to be processed.", one(waiting, l...))
	name, help := vllmKV, "KV-cache usage. 1 means 100 percent usage."
	if b.o.Legacy {
		name, help = vllmKVLegacy, "GPU KV-cache usage. 1 means 100 percent usage."
	}
	b.gauge(name, help, one(kvUsage, l...))
}

// SGLang (python/sglang/srt/metrics/collector.py, SchedulerMetricsCollector and
// TokenizerMetricsCollector): one scheduler, labels model_name plus, since 2025, engine_type,
// pp_rank and tp_rank. token_usage is the fraction of the KV token pool in use.
const (
	sglRunning    = "sglang:num_running_reqs"
	sglWaiting    = "sglang:num_queue_reqs"
	sglTokenUsage = "sglang:token_usage"
	sglUsedTokens = "sglang:num_used_tokens"
	sglMaxTokens  = "sglang:max_total_num_tokens"
)

func buildSGLang(b *builder) {
	l := []string{"engine_type", "unified", "model_name", b.o.Model, "pp_rank", "0", "tp_rank", "0"}
	if b.o.Legacy {
		l = []string{"model_name", b.o.Model}
	}
	b.gauge(sglRunning, "The number of running requests.", one(running, l...))
	b.gauge(sglUsedTokens, "The number of used tokens.", one(b.tokens(used), l...))
	b.gauge(sglTokenUsage, "The token usage.", one(kvUsage, l...))
	b.gauge(sglWaiting, "The number of requests in the waiting queue.", one(waiting, l...))
	if !b.o.Legacy {
		b.gauge(sglMaxTokens, "Maximum total number of tokens in the KV cache pool.", one(b.tokens(total), l...))
	}
	m := []string{"model_name", b.o.Model}
	b.counter("sglang:prompt_tokens_total", "Number of prefill tokens processed.", one(prompt, m...))
	b.counter("sglang:generation_tokens_total", "Number of generation tokens processed.", one(gen, m...))
}

// TensorRT-LLM through Triton (triton_backend/inflight_batcher_llm custom_metrics_reporter.cc):
// gauge families keyed by request_type and kv_cache_block_type, labels model (the Triton model
// that runs the backend, TritonBackendModel) and version. Since 2025 the backend adds request_type="waiting" and
// kv_cache_block_type="fraction".
const (
	trtRequests = "nv_trt_llm_request_metrics"
	trtKVBlocks = "nv_trt_llm_kv_cache_block_metrics"
)

func buildTRTLLM(b *builder) {
	backend := TritonBackendModel(b.o.Model)
	req := func(kind string, of func(engine.Metrics) float64) series {
		return one(of, "model", backend, "request_type", kind, "version", "1")
	}
	active := func(m engine.Metrics) float64 { return float64(m.Running + m.Waiting) }
	context := func(m engine.Metrics) float64 { return float64(m.LastStep.Seqs - m.LastStep.DecodeSeqs) }
	reqs := []series{req("active", active), req("context", context), req("max", constant(float64(b.o.MaxNumSeqs))),
		req("scheduled", running)}
	if !b.o.Legacy {
		reqs = append(reqs, req("waiting", waiting))
	}
	b.gauge(trtRequests, "TRT LLM request metrics", reqs...)
	kv := func(kind string, of func(engine.Metrics) float64) series {
		return one(of, "kv_cache_block_type", kind, "model", backend, "version", "1")
	}
	free := func(m engine.Metrics) float64 { return float64(m.TotalBlocks - m.UsedBlocks) }
	blocks := []series{kv("free", free), kv("max", total), kv("tokens_per", constant(float64(max(b.o.BlockSize, 1)))),
		kv("used", used)}
	if !b.o.Legacy {
		blocks = append(blocks, kv("fraction", kvUsage))
	}
	b.gauge(trtKVBlocks, "TRT LLM KV cache block metrics", blocks...)
}

// llama.cpp llama-server --metrics (tools/server/server.cpp, the metrics handler): no labels, one
// model per page. Servers before 2025 also printed the KV gauges.
const (
	llamaRunning  = "llamacpp:requests_processing"
	llamaWaiting  = "llamacpp:requests_deferred"
	llamaKVRatio  = "llamacpp:kv_cache_usage_ratio"
	llamaKVTokens = "llamacpp:kv_cache_tokens"
)

func buildLlamaCpp(b *builder) {
	b.counter("llamacpp:prompt_tokens_total", "Number of prompt tokens processed.", one(prompt))
	b.counter("llamacpp:tokens_predicted_total", "Number of generation tokens processed.", one(gen))
	if b.o.Legacy {
		b.gauge(llamaKVRatio, "KV-cache usage. 1 means 100 percent usage.", one(kvUsage))
		b.gauge(llamaKVTokens, "KV-cache tokens.", one(b.tokens(used)))
	}
	b.gauge(llamaRunning, "Number of requests processing.", one(running))
	b.gauge(llamaWaiting, "Number of requests deferred.", one(waiting))
}

// Hugging Face TGI's router (backends/v3, metrics-exporter-prometheus): no labels, one model per
// page. tgi_batch_current_max_tokens is what the running batch reserves, in tokens;
// tgi_batch_max_total_tokens (TGI >= 2.3.1, huggingface/text-generation-inference#2595) the KV token budget, set once at warmup. The exporter
// prints a series only once it is first set, so the request series appear with the first request.
const (
	tgiRunning     = "tgi_batch_current_size"
	tgiWaiting     = "tgi_queue_size"
	tgiBatchTokens = "tgi_batch_current_max_tokens"
	tgiTotalTokens = "tgi_batch_max_total_tokens"
)

func buildTGI(b *builder) {
	b.setLazily(func() {
		b.counter("tgi_request_count", "Total number of requests", one(func(m engine.Metrics) float64 { return float64(m.Submitted) }))
		b.gauge(tgiWaiting, "Current queue size", one(waiting))
		b.gauge(tgiRunning, "Current batch size", one(running))
		b.gauge(tgiBatchTokens, "Maximum tokens for the current batch", one(b.tokens(used)))
	})
	if !b.o.Legacy {
		b.gauge(tgiTotalTokens, "", one(b.tokens(total))) // printed without a HELP line
	}
}
