package adapter

import (
	"slices"

	dto "github.com/prometheus/client_model/go"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// Columns of the TensorRT-LLM tables, in the order tabulate is asked for them.
const (
	trtColScheduled = iota
	trtColActive
	trtColWaiting
)

const (
	trtColFraction = iota
	trtColUsed
	trtColMax
)

// ReadTRTLLM keeps the series whose model label equals servedModel exactly or, when the served
// model is one of the steps of Triton's TensorRT-LLM model repository (ensemble or
// tensorrt_llm_bls, all_models/inflight_batcher_llm) and the page has none for it, those of the
// model named tensorrt_llm: those steps run their requests on that one backend model, and the
// readiness rule lets a member list only such steps beside the served model, so the tensorrt_llm
// executor is the served model's. Any other served model never borrows tensorrt_llm's series, and
// a page whose nv_trt_llm_* series name only another Triton model carries no signal. Each loaded
// version of the model (label version) has its own executor: the running requests are
// request_type="scheduled" summed over versions, the waiting ones request_type="waiting" summed
// (older backends without it: active minus scheduled, which is how the backend computes it), and
// KV usage is the fullest version's kv_cache_block_type="fraction", or used/max blocks where the
// backend prints no fraction. A max of 0 blocks is no KV figure (the backend has no KV cache
// manager, or no figures yet; its fraction is then a placeholder 0): the KV signal is missing.
// A version missing a series the others have, active below scheduled and used above max are
// malformed.
func ReadTRTLLM(families map[string]*dto.MetricFamily, servedModel string) pressure.Sample {
	if slices.Contains(tritonStepModels[:], servedModel) &&
		!names(families[trtRequests], servedModel) && !names(families[trtKVBlocks], servedModel) {
		servedModel = trtBackendModel
	}
	var s pressure.Sample
	req, ok := tabulate(families[trtRequests], trtModel, servedModel, trtVersion, trtRequestType,
		trtScheduled, trtActive, trtWaitingType)
	if ok {
		s.Running = sumColumn(req, trtColScheduled)
		s.Waiting = trtWaiting(req)
	} else {
		s.Running, s.Waiting = scheduler.MalformedMetric(), scheduler.MalformedMetric()
	}
	kv, ok := tabulate(families[trtKVBlocks], trtModel, servedModel, trtVersion, trtKVBlockType,
		trtKVFraction, trtKVUsed, trtKVMax)
	if ok {
		s.KVUsage = trtKV(kv)
	} else {
		s.KVUsage = scheduler.MalformedMetric()
	}
	return s
}

// trtWaiting is the waiting column where the backend prints it, else active - scheduled per
// version.
func trtWaiting(rows []row) scheduler.Metric {
	if covered(rows, trtColWaiting) != coveredNone {
		return sumColumn(rows, trtColWaiting)
	}
	active, scheduled := sumColumn(rows, trtColActive), sumColumn(rows, trtColScheduled)
	if !active.Present || !scheduled.Present || active.Malformed || scheduled.Malformed {
		return worse(active, scheduled)
	}
	values := make([]float64, len(rows))
	for i, r := range rows {
		if r.vals[trtColActive] < r.vals[trtColScheduled] {
			return scheduler.MalformedMetric()
		}
		values[i] = r.vals[trtColActive] - r.vals[trtColScheduled]
	}
	return countMetric(values, true)
}

// trtKV is the fullest version's KV fraction: the backend's own fraction, else used/max blocks.
// Every version with a KV cache (max not 0) must yield one, or none does.
func trtKV(rows []row) scheduler.Metric {
	var out scheduler.Metric
	present, cacheless := 0, 0
	for _, r := range rows {
		if r.has[trtColMax] && r.vals[trtColMax] == 0 {
			cacheless++ // no KV figure, by the backend's own account: not a lost series
			continue
		}
		m := trtVersionKV(r)
		if m.Malformed {
			return m
		}
		if m.Present {
			present++
			out = scheduler.Metric{Value: max(out.Value, m.Value), Present: true}
		}
	}
	if present != 0 && present != len(rows)-cacheless {
		return scheduler.MalformedMetric() // one version has a KV figure and another none
	}
	return out
}

// trtVersionKV is one version's KV fraction: its own fraction, else used/max. trtKV has left out
// a version whose max is 0 blocks: its fraction is a placeholder 0 whatever the cache holds, and
// used/0 has no meaning.
func trtVersionKV(r row) scheduler.Metric {
	if r.has[trtColFraction] {
		return fractionMetric([]float64{r.vals[trtColFraction]}, true)
	}
	return BlockFraction(cell(r, trtColUsed), cell(r, trtColMax))
}

// cell is one row's kind k as a metric: missing when the row lacks it.
func cell(r row, k int) scheduler.Metric {
	if !r.has[k] {
		return scheduler.Metric{}
	}
	return scheduler.Metric{Value: r.vals[k], Present: true}
}

// worse is the less usable of two signals: malformed over missing over valid.
func worse(a, b scheduler.Metric) scheduler.Metric {
	switch {
	case a.Malformed || b.Malformed:
		return scheduler.MalformedMetric()
	case !a.Present || !b.Present:
		return scheduler.Metric{}
	}
	return a
}

// names reports whether some series of mf carries model=servedModel.
func names(mf *dto.MetricFamily, servedModel string) bool {
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == trtModel && l.GetValue() == servedModel {
				return true
			}
		}
	}
	return false
}
