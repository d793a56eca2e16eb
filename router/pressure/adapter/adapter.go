package adapter

import (
	"errors"
	"slices"

	dto "github.com/prometheus/client_model/go"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// The engines a tier may name. VLLM is the default.
const (
	VLLM     = "vllm"
	SGLang   = "sglang"
	TRTLLM   = "trtllm"
	LlamaCpp = "llamacpp"
	TGI      = "tgi"
)

// ErrUnknownEngine is For's error for a name that is not one of Engines().
var ErrUnknownEngine = errors.New("adapter: unknown engine")

// Adapter reads the served model's pressure from one page's metric families, keyed by family name.
type Adapter func(families map[string]*dto.MetricFamily, servedModel string) pressure.Sample

var adapters = map[string]Adapter{
	VLLM:     ReadVLLM,
	SGLang:   ReadSGLang,
	TRTLLM:   ReadTRTLLM,
	LlamaCpp: ReadLlamaCpp,
	TGI:      ReadTGI,
}

// Engines lists the engine names in documentation order.
func Engines() []string { return []string{VLLM, SGLang, TRTLLM, LlamaCpp, TGI} }

// For returns the adapter of an engine name; "" is VLLM.
func For(engine string) (Adapter, error) {
	if engine == "" {
		engine = VLLM
	}
	a, ok := adapters[engine]
	if !ok {
		return nil, ErrUnknownEngine
	}
	return a, nil
}

// Valid reports whether engine names an adapter ("" included, as VLLM).
func Valid(engine string) bool { return engine == "" || slices.Contains(Engines(), engine) }

// Classify is the class of an adapted sample: usable when some signal is valid and none is
// malformed.
func Classify(s pressure.Sample) pressure.Class {
	valid := false
	for _, m := range [...]scheduler.Metric{s.Running, s.Waiting, s.KVUsage} {
		if m.Malformed {
			return pressure.ClassUnknown
		}
		valid = valid || m.Present
	}
	if !valid {
		return pressure.ClassUnknown
	}
	return pressure.ClassOK
}
