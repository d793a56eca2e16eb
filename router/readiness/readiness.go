// Package readiness decides whether each replica member is ready to serve: its /v1/models must list
// the tier's served model with exactly that ID, and nothing else but LoRA adapters of it, and its
// /health must answer 200. Probes never follow a redirect.
//
// The package is a small core (State: the latest completed verdict per member, read without waiting;
// CheckModels: the identity rule) and a thin shell (Prober: background probes with bounded timeouts).
// The request path only ever calls State.Snapshot, which copies the last completed verdicts and never
// waits on I/O.
package readiness

import (
	"errors"
	"sort"
	"sync"
)

// Target is one member to probe: the tier it belongs to, its safe ID, its base URL, the exact model
// name the tier serves and the rule its engine answers by.
type Target struct {
	Tier        string
	Member      string
	BaseURL     string
	ServedModel string
	Rule        Rule
}

// Verdict is the classified result of one probe. Only Ready admits traffic; the other values exist so
// operators can see why a member is out (never with raw error text).
type Verdict uint8

const (
	// Unprobed is the state before the first completed probe: not ready.
	Unprobed Verdict = iota
	// Ready means /v1/models listed exactly the served model and /health answered 200.
	Ready
	// Unreachable means a transport error or timeout.
	Unreachable
	// Unhealthy means /health answered something other than 200.
	Unhealthy
	// WrongModel means /v1/models answered 200 but did not list the served model (or was not a
	// well-formed model list within its bound).
	WrongModel
	// ExtraModel means /v1/models listed the served model and another model that is not a LoRA
	// adapter of it: a different base model on the same port is not the qualified replica.
	ExtraModel
	// Redirected means /v1/models or /health answered with a redirect, which probes never follow.
	Redirected
)

var verdictNames = [...]string{"unprobed", "ready", "unreachable", "unhealthy", "wrong_model", "extra_model", "redirected"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "invalid"
}

// State holds the latest completed verdict of every registered member. It is safe for concurrent use.
// A reload retargets it (Adopt): a member keeps its verdict only while its identity (tier, member,
// base URL and served model) stays.
type State struct {
	mu      sync.RWMutex
	tiers   map[string]map[string]Verdict
	targets map[[2]string]Target // (tier, member) -> the registered target
}

// ErrUnknownMember is returned when a verdict names a member that was never registered.
var ErrUnknownMember = errors.New("readiness: unknown member")

// NewState registers the members; every one starts Unprobed.
func NewState(targets []Target) *State {
	s := &State{}
	s.tiers, s.targets = register(targets)
	return s
}

func register(targets []Target) (map[string]map[string]Verdict, map[[2]string]Target) {
	tiers := make(map[string]map[string]Verdict)
	byKey := make(map[[2]string]Target, len(targets))
	for _, t := range targets {
		m := tiers[t.Tier]
		if m == nil {
			m = make(map[string]Verdict)
			tiers[t.Tier] = m
		}
		m[t.Member] = Unprobed
		byKey[[2]string{t.Tier, t.Member}] = t
	}
	return tiers, byKey
}

// Adopt registers targets in place of the current ones: a member whose tier, ID, base URL and
// served model are unchanged keeps its verdict; every other one starts Unprobed (not ready until a
// probe passes); members no longer listed are forgotten. Snapshots switch from one membership to
// the other in one step.
func (s *State) Adopt(targets []Target) {
	tiers, byKey := register(targets)
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, t := range byKey {
		if old, ok := s.targets[k]; ok && old == t {
			tiers[k[0]][k[1]] = s.tiers[k[0]][k[1]]
		}
	}
	s.tiers, s.targets = tiers, byKey
}

// RecordTarget stores a completed verdict for tg when tg is still the registered target of its
// member: a probe of an endpoint that a reload replaced says nothing about the member in force.
func (s *State) RecordTarget(tg Target, v Verdict) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.targets[[2]string{tg.Tier, tg.Member}]; !ok || cur != tg {
		return ErrUnknownMember
	}
	s.tiers[tg.Tier][tg.Member] = v
	return nil
}

// Record stores a completed verdict for a registered member.
func (s *State) Record(tier, member string, v Verdict) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.tiers[tier]
	if !ok {
		return ErrUnknownMember
	}
	if _, ok := m[member]; !ok {
		return ErrUnknownMember
	}
	m[member] = v
	return nil
}

// Snapshot returns a detached member -> ready mapping for one tier (nil for an unknown tier). It never
// waits on I/O: it reads the last completed verdicts.
func (s *State) Snapshot(tier string) map[string]bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m, ok := s.tiers[tier]
	if !ok {
		return nil
	}
	out := make(map[string]bool, len(m))
	for id, v := range m {
		out[id] = v == Ready
	}
	return out
}

// MemberVerdict is one row of Verdicts.
type MemberVerdict struct {
	Member  string
	Verdict Verdict
}

// Verdicts returns the latest verdicts of one tier sorted by member ID, for operator surfaces.
func (s *State) Verdicts(tier string) []MemberVerdict {
	s.mu.RLock()
	m := s.tiers[tier]
	out := make([]MemberVerdict, 0, len(m))
	for id, v := range m {
		out = append(out, MemberVerdict{Member: id, Verdict: v})
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Member < out[j].Member })
	return out
}

// CheckModels applies the identity rule to an OpenAI /v1/models body: Ready when it lists the served
// model with exactly that ID and every other entry is a LoRA adapter of it (its parent, or its root,
// is the served model: vLLM lists adapters with parent = the base model's served name); ExtraModel
// when it also lists any other model; WrongModel when it does not list the served model or is not a
// well-formed model list. The body is read strictly: one JSON object with a "data" array of objects,
// each with a string "id" and optional string-or-null "parent" and "root"; keys are exact, duplicate
// keys and trailing data are refused. It is RuleOpenAI.CheckModels.
func CheckModels(body []byte, served string) Verdict { return RuleOpenAI.CheckModels(body, served) }
