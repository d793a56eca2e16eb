package adapter

// TensorRT-LLM's pressure series as the Triton tensorrtllm backend prints them on Triton's metrics
// port (8002). Families, label names and label values: github.com/NVIDIA/TensorRT-LLM
// triton_backend/inflight_batcher_llm/src/custom_metrics_reporter/custom_metrics_reporter.cc
// (formerly github.com/triton-inference-server/tensorrtllm_backend
// inflight_batcher_llm/src/custom_metrics_reporter/custom_metrics_reporter.cc); the values come
// from the executor's IterationStats in triton_backend/inflight_batcher_llm/src/model_instance_state.cc;
// sample page: tensorrtllm_backend README.md, "Triton Metrics".
const (
	// gauge family, one series per request_type label value.
	trtRequests    = "nv_trt_llm_request_metrics"
	trtRequestType = "request_type"
	// "Scheduled Requests": requests scheduled in the executor's latest iteration.
	trtScheduled = "scheduled"
	// "Active Request Count": requests the executor holds (scheduled and not).
	trtActive = "active"
	// "Waiting Requests" = active - scheduled (model_instance_state.cc). Added in 2025; older
	// backends print only active, max, scheduled and context, so waiting is derived.
	trtWaitingType = "waiting"

	// gauge family, one series per kv_cache_block_type label value, in blocks (or a fraction).
	trtKVBlocks    = "nv_trt_llm_kv_cache_block_metrics"
	trtKVBlockType = "kv_cache_block_type"
	// "Fraction used KV cache blocks" = used / max, 0 when max is 0. Added with "waiting"; older
	// backends print max, free, used, tokens_per, alloc_total, alloc_new and reused.
	trtKVFraction = "fraction"
	trtKVUsed     = "used" // "Used KV cache blocks"
	trtKVMax      = "max"  // "Max KV cache blocks"

	// Triton's model name (the model directory in the repository) and its version: every
	// nv_trt_llm_* series carries both.
	trtModel   = "model"
	trtVersion = "version"
	// The backend model of Triton's TensorRT-LLM repository (all_models/inflight_batcher_llm/
	// tensorrt_llm): the executor behind a served ensemble or BLS model.
	trtBackendModel = "tensorrt_llm"
)

// tritonStepModels are the served models of Triton's TensorRT-LLM repository that run their
// requests on the tensorrt_llm backend model (all_models/inflight_batcher_llm/ensemble and
// tensorrt_llm_bls). Only these borrow its series: any other model beside a tensorrt_llm model
// (a vLLM-backend model on the same Triton, say) is not its executor.
var tritonStepModels = [...]string{"ensemble", "tensorrt_llm_bls"}
