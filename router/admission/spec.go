package admission

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/anvil-llm/anvil/router/ident"
)

// Strategy selects how a replica tier picks its member.
type Strategy uint8

const (
	// StrategyRoundRobin is the legacy rotating cursor (the zero value).
	StrategyRoundRobin Strategy = iota
	// StrategyCapacity ranks members with scheduler.Rank.
	StrategyCapacity
)

// String returns the configuration spelling: "round_robin" or "capacity".
func (s Strategy) String() string {
	switch s {
	case StrategyRoundRobin:
		return "round_robin"
	case StrategyCapacity:
		return "capacity"
	}
	return fmt.Sprintf("strategy(%d)", uint8(s))
}

// Kind distinguishes direct tiers (one upstream) from replica tiers.
type Kind uint8

const (
	// KindDirect is a tier with one upstream and no members (the zero value).
	KindDirect Kind = iota
	// KindReplica is a tier of 2-16 qualified replica members.
	KindReplica
)

// String returns the configuration spelling: "direct" or "replica".
func (k Kind) String() string {
	switch k {
	case KindDirect:
		return "direct"
	case KindReplica:
		return "replica"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// MemberSpec configures one replica member. MaxConcurrency 0 means no member
// ceiling and is legal only in round robin. Endpoint is part of the member's
// identity across reconfigurations (a member whose endpoint changed is a new
// member); admission never contacts it.
type MemberSpec struct {
	ID             string
	MaxConcurrency int64
	Endpoint       string
}

// TierSpec configures one tier. MaxConcurrency is the aggregate tier ceiling,
// never multiplied by the member count: 0 means unlimited for direct and
// round-robin tiers and "sum of member ceilings" for capacity tiers.
type TierSpec struct {
	ID             string
	Kind           Kind
	MaxConcurrency int64
	Strategy       Strategy
	Members        []MemberSpec
	// MaxWaiting bounds the tier's admission queue (queue.go), 0..MaxWaiting; 0 means no queue: a
	// request that finds no capacity is refused at once.
	MaxWaiting int
}

// Set is one generation of tier admission: a view of every configured tier. It is
// immutable after New (or Commit); all mutable state lives behind each tier's own
// lock, and Reconfigure builds the next generation over the same live state.
type Set struct {
	ids     []string // sorted
	tiers   map[string]*TierAdmission
	retired []*tierState // tiers earlier reconfigurations removed, possibly still holding leases or waiters

	superseded atomic.Bool // a reconfiguration built on this Set was committed
}

// New validates and copies specs and returns a Set with every tier admitting.
// Errors wrap ErrInvalidSpec and name the offending tier (by ID once the ID is
// valid, by index otherwise).
func New(specs []TierSpec) (*Set, error) {
	s := &Set{tiers: make(map[string]*TierAdmission, len(specs))}
	for i, spec := range specs {
		if err := validateTier(spec); err != nil {
			return nil, specError(i, spec.ID, err)
		}
		if _, dup := s.tiers[spec.ID]; dup {
			return nil, specError(i, spec.ID, fmt.Errorf("duplicate tier id"))
		}
		s.tiers[spec.ID] = newTier(spec)
		s.ids = append(s.ids, spec.ID)
	}
	slices.Sort(s.ids)
	return s, nil
}

func specError(i int, id string, err error) error {
	if ident.ValidID(id) {
		return fmt.Errorf("%w: tier %q: %v", ErrInvalidSpec, id, err)
	}
	return fmt.Errorf("%w: tier #%d: %v", ErrInvalidSpec, i, err)
}

// Tier returns the admission of one configured tier.
func (s *Set) Tier(id string) (*TierAdmission, bool) {
	t, ok := s.tiers[id]
	return t, ok
}

// IDs returns the configured tier IDs, sorted.
func (s *Set) IDs() []string { return slices.Clone(s.ids) }

// Snapshots returns one snapshot per configured tier, sorted by tier ID, then one per
// retiring tier (removed by a reconfiguration, still holding leases or waiters: Retiring),
// sorted by ID. Each snapshot is one consistent read of its tier; different tiers are read one
// after another.
func (s *Set) Snapshots() []Snapshot {
	out := make([]Snapshot, len(s.ids), len(s.ids)+len(s.retired))
	for i, id := range s.ids {
		out[i] = s.tiers[id].Snapshot()
	}
	for _, t := range s.retired {
		if snap := t.snapshot(); snap.Active > 0 || snap.Waiting > 0 {
			out = append(out, snap)
		}
	}
	return out
}

func validateTier(spec TierSpec) error {
	if !ident.ValidID(spec.ID) {
		return fmt.Errorf("invalid tier id")
	}
	if spec.MaxConcurrency < 0 {
		return fmt.Errorf("max_concurrency must be >= 0")
	}
	if spec.Strategy > StrategyCapacity {
		return fmt.Errorf("unknown replica strategy")
	}
	if spec.MaxWaiting < 0 || spec.MaxWaiting > MaxWaiting {
		return fmt.Errorf("max_waiting must be 0-%d", MaxWaiting)
	}
	switch spec.Kind {
	case KindDirect:
		if spec.Strategy != StrategyRoundRobin {
			return fmt.Errorf("replica strategy is refused on direct tiers")
		}
		if len(spec.Members) != 0 {
			return fmt.Errorf("direct tiers have no members")
		}
		return nil
	case KindReplica:
		return validateMembers(spec)
	}
	return fmt.Errorf("unknown tier kind")
}

func validateMembers(spec TierSpec) error {
	if n := len(spec.Members); n < ident.MinMembers || n > ident.MaxMembers {
		return fmt.Errorf("replica tiers need %d-%d members, got %d", ident.MinMembers, ident.MaxMembers, n)
	}
	seen := make(map[string]bool, len(spec.Members))
	for i, m := range spec.Members {
		if !ident.ValidID(m.ID) {
			return fmt.Errorf("member #%d: invalid member id", i)
		}
		if seen[m.ID] {
			return fmt.Errorf("member %q: duplicate member id", m.ID)
		}
		seen[m.ID] = true
		switch {
		case m.MaxConcurrency < 0 || m.MaxConcurrency > ident.MaxCeiling:
			return fmt.Errorf("member %q: max_concurrency must be 1-%d (0 = none, round robin only)", m.ID, ident.MaxCeiling)
		case m.MaxConcurrency == 0 && spec.Strategy == StrategyCapacity:
			return fmt.Errorf("member %q: max_concurrency is mandatory in capacity mode", m.ID)
		}
	}
	return nil
}

// sortedMembers returns a copy of the members sorted by ID.
func sortedMembers(ms []MemberSpec) []MemberSpec {
	out := slices.Clone(ms)
	slices.SortFunc(out, func(a, b MemberSpec) int { return strings.Compare(a.ID, b.ID) })
	return out
}
