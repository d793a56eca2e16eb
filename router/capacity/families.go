package capacity

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/anvil-llm/anvil/router/admission"
)

// The admission gauges of every tier, whatever its strategy, in one family per concept with a
// strategy label (capacity, round_robin, direct), under the anvil_router_admission_ prefix: a panel
// reads one family where it used to read the spec's capacity family and the plain one. The spec's
// families (T011) stay byte for byte beside them: anvil_router_replica_* for capacity tiers,
// anvil_router_tier_* and anvil_router_member_* (no strategy label) for direct and round-robin ones.

// Strategy label values.
const (
	strategyDirect     = "direct"
	strategyRoundRobin = "round_robin"
	strategyCapacity   = "capacity"
)

// strategyLabel is the strategy label of a tier of kind k and strategy s: "direct" for a direct
// tier, else the replica strategy's name; "" for a kind or strategy the admission package does not
// define (such a tier labels no series).
func strategyLabel(k admission.Kind, s admission.Strategy) string {
	switch {
	case k == admission.KindDirect:
		return strategyDirect
	case k != admission.KindReplica:
		return ""
	case s == admission.StrategyCapacity:
		return strategyCapacity
	case s == admission.StrategyRoundRobin:
		return strategyRoundRobin
	}
	return ""
}

func unifiedDescs(d *descs) {
	tier, member := []string{"tier", "strategy"}, []string{"tier", "member", "strategy"}
	g := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	d.tierActive2 = g("anvil_router_admission_tier_active_requests", "Active leases of a tier (for a replica tier the sum of its members').", tier)
	d.tierCeiling2 = g("anvil_router_admission_tier_max_concurrency", "Effective ceiling of a tier; absent when it has none.", tier)
	d.memberActive2 = g("anvil_router_admission_member_active_requests", "Active leases of a member of a replica tier.", member)
	d.memberCeiling2 = g("anvil_router_admission_member_max_concurrency", "Ceiling of a member of a replica tier; absent when it has none.", member)
	d.pressureRatio = g("anvil_router_replica_member_pressure_ratio", "Normalized upstream pressure of a member as a ratio (pressure_ppm / 1e6: 1 is a full member, above 1 an overloaded one); present only while its telemetry is fresh.",
		[]string{"tier", "member"})
	d.tierInfo = g("anvil_router_tier_info", "Always 1 for every configured tier, with its kind and strategy: the series every tier has, whatever its state.",
		[]string{"tier", "kind", "strategy"})
}

// unified emits an available tier's admission gauges in the strategy-labelled families.
func (c *Collector) unified(e emitter, t Tier) {
	strategy := strategyLabel(t.Kind, t.Strategy)
	if strategy == "" {
		return
	}
	e.gauge(c.d.tierActive2, float64(t.Active), t.ID, strategy)
	if t.MaxConcurrency > 0 {
		e.gauge(c.d.tierCeiling2, float64(t.MaxConcurrency), t.ID, strategy)
	}
	for _, m := range t.Members {
		e.gauge(c.d.memberActive2, float64(m.Active), t.ID, m.ID, strategy)
		if m.MaxConcurrency > 0 {
			e.gauge(c.d.memberCeiling2, float64(m.MaxConcurrency), t.ID, m.ID, strategy)
		}
	}
}

// info emits anvil_router_tier_info for every configured tier with a safe, unique ID, read from the
// plan alone: present while the tier's admission is unavailable too.
func (c *Collector) info(e emitter) {
	for _, spec := range shown(c.plan) {
		if strategy := strategyLabel(spec.Kind, spec.Strategy); strategy != "" {
			e.gauge(c.d.tierInfo, 1, spec.ID, spec.Kind.String(), strategy)
		}
	}
}
