package routing

import (
	"io"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/pressure"
)

// This file is the one place where a validated config becomes the specifications of the pieces the
// walk runs on: admission's tiers, the pressure cache's capacity tiers and the decision log's
// membership. The server and the simulator both build from here, so they cannot disagree about
// ceilings, strategies or membership.

// AdmissionSpecs converts the config's tiers to admission specifications: configured ceilings and
// strategies become admission's, and each member's endpoint is part of its identity across reloads.
func AdmissionSpecs(cfg config.Config) []admission.TierSpec {
	tiers := cfg.Tiers()
	out := make([]admission.TierSpec, 0, len(tiers))
	for _, t := range tiers {
		spec := admission.TierSpec{ID: t.ID, Kind: admission.KindDirect, MaxConcurrency: t.MaxConcurrency,
			MaxWaiting: t.Queue.MaxWaiting}
		if t.Kind == config.KindReplica {
			spec.Kind = admission.KindReplica
			if t.Strategy == config.StrategyCapacity {
				spec.Strategy = admission.StrategyCapacity
			}
			for _, m := range t.Members {
				spec.Members = append(spec.Members, admission.MemberSpec{ID: m.ID, MaxConcurrency: m.MaxConcurrency,
					Endpoint: m.Endpoint})
			}
		}
		out = append(out, spec)
	}
	return out
}

// PressureSpecs registers every capacity tier's members with a pressure cache; the member ceiling is
// the scheduler capacity that request pressure is normalized against. It is empty when no tier uses
// the capacity strategy: then no cache (and no telemetry goroutine) exists at all.
func PressureSpecs(cfg config.Config) []pressure.TierSpec {
	var out []pressure.TierSpec
	for _, t := range cfg.Tiers() {
		if t.Strategy != config.StrategyCapacity {
			continue
		}
		spec := pressure.TierSpec{ID: t.ID, ServedModel: t.ServedModel, Engine: t.Engine}
		for _, m := range t.Members {
			spec.Members = append(spec.Members, pressure.MemberSpec{ID: m.ID, Endpoint: m.Endpoint, Capacity: m.MaxConcurrency})
		}
		out = append(out, spec)
	}
	return out
}

// Membership maps every capacity tier to its members' ceilings: the decision log checks capacity
// evidence against it before storing it.
func Membership(cfg config.Config) map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for _, t := range cfg.Tiers() {
		if t.Strategy != config.StrategyCapacity {
			continue
		}
		m := make(map[string]int64, len(t.Members))
		for _, mem := range t.Members {
			m[mem.ID] = mem.MaxConcurrency
		}
		out[t.ID] = m
	}
	return out
}

// NewDecisionLog builds the decision log the config describes: its ring size, its line bound and the
// configured capacity membership, writing to sink (nil: none). opts add to those (the server makes its
// file sink asynchronous).
func NewDecisionLog(cfg config.Config, sink io.Writer, opts ...decisionlog.Option) (*decisionlog.Log, error) {
	dl := cfg.DecisionLog()
	all := []decisionlog.Option{decisionlog.WithMembership(Membership(cfg))}
	if dl.MaxLineBytes > 0 {
		all = append(all, decisionlog.WithMaxLineBytes(dl.MaxLineBytes))
	}
	return decisionlog.New(dl.RingSize, sink, append(all, opts...)...)
}
