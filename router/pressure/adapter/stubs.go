package adapter

import (
	dto "github.com/prometheus/client_model/go"

	"github.com/anvil-llm/anvil/router/pressure"
)

// TODO(issue 28): the SGLang, TensorRT-LLM, llama.cpp and TGI adapters. Until they land every
// signal is missing, so such a tier's pressure is unknown, as before.

func ReadSGLang(map[string]*dto.MetricFamily, string) pressure.Sample   { return pressure.Sample{} }
func ReadTRTLLM(map[string]*dto.MetricFamily, string) pressure.Sample   { return pressure.Sample{} }
func ReadLlamaCpp(map[string]*dto.MetricFamily, string) pressure.Sample { return pressure.Sample{} }
func ReadTGI(map[string]*dto.MetricFamily, string) pressure.Sample      { return pressure.Sample{} }
