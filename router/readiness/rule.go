package readiness

import "slices"

// Rule is the shape of a member's identity answers: which health path it serves and which entries
// its /v1/models may list beside the served model. The served model must be listed with exactly its
// ID under every rule; what differs is only what else a ready member may list. The composition root
// picks the rule from the tier's engine.
type Rule uint8

const (
	// RuleOpenAI is vLLM's, SGLang's, llama.cpp's and TGI's shape: GET /health, and /v1/models lists
	// the served model and, at most, LoRA adapters of it (entries whose parent or root is the served
	// model).
	RuleOpenAI Rule = iota
	// RuleTriton is Triton Inference Server's OpenAI frontend in front of TensorRT-LLM: it has no
	// /health (GET /health/ready instead), and its /v1/models lists every model of the Triton
	// repository, so the TensorRT-LLM ensemble's own steps (TritonEnsembleParts) are listed beside the
	// served model. Any other entry is still another model on the member's port.
	RuleTriton
)

// tritonEnsembleParts are the model names of the TensorRT-LLM backend's inflight-batcher repository
// (tensorrtllm_backend all_models/inflight_batcher_llm): the models one TensorRT-LLM deployment
// loads into Triton, which its OpenAI frontend lists as models of their own.
var tritonEnsembleParts = [...]string{"ensemble", "preprocessing", "postprocessing", "tensorrt_llm", "tensorrt_llm_bls"}

// TritonEnsembleParts returns the names RuleTriton accepts beside the served model.
func TritonEnsembleParts() []string { return slices.Clone(tritonEnsembleParts[:]) }

// HealthPath is the path the rule's health probe GETs.
func (r Rule) HealthPath() string {
	if r == RuleTriton {
		return "/health/ready"
	}
	return "/health"
}

// CheckModels applies the identity rule to a /v1/models body (see the package function
// CheckModels, which is RuleOpenAI's): under RuleTriton an entry named after one of the TensorRT-LLM
// ensemble's steps is not another model.
func (r Rule) CheckModels(body []byte, served string) Verdict {
	models, ok := decodeModels(body)
	if !ok {
		return WrongModel
	}
	found, extra := false, false
	for _, m := range models {
		switch {
		case m.id == served:
			found = true
		case m.parent == served || m.root == served:
			// A LoRA adapter of the served model.
		case r == RuleTriton && slices.Contains(tritonEnsembleParts[:], m.id):
			// A step of the TensorRT-LLM ensemble that serves the model.
		default:
			extra = true
		}
	}
	switch {
	case !found:
		return WrongModel
	case extra:
		return ExtraModel
	}
	return Ready
}
