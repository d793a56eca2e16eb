package adapter

import (
	"math"

	dto "github.com/prometheus/client_model/go"

	"github.com/anvil-llm/anvil/router/scheduler"
)

// CountSignalAll is CountSignal for an engine whose page names no model (llama.cpp, TGI): the
// family's one series, whose labels must be none. Such a page belongs to the one model the member
// serves, which the readiness check verified from /v1/models; nothing on the page can confirm it.
// A labelled series is refused (malformed), not skipped and not counted: these engines print their
// pressure series without labels, so a label (model="other" from llama-server's multi-model
// router mode, a shard, a relabelling proxy) means a page of several models or parts whose share
// is the served model's cannot be told, and summing or skipping could count another model's load.
func CountSignalAll(mf *dto.MetricFamily) scheduler.Metric {
	return countMetric(unlabelledValues(mf))
}

// FractionSignalAll is FractionSignal over the family's one unlabelled series, for an engine whose
// page names no model (see CountSignalAll).
func FractionSignalAll(mf *dto.MetricFamily) scheduler.Metric {
	return fractionMetric(unlabelledValues(mf))
}

// SingleValue is the one series of a family whose page names no model: missing when the family
// is absent or empty, malformed when it has several series or a labelled one (see CountSignalAll),
// is not a gauge, or is not finite.
func SingleValue(mf *dto.MetricFamily) scheduler.Metric {
	values, ok := unlabelledValues(mf)
	switch {
	case !ok || len(values) > 1:
		return scheduler.MalformedMetric()
	case len(values) == 0:
		return scheduler.Metric{}
	case math.IsNaN(values[0]) || math.IsInf(values[0], 0):
		return scheduler.MalformedMetric()
	}
	return scheduler.Metric{Value: values[0], Present: true}
}

// unlabelledValues is modelValues over every series of mf, refusing (false) any series that has
// a label with a value (an empty value is the label's absence in the exposition format).
func unlabelledValues(mf *dto.MetricFamily) ([]float64, bool) {
	var values []float64
	labelled := false
	ok := eachSeries(mf, "", "", func(labels []*dto.LabelPair, v float64) {
		for _, l := range labels {
			labelled = labelled || l.GetValue() != ""
		}
		values = append(values, v)
	})
	if !ok || labelled {
		return nil, false
	}
	return values, true
}

// BlockFraction turns a used/total pair (KV blocks or tokens) into a fraction in 0..1. Either
// side missing is a missing fraction; either malformed, a total that is not positive, a used
// figure that is negative, fractional or larger than the total is malformed, never a division
// by zero or a fraction above 1.
func BlockFraction(used, total scheduler.Metric) scheduler.Metric {
	if used.Malformed || total.Malformed {
		return scheduler.MalformedMetric()
	}
	if !used.Present || !total.Present {
		return scheduler.Metric{}
	}
	u, t := used.Value, total.Value
	if !(t > 0) || math.IsInf(t, 0) || !(u >= 0) || u > t || math.Trunc(u) != u || math.Trunc(t) != t {
		return scheduler.MalformedMetric()
	}
	return scheduler.Metric{Value: u / t, Present: true}
}

// ReservationFraction is BlockFraction for an upper estimate of what a batch holds rather than a
// count of what it holds: a used figure above the total is clamped to a full cache, not refused.
// TGI's tgi_batch_current_max_tokens counts a shared prefix's tokens once per request that
// reuses it (prefix caching; server/text_generation_server/models/flash_causal_lm.py), so it can
// exceed tgi_batch_max_total_tokens on a member whose counts are perfectly valid.
func ReservationFraction(used, total scheduler.Metric) scheduler.Metric {
	if used.Present && total.Present && !used.Malformed && !total.Malformed &&
		total.Value > 0 && used.Value > total.Value && !math.IsInf(used.Value, 0) && math.Trunc(used.Value) == used.Value {
		used.Value = total.Value
	}
	return BlockFraction(used, total)
}
