package scrape

import (
	"bytes"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/adapter"
)

// Parse reads a Prometheus text exposition page of a vLLM member and extracts the served model's
// pressure: ParseWith(adapter.ReadVLLM, ...).
func Parse(body []byte, servedModel string) (pressure.Sample, pressure.Class) {
	return ParseWith(adapter.ReadVLLM, body, servedModel)
}

// ParseWith reads a Prometheus text exposition page and hands its families to an engine's
// adapter, which extracts the served model's pressure. It is pure and total: any input yields a
// pressure.Sample and a pressure.Class, never a panic.
//
// Each signal is read on its own and comes out valid (its value), missing (no series
// for the model) or malformed (scheduler.MalformedMetric, no value: a family of the
// wrong metric type, a NaN, infinite, negative, fractional or out-of-range value,
// duplicate series, a repeated label name or too many series). The class follows:
// pressure.ClassOK when at least one signal is valid and none malformed, otherwise
// pressure.ClassUnknown. A page that does not parse at all carries no signal.
// HELP text and timestamps are ignored.
func ParseWith(read adapter.Adapter, body []byte, servedModel string) (pressure.Sample, pressure.Class) {
	if servedModel == "" {
		return pressure.Sample{}, pressure.ClassUnknown
	}
	// UTF-8 validation accepts every legacy name (vLLM's colons included) and also
	// quoted UTF-8 names elsewhere on the page, so an exotic unrelated series does
	// not make the whole page unusable.
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return pressure.Sample{}, pressure.ClassUnknown
	}
	s := read(families, servedModel)
	return s, adapter.Classify(s)
}
