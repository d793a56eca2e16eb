package fakevllm

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/gin-gonic/gin"
	dto "github.com/prometheus/client_model/go"

	"github.com/anvil-llm/anvil/internal/enginepage"
)

// Other serving engines. A member with Options.Engine set runs the same engine model but shows it
// the way that engine does: its /metrics page in the engine's names, labels and units
// (internal/enginepage, the page the simulator reads too), its /v1/models in the engine's shape, and
// its health probe where the engine serves it. Everything else (the OpenAI endpoints, faults, the
// admin API) is the same member.

// Engines lists the engines a member can speak; "" is vLLM.
func Engines() []string { return enginepage.Engines() }

// validateEngine checks Options.Engine and what it allows.
func validateEngine(o Options) error {
	if o.Engine != "" && !slices.Contains(Engines(), o.Engine) {
		return fmt.Errorf("%w: unknown engine (one of %v)", ErrInvalidOptions, Engines())
	}
	if len(o.LoRA) > 0 && o.Engine != "" && o.Engine != enginepage.VLLM && o.Engine != enginepage.SGLang {
		// Triton's OpenAI frontend lists LoRA adapters only for its vLLM backend; llama-server and
		// TGI list their one model only.
		return fmt.Errorf("%w: the %s engine lists no LoRA adapters", ErrInvalidOptions, o.Engine)
	}
	return nil
}

// vllm reports whether the member prints vLLM's own page (the collector of metrics.go, unchanged).
func (s *Server) vllm() bool { return s.opts.Engine == "" || s.opts.Engine == enginepage.VLLM }

// enginePage renders the engine model's current state as the member's engine prints it.
func (s *Server) enginePage() ([]*dto.MetricFamily, error) {
	p, err := enginepage.New(enginepage.Options{Engine: s.opts.Engine, Model: s.opts.Models[0],
		BlockSize: s.opts.Profile.BlockSize, MaxNumSeqs: s.opts.Profile.MaxNumSeqs, Legacy: s.opts.LegacyMetrics})
	if err != nil {
		return nil, err
	}
	p.Set(s.drv.metrics())
	return p.Gather(), nil
}

// missingFamilies are the families a metrics-missing fault without a list removes: the pressure
// series of the member's engine.
func (s *Server) missingFamilies() []string {
	if s.vllm() {
		return pressureFamilies()
	}
	return enginepage.PressureFamilies(s.opts.Engine)
}

// healthPath is where the engine answers its health probe: Triton's OpenAI frontend has no /health.
func (s *Server) healthPath() string {
	if s.opts.Engine == enginepage.TRTLLM {
		return "/health/ready"
	}
	return "/health"
}

// tritonSteps are the models of Triton's TensorRT-LLM inflight-batcher repository
// (all_models/inflight_batcher_llm), which Triton's OpenAI frontend lists as models of their own;
// the member's served names are listed beside them. The first served name's backend model
// (enginepage.TritonBackendModel: tensorrt_llm when it serves ensemble or tensorrt_llm_bls, else
// itself) labels the nv_trt_llm_* series.
var tritonSteps = [...]string{"ensemble", "postprocessing", "preprocessing", enginepage.TRTLLMModel, "tensorrt_llm_bls"}

// listEngineModels answers GET /v1/models in the member's engine's shape.
func (s *Server) listEngineModels(c *gin.Context) {
	var data []gin.H
	if s.ready() {
		data = s.engineCards()
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": append([]gin.H{}, data...)})
}

func (s *Server) engineCards() []gin.H {
	created := s.started.Unix()
	bases := append(append([]string(nil), s.opts.Models...), s.opts.ExtraModels...)
	var cards []gin.H
	switch s.opts.Engine {
	case enginepage.SGLang: // http_server.py available_models: ModelCard(id=root=served name)
		for _, m := range bases {
			cards = append(cards, gin.H{"id": m, "object": "model", "created": created, "owned_by": "sglang",
				"root": m, "max_model_len": s.lim.maxModelLen})
		}
		for _, m := range s.opts.LoRA {
			cards = append(cards, gin.H{"id": m, "object": "model", "created": created, "owned_by": "sglang",
				"root": LoRARoot + m, "parent": s.opts.Models[0], "max_model_len": nil})
		}
	case enginepage.TRTLLM: // openai_frontend triton_engine.py models(): every model of the repository
		names := append(bases, tritonSteps[:]...)
		slices.Sort(names)
		for _, m := range slices.Compact(names) {
			cards = append(cards, gin.H{"id": m, "object": "model", "created": created, "owned_by": "Triton Inference Server"})
		}
	case enginepage.LlamaCpp: // server.cpp handle_models: the alias (or the model path) with its meta
		for _, m := range bases {
			cards = append(cards, gin.H{"id": m, "object": "model", "created": created, "owned_by": "llamacpp",
				"meta": gin.H{"n_ctx_train": s.lim.maxModelLen}})
		}
	case enginepage.TGI: // server.rs openai_get_model_info: the --model-id, created 0
		for _, m := range bases {
			cards = append(cards, gin.H{"id": m, "object": "model", "created": 0, "owned_by": m})
		}
	}
	return cards
}
