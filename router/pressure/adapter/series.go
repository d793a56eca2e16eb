package adapter

import (
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"

	"github.com/anvil-llm/anvil/router/scheduler"
)

// CountSignal sums a request-count family over the series whose modelLabel equals servedModel.
// Each value must be a finite non-negative integer and the sum at most
// scheduler.MaxRequestCount.
func CountSignal(mf *dto.MetricFamily, modelLabel, servedModel string) scheduler.Metric {
	return countMetric(modelValues(mf, modelLabel, servedModel))
}

// countMetric is the summed count of values as CountSignal reads them; ok false is malformed.
func countMetric(values []float64, ok bool) scheduler.Metric {
	if !ok {
		return scheduler.MalformedMetric()
	}
	if len(values) == 0 {
		return scheduler.Metric{}
	}
	sum := 0.0
	for _, v := range values {
		if !validCount(v) {
			return scheduler.MalformedMetric()
		}
		sum += v // at most 64 engines' worth of integers below 2^53: exact
	}
	if sum > scheduler.MaxRequestCount {
		return scheduler.MalformedMetric()
	}
	return scheduler.Metric{Value: sum, Present: true}
}

// validCount reports whether v is a finite non-negative integer of at most MaxRequestCount.
func validCount(v float64) bool {
	return v >= 0 && v <= scheduler.MaxRequestCount && math.Trunc(v) == v
}

// FractionSignal takes the largest series' fraction over the model's series; each must be in 0..1.
func FractionSignal(mf *dto.MetricFamily, modelLabel, servedModel string) scheduler.Metric {
	return fractionMetric(modelValues(mf, modelLabel, servedModel))
}

// fractionMetric is the largest of values as FractionSignal reads them; ok false is malformed.
func fractionMetric(values []float64, ok bool) scheduler.Metric {
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

// modelValues returns the values of mf's series labelled modelLabel=servedModel.
// It refuses (false) a family of the wrong type, a series with a repeated label
// name, two series with the same label set (summing them would double count) and
// more than maxSeriesPerModel series.
func modelValues(mf *dto.MetricFamily, modelLabel, servedModel string) ([]float64, bool) {
	var values []float64
	ok := eachSeries(mf, modelLabel, servedModel, func(_ []*dto.LabelPair, v float64) {
		values = append(values, v)
	})
	if !ok {
		return nil, false
	}
	return values, true
}

// eachSeries calls f with the labels and value of each of mf's series labelled
// modelLabel=servedModel, or of every series when modelLabel is "" (an engine whose page names
// no model). It refuses (false, after calling f for some series) what modelValues refuses; a nil
// family has no series.
func eachSeries(mf *dto.MetricFamily, modelLabel, servedModel string, f func([]*dto.LabelPair, float64)) bool {
	if mf == nil {
		return true
	}
	if t := mf.GetType(); t != dto.MetricType_GAUGE && t != dto.MetricType_UNTYPED {
		return false
	}
	var sigs []string
	for _, m := range mf.GetMetric() {
		model, sig, ok := seriesIdentity(m.GetLabel(), modelLabel)
		if !ok {
			return false
		}
		if modelLabel != "" && model != servedModel {
			continue
		}
		if slices.Contains(sigs, sig) || len(sigs) == maxSeriesPerModel {
			return false
		}
		sigs = append(sigs, sig)
		f(m.GetLabel(), seriesValue(m))
	}
	return true
}

// seriesIdentity returns the modelLabel value of a series (whether or not present) and a
// canonical signature of its full label set. A label name given twice is malformed.
func seriesIdentity(labels []*dto.LabelPair, modelLabel string) (string, string, bool) {
	pairs := make([][2]string, 0, len(labels))
	model := ""
	hasModel := false
	for _, l := range labels {
		pairs = append(pairs, [2]string{l.GetName(), l.GetValue()})
		if l.GetName() == modelLabel {
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
