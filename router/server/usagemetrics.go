package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/decisionlog"
)

// Usage accounting: the members' own token counts (relay.Result.Usage, on the decision record) per
// tier, member and caller label. The labels are bounded by the configuration: tier and member are
// configured IDs (member "" for a direct tier), caller is callerOf's label (a configured label, or
// "other"), type is prompt or completion. An upstream attempt whose member reported no usage adds
// nothing to the token counter and one to the unknown counter instead: its tokens are unknown, never
// estimated.

// Types of anvil_router_usage_tokens_total.
const (
	usagePrompt     = "prompt"
	usageCompletion = "completion"
)

// maxSeededUsageSets bounds the (tier, member, caller) label sets initialised at startup and on
// reload, so that rate() sees zeros before the first answer: at most this many sets, each with three
// series (prompt, completion, unknown). A configuration with more (tiers x members x caller labels)
// seeds none; its series then appear with their first answer.
const maxSeededUsageSets = 4096

// usageMetrics holds the two usage families.
type usageMetrics struct {
	tokens  *prometheus.CounterVec // tier, member, caller, type
	unknown *prometheus.CounterVec // tier, member, caller
}

func newUsageMetrics(reg *prometheus.Registry) usageMetrics {
	u := usageMetrics{
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "anvil_router_usage_tokens_total",
			Help: "Tokens the members reported in their answers' usage, by tier, member, caller label and type (prompt, completion)."},
			[]string{"tier", "member", "caller", "type"}),
		unknown: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "anvil_router_usage_unknown_total",
			Help: "Upstream attempts whose member reported no usage (or failed before it did): their tokens are not in anvil_router_usage_tokens_total."},
			[]string{"tier", "member", "caller"}),
	}
	reg.MustRegister(u.tokens, u.unknown)
	return u
}

// used counts one finished request's usage from its record; a request without an upstream attempt
// has none to count.
func (u usageMetrics) used(r decisionlog.Record, caller string) {
	if r.Attempts != 1 {
		return
	}
	tier, member := idLabel(r.Tier), idLabel(r.Member)
	if !r.Usage.Reported {
		u.unknown.WithLabelValues(tier, member, caller).Inc()
		return
	}
	u.tokens.WithLabelValues(tier, member, caller, usagePrompt).Add(float64(r.Usage.Prompt))
	u.tokens.WithLabelValues(tier, member, caller, usageCompletion).Add(float64(r.Usage.Completion))
}

// seed initialises every series of cfg's tiers and members for callers, within maxSeededUsageSets.
func (u usageMetrics) seed(cfg config.Config, callers []string) {
	type target struct{ tier, member string }
	var targets []target
	for _, t := range cfg.Tiers() {
		if t.Kind == config.KindDirect {
			targets = append(targets, target{t.ID, ""})
		}
		for _, m := range t.Members {
			targets = append(targets, target{t.ID, m.ID})
		}
	}
	if len(targets)*len(callers) > maxSeededUsageSets {
		return
	}
	for _, tg := range targets {
		for _, c := range callers {
			u.tokens.WithLabelValues(tg.tier, tg.member, c, usagePrompt)
			u.tokens.WithLabelValues(tg.tier, tg.member, c, usageCompletion)
			u.unknown.WithLabelValues(tg.tier, tg.member, c)
		}
	}
}
