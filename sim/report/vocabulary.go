package report

import (
	"fmt"
	"slices"

	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim"
)

// Names lists every metric name a report of sc carries, sorted: the vocabulary its gates may use.
// It is read off a report built from an empty run of the scenario's members, so it is exactly the
// set Build emits, member names included.
func Names(sc *scenarios.Scenario) []string {
	res := &sim.Result{Scenario: sc.Name, Strategy: sc.Tier.Strategy, Seed: sc.Seed, Duration: sc.Duration,
		TierID: sc.Tier.ID}
	for _, m := range sc.AllMembers() {
		res.Members = append(res.Members, sim.MemberResult{ID: m.ID, Ceiling: m.MaxConcurrency})
	}
	for _, r := range sc.Reloads {
		res.Reloads = append(res.Reloads, sim.Reload{At: r.At}) // a reloading run carries reload metrics
	}
	for _, e := range sc.Events {
		if e.Action == scenarios.ActionRestart {
			res.Restarts = append(res.Restarts, sim.Restart{At: e.At}) // a restarting run carries restart metrics
		}
	}
	run := buildRun(sc, res)
	names := make([]string, len(run.Metrics))
	for i, m := range run.Metrics {
		names[i] = m.Name
	}
	return names
}

// CheckGates refuses a scenario whose gates name a metric no report of it carries, so a typo in a
// gate fails when the scenario is loaded, before any run, instead of after it. The error names the
// gate's path (expect[i].metric) and wraps scenarios.ErrInvalid.
func CheckGates(sc *scenarios.Scenario) error {
	names := Names(sc)
	for i, g := range sc.Expect {
		if _, ok := slices.BinarySearch(names, g.Metric); !ok {
			return &scenarios.Error{Path: fmt.Sprintf("expect[%d].metric", i),
				Msg: "names no report metric (see the metrics list of any report; member metrics are member.<id>.<name>)"}
		}
	}
	return nil
}
