package server

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// The fair body budget's metrics. The caller label is callerOf's (auth.callers' labels,
// "caller-1".."caller-32", "other"): bounded by the configuration, never by what a request says.

// Reasons of anvil_router_body_refusals_total.
const (
	bodyRefusedShare   = "caller_share" // the caller's bodies held its share (503 caller_body_share_exhausted)
	bodyRefusedBudget  = "budget"       // the whole budget was held (503 body_budget_exhausted)
	bodyRefusedTooSlow = "too_slow"     // cut for the minimum upload rate (408 upload_too_slow)
	// A held audio file's disk (limits.max_spill_bytes): the spill budget was full (503
	// spill_budget_exhausted) or the caller's held files held its share of it (503
	// caller_spill_share_exhausted).
	bodyRefusedSpill      = "spill"
	bodyRefusedSpillShare = "spill_share"
)

var bodyRefusalReasons = []string{bodyRefusedShare, bodyRefusedBudget, bodyRefusedTooSlow, bodyRefusedSpill, bodyRefusedSpillShare}

func newBodyRefusals() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "anvil_router_body_refusals_total",
		Help: "Request bodies refused by the in-flight body budget or the spill budget, or cut for the minimum upload rate, by caller and reason (caller_share, budget, too_slow, spill, spill_share)."},
		[]string{"caller", "reason"})
}

// bodyRefused counts one refused or cut body of caller.
func (m *metrics) bodyRefused(caller, reason string) {
	m.bodyRefusals.WithLabelValues(caller, reason).Inc()
}

// seedCallers makes every caller label present with every reason, so a dashboard sees zeros before
// the first refusal, and deletes the body-refusal and usage series of the labels the previous
// generation had and this one does not.
func (m *metrics) seedCallers(labels []string) {
	m.seeded.mu.Lock()
	defer m.seeded.mu.Unlock()
	for _, old := range m.seeded.callers {
		if !slices.Contains(labels, old) {
			l := prometheus.Labels{"caller": old}
			m.bodyRefusals.DeletePartialMatch(l)
			m.usage.tokens.DeletePartialMatch(l)
			m.usage.unknown.DeletePartialMatch(l)
		}
	}
	m.seeded.callers = slices.Clone(labels)
	for _, c := range labels {
		for _, r := range bodyRefusalReasons {
			m.bodyRefusals.WithLabelValues(c, r)
		}
	}
}

// heldCollector reports, at scrape time, the bytes each caller's bodies hold in the budget now, read
// from the generation in force.
type heldCollector struct {
	desc *prometheus.Desc
	s    *Server
}

func newHeldCollector(s *Server) heldCollector {
	return heldCollector{s: s, desc: prometheus.NewDesc("anvil_router_body_budget_held_bytes",
		"Bytes of the in-flight body budget the caller's request bodies hold now.", []string{"caller"}, nil)}
}

func (h heldCollector) Describe(ch chan<- *prometheus.Desc) { ch <- h.desc }

func (h heldCollector) Collect(ch chan<- prometheus.Metric) {
	g := h.s.current()
	labels := g.labelSet()
	held := make(map[string]int64, len(labels))
	for i, hd := range g.holders {
		held[g.labels[i]] += hd.held()
	}
	held[otherCaller] += h.s.unknownCaller.held()
	for _, l := range labels {
		ch <- prometheus.MustNewConstMetric(h.desc, prometheus.GaugeValue, float64(held[l]), l)
	}
}

// newSpoolGauge reports the bytes of held audio files on disk now (the spool's open files), 0 when
// the spool directory is unusable.
func newSpoolGauge(s *Server) prometheus.GaugeFunc {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "anvil_router_spool_bytes",
		Help: "Bytes of audio files held before their model field that are on disk in the spool now."},
		func() float64 { return float64(s.spool.Bytes()) })
}
