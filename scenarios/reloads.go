package scenarios

import (
	"fmt"
	"slices"
	"time"

	"github.com/anvil-llm/anvil/engine/profile"
	"github.com/anvil-llm/anvil/router/ident"
)

// Bounds of a scenario's reloads.
const (
	MaxReloads = 64
	MaxChanges = 32 // per reload
	// MaxAllMembers bounds the members a scenario ever configures, added ones included: the
	// simulator's request records name a member in one byte.
	MaxAllMembers = 64
)

// validateReloads replays the reloads in order against the tier's membership: every change names
// the scenario's tier and a member configured at that point (earlier changes of the same reload
// applied), every ceiling is 1-100000, an added member's ID is new to the scenario, and each reload
// leaves the tier with 2-16 members. Defaults of added members are applied in place.
func (s *Scenario) validateReloads() error {
	if len(s.Reloads) > MaxReloads {
		return invalidf("reloads", "at most %d reloads", MaxReloads)
	}
	current := slices.Clone(s.Tier.Members)
	var seen []string // every member ID configured so far
	for _, m := range current {
		seen = append(seen, m.ID)
	}
	for i := range s.Reloads {
		r := &s.Reloads[i]
		path := fmt.Sprintf("reloads[%d]", i)
		if r.At <= 0 || r.At >= s.Duration {
			return invalid(path+".at", "must be within the run, after its start and before its end")
		}
		if i > 0 && r.At <= s.Reloads[i-1].At {
			return invalid(path+".at", "must be after the previous reload's at (reloads are in time order)")
		}
		if len(r.Changes) == 0 || len(r.Changes) > MaxChanges {
			return invalidf(path+".changes", "must have 1-%d changes", MaxChanges)
		}
		for j := range r.Changes {
			var err error
			if current, err = s.applyChange(&r.Changes[j], fmt.Sprintf("%s.changes[%d]", path, j), current, &seen); err != nil {
				return err
			}
		}
		if len(current) < ident.MinMembers || len(current) > ident.MaxMembers {
			return invalidf(path+".changes", "must leave the tier with %d-%d members", ident.MinMembers, ident.MaxMembers)
		}
	}
	return nil
}

// applyChange validates one change against the membership current and returns the membership
// after it; seen lists the member IDs the scenario has configured so far.
func (s *Scenario) applyChange(c *Change, path string, current []Member, seen *[]string) ([]Member, error) {
	set := 0
	for _, p := range []bool{c.MemberCeiling != nil, c.AddMember != nil, c.RemoveMember != nil} {
		if p {
			set++
		}
	}
	if set != 1 {
		return nil, invalid(path, "must set exactly one of member_ceiling, add_member, remove_member")
	}
	find := func(id string) int { return slices.IndexFunc(current, func(m Member) bool { return m.ID == id }) }
	switch {
	case c.MemberCeiling != nil:
		mc := c.MemberCeiling
		p := path + ".member_ceiling"
		if err := s.reloadTier(p, &mc.Tier); err != nil {
			return nil, err
		}
		k := find(mc.Member)
		if k < 0 {
			return nil, invalid(p+".member", "is required: a member configured at this reload")
		}
		if err := reloadCeiling(p, mc.MaxConcurrency); err != nil {
			return nil, err
		}
		current = slices.Clone(current)
		current[k].MaxConcurrency = mc.MaxConcurrency
	case c.AddMember != nil:
		a := c.AddMember
		p := path + ".add_member"
		if err := s.reloadTier(p, &a.Tier); err != nil {
			return nil, err
		}
		m := a.Member()
		if err := m.validate(p, current); err != nil {
			return nil, err
		}
		if slices.Contains(*seen, a.ID) {
			return nil, invalid(p+".id", "was used by a removed member: an added member needs an ID new to the scenario")
		}
		if err := reloadCeiling(p, m.MaxConcurrency); err != nil {
			return nil, err
		}
		if *seen = append(*seen, a.ID); len(*seen) > MaxAllMembers {
			return nil, invalidf(p, "at most %d members over the whole scenario", MaxAllMembers)
		}
		a.Profile, a.StepScale = m.Profile, m.StepScale
		current = append(slices.Clone(current), m)
	default:
		rm := c.RemoveMember
		p := path + ".remove_member"
		if err := s.reloadTier(p, &rm.Tier); err != nil {
			return nil, err
		}
		k := find(rm.Member)
		if k < 0 {
			return nil, invalid(p+".member", "is required: a member configured at this reload")
		}
		current = slices.Delete(slices.Clone(current), k, k+1)
	}
	return current, nil
}

// reloadTier defaults a change's tier to the scenario's and refuses any other.
func (s *Scenario) reloadTier(path string, tier *string) error {
	if *tier == "" {
		*tier = s.Tier.ID
	}
	if *tier != s.Tier.ID {
		return invalid(path+".tier", "names no tier of this scenario")
	}
	return nil
}

func reloadCeiling(path string, v int64) error {
	if v < 1 || v > ident.MaxCeiling {
		return invalidf(path+".max_concurrency", "is required: 1-%d", ident.MaxCeiling)
	}
	return nil
}

// Generations replays the validated reloads: element 0 is the tier's members, element i+1 the
// members in force after reload i, each in configured order (added members last).
func (s *Scenario) Generations() [][]Member {
	out := [][]Member{s.Tier.Members}
	current := s.Tier.Members
	for _, r := range s.Reloads {
		current = slices.Clone(current)
		for _, c := range r.Changes {
			switch {
			case c.MemberCeiling != nil:
				if k := slices.IndexFunc(current, func(m Member) bool { return m.ID == c.MemberCeiling.Member }); k >= 0 {
					current[k].MaxConcurrency = c.MemberCeiling.MaxConcurrency
				}
			case c.AddMember != nil:
				current = append(current, c.AddMember.Member())
			case c.RemoveMember != nil:
				current = slices.DeleteFunc(current, func(m Member) bool { return m.ID == c.RemoveMember.Member })
			}
		}
		out = append(out, current)
	}
	return out
}

// AllMembers lists every member the scenario ever configures: the tier's members, then each added
// member in reload order. The simulator's results and the report's member metrics follow this order.
// A member's fields are those it was first configured with.
func (s *Scenario) AllMembers() []Member {
	out := slices.Clone(s.Tier.Members)
	for _, r := range s.Reloads {
		for _, c := range r.Changes {
			if a := c.AddMember; a != nil && !slices.ContainsFunc(out, func(m Member) bool { return m.ID == a.ID }) {
				out = append(out, a.Member())
			}
		}
	}
	return out
}

// EverMember returns the member with the given ID among every member the scenario ever configures.
func (s *Scenario) EverMember(id string) (Member, bool) {
	for _, m := range s.AllMembers() {
		if m.ID == id {
			return m, true
		}
	}
	return Member{}, false
}

// ConfiguredAt reports whether member id is configured at virtual time t, as a timed event at t
// sees it: after every reload before t, before any reload at t.
func (s *Scenario) ConfiguredAt(id string, t time.Duration) bool {
	gens := s.Generations()
	g := 0
	for g < len(s.Reloads) && s.Reloads[g].At < t {
		g++
	}
	return slices.ContainsFunc(gens[g], func(m Member) bool { return m.ID == id })
}

// smallestModelLen is the smallest max_model_len over every member the scenario configures.
func (s *Scenario) smallestModelLen() int64 {
	var n int64
	for i, m := range s.AllMembers() {
		p, _ := profile.Lookup(m.Profile) // validated before
		if l := int64(p.ModelLen()); i == 0 || l < n {
			n = l
		}
	}
	return n
}
