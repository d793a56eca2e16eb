package qualification

import (
	"time"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/scenarios"
)

// basePlan is the bench plan every load phase shares: the seed, workload, endpoint, timeout and
// the gate's latency targets as goodput SLOs.
func (p *Plan) basePlan(label string) bench.Plan {
	ep, _ := bench.ParseEndpoint(p.Endpoint)
	return bench.Plan{Label: label, Scenario: "", Seed: p.Seed, Workload: p.Workload, Endpoint: ep, IgnoreEOS: true,
		Timeout: p.RequestTimeout, SLO: bench.SLO{TTFT: p.SLO.TTFTP99, TPOT: p.SLO.TPOTP99, E2EL: p.SLO.E2ELP99}}
}

// matchedPlan is the schedule the baseline sends to the members and the routed phase through the
// router: the same arrivals, shapes and seed.
func (p *Plan) matchedPlan() bench.Plan {
	bp := p.basePlan(p.Qualification)
	bp.Requests, bp.Duration, bp.Warmup = p.Phases.Matched.Requests, p.Phases.Matched.Duration, p.Phases.Matched.Warmup
	return bp
}

// closedAtCeiling is the workload's shapes sent by a closed loop of the tier's ceiling in clients.
func (p *Plan) closedAtCeiling(label string) bench.Plan {
	bp := p.basePlan(label)
	w := bp.Workload
	w.Open, w.Closed = nil, &scenarios.Closed{Clients: p.Phases.SustainedClients, Backoff: scenarios.DefaultBackoff}
	if c := p.Workload.Closed; c != nil {
		w.Closed.Backoff = c.Backoff
	}
	bp.Workload = w
	return bp
}

func (p *Plan) sustainedPlan() bench.Plan {
	bp := p.closedAtCeiling(p.Qualification + "-sustained")
	bp.Requests, bp.Duration, bp.Warmup = p.Phases.Sustained.Requests, p.Phases.Sustained.Duration, p.Phases.Sustained.Warmup
	return bp
}

// failurePlan drops the workload's client cancellations: this phase proves that the router cuts no
// request, so every request it sends is meant to run to its end.
func (p *Plan) failurePlan() bench.Plan {
	bp := p.closedAtCeiling(p.Qualification + "-failure")
	bp.Duration = p.Phases.Failure.Duration
	bp.Workload.Cancel = nil
	return bp
}

func cmpOr(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}
