package adapter

import (
	"math"

	dto "github.com/prometheus/client_model/go"

	"github.com/anvil-llm/anvil/router/scheduler"
)

// CountSignalAll is CountSignal for an engine whose page names no model (llama.cpp, TGI): it sums
// every series of the family. Such a page belongs to the one model the member serves, which the
// readiness check verified from /v1/models; nothing on the page can confirm it.
func CountSignalAll(mf *dto.MetricFamily) scheduler.Metric {
	return countMetric(modelValues(mf, "", ""))
}

// FractionSignalAll is FractionSignal over every series of the family, for an engine whose page
// names no model (see CountSignalAll).
func FractionSignalAll(mf *dto.MetricFamily) scheduler.Metric {
	return fractionMetric(modelValues(mf, "", ""))
}

// SingleValue is the one series of a family whose page names no model: missing when the family
// is absent or empty, malformed when it has several series, is not a gauge, or is not finite.
func SingleValue(mf *dto.MetricFamily) scheduler.Metric {
	values, ok := modelValues(mf, "", "")
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
