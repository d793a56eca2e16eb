package config

import (
	"fmt"
	"strings"

	"github.com/anvil-llm/anvil/router/health"
	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/pressure/adapter"
)

// replica validates the qualified-replica contract at load: one declared
// host that every member endpoint is on, one served model and one declared
// provenance (tier fields, so they cannot differ per member), 2-16 members
// with unique IDs and unique endpoints, and the ceiling rules of the
// chosen strategy.
func (b *tierBuilder) replica(rt TierDoc, path string, t *Tier) error {
	if rt.Endpoint != nil {
		return invalid(path+".endpoint", "only allowed on direct tiers")
	}
	if rt.Host == nil {
		return invalid(path+".host", "is required")
	}
	host, ok := canonicalHost(*rt.Host)
	if !ok {
		return invalid(path+".host", "must be a host name or IP address")
	}
	t.Host = host
	if rt.Provenance == nil {
		return invalid(path+".provenance", "is required")
	}
	if t.Provenance = *rt.Provenance; !validText(t.Provenance) {
		return invalid(path+".provenance", "must be 1-256 printable ASCII characters without leading or trailing spaces")
	}
	t.Strategy = StrategyRoundRobin
	if rt.ReplicaStrategy != nil {
		switch s := Strategy(*rt.ReplicaStrategy); s {
		case StrategyRoundRobin, StrategyCapacity:
			t.Strategy = s
		default:
			return invalid(path+".replica_strategy", "must be round_robin or capacity")
		}
	}
	if t.Engine, ok = engine(rt.Engine); !ok {
		return invalid(path+".engine", engineRule)
	}
	var err error
	if t.PassiveHealth, err = buildPassiveHealth(rt.PassiveHealth, path+".passive_health"); err != nil {
		return err
	}
	if len(rt.Members) < ident.MinMembers || len(rt.Members) > ident.MaxMembers {
		return invalidf(path+".members", "must have %d-%d members", ident.MinMembers, ident.MaxMembers)
	}
	if err := b.members(rt.Members, path, t); err != nil {
		return err
	}
	return checkAggregate(path, t)
}

// engineRule is the fixed message of a bad engine: the rejected value is never echoed.
var engineRule = "must be one of " + strings.Join(adapter.Engines(), ", ")

// engine resolves a replica tier's engine key: absent is vLLM, today's only reading.
func engine(raw *string) (string, bool) {
	if raw == nil {
		return adapter.VLLM, true
	}
	if *raw == "" || !adapter.Valid(*raw) {
		return "", false
	}
	return *raw, true
}

func (b *tierBuilder) members(raws []MemberDoc, path string, t *Tier) error {
	ids := make(map[string]bool, len(raws))
	t.Members = make([]Member, 0, len(raws))
	for j, rm := range raws {
		mp := fmt.Sprintf("%s.members[%d]", path, j)
		if rm.ID == nil {
			return invalid(mp+".id", "is required")
		}
		if !ident.ValidID(*rm.ID) {
			return invalid(mp+".id", idRule)
		}
		if ids[*rm.ID] {
			return invalid(mp+".id", "duplicate member id")
		}
		ids[*rm.ID] = true
		if rm.Endpoint == nil {
			return invalid(mp+".endpoint", "is required")
		}
		ep, err := b.endpoint(*rm.Endpoint, mp+".endpoint")
		if err != nil {
			return err
		}
		if ep.host != t.Host {
			return invalid(mp+".endpoint", "host must equal the tier host")
		}
		ceiling, err := intIn(rm.MaxConcurrency, 0, ident.MinCeiling, ident.MaxCeiling, mp+".max_concurrency")
		if err != nil {
			return err
		}
		if ceiling == 0 && t.Strategy == StrategyCapacity {
			return invalid(mp+".max_concurrency", "is required in capacity mode")
		}
		t.Members = append(t.Members, Member{ID: *rm.ID, Endpoint: ep.normalized, MaxConcurrency: ceiling})
	}
	return nil
}

// checkAggregate refuses a tier ceiling above the sum of member ceilings
// when every member declares one (always so in capacity mode): the extra
// could never be used, and capacity reporting would overstate the tier.
func checkAggregate(path string, t *Tier) error {
	if t.MaxConcurrency == 0 {
		return nil
	}
	var sum int64
	for _, m := range t.Members {
		if m.MaxConcurrency == 0 {
			return nil
		}
		sum += m.MaxConcurrency
	}
	if t.MaxConcurrency > sum {
		return invalid(path+".max_concurrency", "must not exceed the sum of member max_concurrency")
	}
	return nil
}

// buildAliases resolves each alias to an existing tier.
func buildAliases(raws []AliasDoc, tierIDs map[string]int) ([]Alias, map[string]int, error) {
	if len(raws) == 0 {
		return nil, nil, invalid("aliases", "at least one alias is required")
	}
	if len(raws) > maxAliases {
		return nil, nil, invalidf("aliases", "at most %d aliases", maxAliases)
	}
	aliases := make([]Alias, 0, len(raws))
	index := make(map[string]int, len(raws))
	for i, ra := range raws {
		path := fmt.Sprintf("aliases[%d]", i)
		if ra.ID == nil {
			return nil, nil, invalid(path+".id", "is required")
		}
		if !ident.ValidAlias(*ra.ID) {
			return nil, nil, invalid(path+".id", aliasRule)
		}
		if _, dup := index[*ra.ID]; dup {
			return nil, nil, invalid(path+".id", "duplicate alias")
		}
		if ra.Tier == nil {
			return nil, nil, invalid(path+".tier", "is required")
		}
		ti, ok := tierIDs[*ra.Tier]
		if !ok {
			return nil, nil, invalid(path+".tier", "unknown tier")
		}
		index[*ra.ID] = ti
		aliases = append(aliases, Alias{ID: *ra.ID, Tier: *ra.Tier})
	}
	return aliases, index, nil
}

// buildPassiveHealth validates a replica tier's passive_health section; absent means the defaults,
// enabled.
func buildPassiveHealth(r *PassiveHealthDoc, path string) (PassiveHealth, error) {
	if r == nil {
		r = &PassiveHealthDoc{}
	}
	ph := PassiveHealth{Enabled: true}
	if r.Enabled != nil {
		ph.Enabled = *r.Enabled
	}
	if r.Count429 != nil {
		ph.Count429 = *r.Count429
	}
	n, err := intIn(r.ConsecutiveFailures, health.DefaultConsecutiveFailures, 1, health.MaxConsecutiveFailures, path+".consecutive_failures")
	if err != nil {
		return PassiveHealth{}, err
	}
	ph.ConsecutiveFailures = int(n)
	if ph.BaseEjection, err = durIn(r.BaseEjection, health.DefaultBaseEjection, health.MinEjection, health.MaxBaseEjection, path+".base_ejection"); err != nil {
		return PassiveHealth{}, err
	}
	if ph.MaxEjection, err = durIn(r.MaxEjection, max(health.DefaultMaxEjection, ph.BaseEjection), health.MinEjection, health.MaxMaxEjection, path+".max_ejection"); err != nil {
		return PassiveHealth{}, err
	}
	if ph.MaxEjection < ph.BaseEjection {
		return PassiveHealth{}, invalid(path+".max_ejection", "must not be below base_ejection")
	}
	pct, err := intIn(r.MaxEjectedPercent, health.DefaultMaxEjectedPercent, 0, 100, path+".max_ejected_percent")
	if err != nil {
		return PassiveHealth{}, err
	}
	ph.MaxEjectedPercent = int(pct)
	return ph, nil
}
