package capacity

import (
	"cmp"
	"slices"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/ident"
)

// TierSpec is what the configuration says one tier is: the expectation its admission snapshot is
// checked against. It holds IDs, kinds and ceilings only, never an endpoint or a credential.
type TierSpec struct {
	ID       string
	Kind     admission.Kind
	Strategy admission.Strategy // replica tiers only
	// MaxConcurrency is the effective tier ceiling (0 = none): the configured value, or in capacity
	// mode the sum of the member ceilings when none is configured.
	MaxConcurrency int64
	MaxWaiting     int          // the admission queue's bound, 0 = no queue
	Members        []MemberSpec // replica tiers only, in configuration order
}

// MemberSpec is one configured member: its ID and its ceiling (0 = none, round robin only).
type MemberSpec struct {
	ID             string
	MaxConcurrency int64
}

// Plan turns a validated configuration into the tier expectations, sorted by tier ID (the order of
// admission's snapshots and of both views).
func Plan(cfg config.Config) []TierSpec {
	tiers := cfg.Tiers()
	out := make([]TierSpec, 0, len(tiers))
	for _, t := range tiers {
		spec := TierSpec{ID: t.ID, Kind: admission.KindDirect, MaxConcurrency: t.EffectiveMaxConcurrency(),
			MaxWaiting: t.Queue.MaxWaiting}
		if t.Kind == config.KindReplica {
			spec.Kind = admission.KindReplica
			if t.Strategy == config.StrategyCapacity {
				spec.Strategy = admission.StrategyCapacity
			}
			for _, m := range t.Members {
				spec.Members = append(spec.Members, MemberSpec{ID: m.ID, MaxConcurrency: m.MaxConcurrency})
			}
		}
		out = append(out, spec)
	}
	slices.SortFunc(out, func(a, b TierSpec) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// capacityTier reports whether t is a capacity-mode replica tier: the tiers with telemetry and the
// spec's six gauges.
func (t TierSpec) capacityTier() bool {
	return t.Kind == admission.KindReplica && t.Strategy == admission.StrategyCapacity
}

// sortedMemberIDs returns the configured member IDs in ID order (the snapshots' order).
func (t TierSpec) sortedMemberIDs() []string {
	ids := make([]string, len(t.Members))
	for i, m := range t.Members {
		ids[i] = m.ID
	}
	slices.Sort(ids)
	return ids
}

// membersUsable reports whether the tier's membership can label series: 2-16 members with safe,
// unique IDs.
func (t TierSpec) membersUsable() bool {
	ids := t.sortedMemberIDs()
	if len(ids) < ident.MinMembers || len(ids) > ident.MaxMembers {
		return false
	}
	for i, id := range ids {
		if !ident.ValidID(id) || (i > 0 && ids[i-1] == id) {
			return false
		}
	}
	return true
}

// ceiling returns the configured ceiling of member id.
func (t TierSpec) ceiling(id string) (int64, bool) {
	for _, m := range t.Members {
		if m.ID == id {
			return m.MaxConcurrency, true
		}
	}
	return 0, false
}
