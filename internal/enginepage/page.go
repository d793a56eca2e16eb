// Package enginepage renders the engine model's state (engine.Metrics) as the Prometheus metric
// families a real serving engine prints on its /metrics page: vLLM's, SGLang's, TensorRT-LLM's
// (through Triton), llama.cpp's or TGI's names, labels, types and units. anvil-fakevllm serves these
// families as text; the simulator hands them, without any text or network, to the same adapters
// the router reads real pages with (router/pressure/adapter), so one page shape is proved end to
// end both ways.
//
// It is deliberately the engines' view, not the router's: it imports neither the adapters nor
// anything under router/, so a test that reads its pages with the adapters checks two independent
// readings of each engine's documentation against each other. It is net-free and starts nothing; a
// Page is built once and refreshed in place, so a scrape allocates nothing.
package enginepage

import (
	"errors"
	"slices"

	dto "github.com/prometheus/client_model/go"

	"github.com/anvil-llm/anvil/engine"
)

// The engines a page can speak, as the router's tiers name them.
const (
	VLLM     = "vllm"
	SGLang   = "sglang"
	TRTLLM   = "trtllm"
	LlamaCpp = "llamacpp"
	TGI      = "tgi"
)

// TRTLLMModel is the name the TensorRT-LLM backend's model has in Triton's inflight-batcher
// repository. Its series are labelled with the name of the Triton model that runs the backend:
// TritonBackendModel of Options.Model.
const TRTLLMModel = "tensorrt_llm"

// TritonBackendModel is the Triton model whose nv_trt_llm_* series carry a served model's
// pressure. The served steps of the inflight-batcher repository (ensemble, tensorrt_llm_bls) run
// their requests on its tensorrt_llm backend model, so that is the model the backend's series
// name; any other served model is a Triton model that runs the backend itself.
func TritonBackendModel(served string) string {
	if served == "ensemble" || served == "tensorrt_llm_bls" {
		return TRTLLMModel
	}
	return served
}

// ErrUnknownEngine is New's error for an engine that is not one of Engines().
var ErrUnknownEngine = errors.New("enginepage: unknown engine")

// Engines lists the engines in the router's documentation order.
func Engines() []string { return []string{VLLM, SGLang, TRTLLM, LlamaCpp, TGI} }

// Options say whose page it is.
type Options struct {
	Engine string // one of Engines(); "" is VLLM
	// Model labels the series of the engines that name their model on the page: vLLM's and
	// SGLang's model_name, TensorRT-LLM's model (TritonBackendModel of it: tensorrt_llm for a served
	// ensemble or BLS step, else the model itself); llama.cpp and TGI name no model.
	Model string
	// BlockSize is the engine's tokens per KV block: the token figures (SGLang's, TGI's, llama.cpp's)
	// are blocks times this, so every engine's KV fraction is the same used/total.
	BlockSize int
	// MaxNumSeqs is the running-set bound (TensorRT-LLM's "max" request figure).
	MaxNumSeqs int
	// Legacy prints the engine's older names: vLLM's gpu_cache_usage_perc, SGLang 0.4 (no rank
	// labels), the 2024 TensorRT-LLM backend (no waiting or fraction figure), llama.cpp with its
	// since-removed KV gauges, TGI before tgi_batch_max_total_tokens.
	Legacy bool
}

// Page is one member's metric families, refreshed in place by Set. It is not safe for concurrent
// use.
type Page struct {
	families []*dto.MetricFamily
	byName   map[string]*dto.MetricFamily
	values   []value
	// Families an engine prints only once they are first set (TGI's metrics-exporter gauges, at
	// the first request): before the engine has taken one, the page is early's.
	lazy      bool
	untouched bool
	early     []*dto.MetricFamily
	earlyBy   map[string]*dto.MetricFamily
}

// value is one series' number and how it follows the engine's state.
type value struct {
	dst *float64
	of  func(engine.Metrics) float64
}

// New builds the page of an engine, every value zero until the first Set.
func New(o Options) (*Page, error) {
	if o.Engine == "" {
		o.Engine = VLLM
	}
	build, ok := builders[o.Engine]
	if !ok {
		return nil, ErrUnknownEngine
	}
	b := &builder{o: o, page: &Page{byName: map[string]*dto.MetricFamily{}, earlyBy: map[string]*dto.MetricFamily{}}}
	build(b)
	b.page.untouched = b.page.lazy
	return b.page, nil
}

// Set refreshes every value from the engine's state.
func (p *Page) Set(m engine.Metrics) {
	for _, v := range p.values {
		*v.dst = v.of(m)
	}
	p.untouched = p.lazy && m.Submitted == 0
}

// Families returns the page keyed by family name, as an adapter reads it. The map and the families
// are the page's own: they change at the next Set and must not be modified.
func (p *Page) Families() map[string]*dto.MetricFamily {
	if p.untouched {
		return p.earlyBy
	}
	return p.byName
}

// Gather returns the families in the order the engine prints them, for encoding as text. They are
// the page's own, as in Families.
func (p *Page) Gather() []*dto.MetricFamily {
	if p.untouched {
		return slices.Clone(p.early)
	}
	return slices.Clone(p.families)
}

// PressureFamilies names the families of an engine's page that carry the pressure the router reads
// (running and waiting requests, KV usage, in every version the page can print): what a "missing
// series" fault removes.
func PressureFamilies(engineName string) []string {
	switch engineName {
	case SGLang:
		return []string{sglRunning, sglWaiting, sglTokenUsage, sglUsedTokens, sglMaxTokens}
	case TRTLLM:
		return []string{trtRequests, trtKVBlocks}
	case LlamaCpp:
		return []string{llamaRunning, llamaWaiting, llamaKVRatio, llamaKVTokens}
	case TGI:
		return []string{tgiRunning, tgiWaiting, tgiBatchTokens, tgiTotalTokens}
	}
	return []string{vllmRunning, vllmWaiting, vllmKV, vllmKVLegacy}
}
