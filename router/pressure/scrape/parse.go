package scrape

import (
	"bytes"
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// vLLM's pressure series. Names are matched whole: vllm:num_requests_waiting is a
// prefix of vllm:num_requests_waiting_by_reason, which must not be counted.
const (
	metricRunning  = "vllm:num_requests_running"
	metricWaiting  = "vllm:num_requests_waiting"
	metricKVUsage  = "vllm:kv_cache_usage_perc"
	metricKVLegacy = "vllm:gpu_cache_usage_perc" // vLLM < 0.10 name of metricKVUsage
	labelModelName = "model_name"
)

// Parse reads a Prometheus text exposition page and extracts the served model's
// pressure. It is pure and total: any input yields a pressure.Sample and a
// pressure.Class, never a panic.
//
// For each signal it keeps the series whose model_name label equals servedModel
// exactly and aggregates over the remaining labels (vLLM's engine label, one series
// per data-parallel engine): request counts are summed, KV usage takes the maximum
// engine, because a fraction does not add up and the fullest engine is the
// conservative reading. The KV signal is vllm:kv_cache_usage_perc, or
// vllm:gpu_cache_usage_perc only when the current name has no series for the model.
// HELP text and timestamps are ignored.
//
// Each signal is read on its own and comes out valid (its value), missing (no series
// for the model) or malformed (scheduler.MalformedMetric, no value: a family of the
// wrong metric type, a NaN, infinite, negative, fractional or out-of-range value,
// duplicate series, a repeated label name or too many series). The class follows:
// pressure.ClassOK when at least one signal is valid and none malformed, otherwise
// pressure.ClassUnknown. A page that does not parse at all carries no signal.
func Parse(body []byte, servedModel string) (pressure.Sample, pressure.Class) {
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
	s := pressure.Sample{
		Running: countSignal(families[metricRunning], servedModel),
		Waiting: countSignal(families[metricWaiting], servedModel),
		KVUsage: kvSignal(families[metricKVUsage], servedModel),
	}
	if !s.KVUsage.Present {
		s.KVUsage = kvSignal(families[metricKVLegacy], servedModel)
	}
	return s, classify(s)
}

// classify is the class of a parsed page's sample: usable when some signal is valid and
// none is malformed.
func classify(s pressure.Sample) pressure.Class {
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

// countSignal sums a request-count family over the model's series. Each value must
// be a finite non-negative integer and the sum at most scheduler.MaxRequestCount.
func countSignal(mf *dto.MetricFamily, servedModel string) scheduler.Metric {
	values, ok := modelValues(mf, servedModel)
	if !ok {
		return scheduler.MalformedMetric()
	}
	if len(values) == 0 {
		return scheduler.Metric{}
	}
	sum := 0.0
	for _, v := range values {
		if !(v >= 0 && v <= scheduler.MaxRequestCount) || math.Trunc(v) != v {
			return scheduler.MalformedMetric()
		}
		sum += v // at most 64 engines' worth of integers below 2^53: exact
	}
	if sum > scheduler.MaxRequestCount {
		return scheduler.MalformedMetric()
	}
	return scheduler.Metric{Value: sum, Present: true}
}

// kvSignal takes the largest engine's KV usage fraction; each must be in 0..1.
func kvSignal(mf *dto.MetricFamily, servedModel string) scheduler.Metric {
	values, ok := modelValues(mf, servedModel)
	if !ok {
		return scheduler.MalformedMetric()
	}
	if len(values) == 0 {
		return scheduler.Metric{}
	}
	high := 0.0
	for _, v := range values {
		if !(v >= 0 && v <= 1) {
			return scheduler.MalformedMetric()
		}
		high = max(high, v)
	}
	return scheduler.Metric{Value: high, Present: true}
}

// maxSeriesPerModel bounds how many series of one family a model may have; vLLM
// emits one per engine.
const maxSeriesPerModel = 64

// modelValues returns the values of mf's series labelled model_name=servedModel.
// It refuses (false) a family of the wrong type, a series with a repeated label
// name, two series with the same label set (summing them would double count) and
// more than maxSeriesPerModel series.
func modelValues(mf *dto.MetricFamily, servedModel string) ([]float64, bool) {
	if mf == nil {
		return nil, true
	}
	if t := mf.GetType(); t != dto.MetricType_GAUGE && t != dto.MetricType_UNTYPED {
		return nil, false
	}
	var values []float64
	var sigs []string
	for _, m := range mf.GetMetric() {
		model, sig, ok := seriesIdentity(m.GetLabel())
		if !ok {
			return nil, false
		}
		if model != servedModel {
			continue
		}
		if slices.Contains(sigs, sig) || len(values) == maxSeriesPerModel {
			return nil, false
		}
		sigs = append(sigs, sig)
		values = append(values, seriesValue(m))
	}
	return values, true
}

// seriesIdentity returns the model_name of a series (whether or not present) and a
// canonical signature of its full label set. A label name given twice is malformed.
func seriesIdentity(labels []*dto.LabelPair) (string, string, bool) {
	pairs := make([][2]string, 0, len(labels))
	model := ""
	hasModel := false
	for _, l := range labels {
		pairs = append(pairs, [2]string{l.GetName(), l.GetValue()})
		if l.GetName() == labelModelName {
			model, hasModel = l.GetValue(), true
		}
	}
	slices.SortFunc(pairs, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	var sig []byte
	for k, p := range pairs {
		if k > 0 && pairs[k-1][0] == p[0] {
			return "", "", false
		}
		sig = append(sig, p[0]...)
		sig = append(sig, 0)
		sig = append(sig, p[1]...)
		sig = append(sig, 0)
	}
	if !hasModel {
		// An unlabelled series belongs to no served model; "" never equals a valid
		// served model name, so callers skip it.
		return "", string(sig), true
	}
	return model, string(sig), true
}

func seriesValue(m *dto.Metric) float64 {
	if g := m.GetGauge(); g != nil {
		return g.GetValue()
	}
	return m.GetUntyped().GetValue()
}
