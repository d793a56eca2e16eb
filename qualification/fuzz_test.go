package qualification

import (
	"errors"
	"strings"
	"testing"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/scenarios"
)

// FuzzParse: any bytes give a plan or a typed error, never a panic; a plan holds its invariants and
// its errors never echo the file.
func FuzzParse(f *testing.F) {
	f.Add([]byte(minimal))
	f.Add([]byte(strings.Replace(minimal, "strategy: capacity", "strategy: round_robin", 1)))
	f.Add([]byte(minimal + "approval:\n  digest: hmac-sha256:" + strings.Repeat("0", 64) + "\n"))
	f.Add([]byte("qualification: a\nrouter: {url: 'http://x', alias: c}\n"))
	f.Add([]byte(withCalibration("{max_concurrency: 64, step: 8, window: 2s, ttft_p99: 1s, tpot_p99: 40ms}")))
	f.Add([]byte(withCalibration("{max_concurrency: 0}")))
	f.Add([]byte("{"))
	f.Add([]byte("a: &x 1\nb: *x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			var qe *Error
			var se *scenarios.Error
			if !errors.As(err, &qe) && !errors.As(err, &se) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		n := len(p.Tier.Members)
		if n < ident.MinMembers || n > ident.MaxMembers || p.Phases.SustainedClients < 1 {
			t.Fatalf("plan out of bounds: %d members, %d clients", n, p.Phases.SustainedClients)
		}
		if p.Tier.Strategy == StrategyCapacity && p.Tier.Ceiling < 1 {
			t.Fatal("a capacity tier without a ceiling")
		}
		for _, bp := range []func() error{p.matchedPlanValid, p.sustainedPlanValid, p.failurePlanValid} {
			if err := bp(); err != nil {
				t.Fatalf("a parsed plan whose load the bench refuses: %v", err)
			}
		}
		if c := p.Phases.Calibration; c != nil {
			steps := c.Steps()
			if len(steps) < 1 || len(steps) > maxCalibrationSteps || steps[len(steps)-1] != c.MaxConcurrency {
				t.Fatalf("a calibration of %d steps up to %d", len(steps), c.MaxConcurrency)
			}
			for _, n := range []int{1, c.MaxConcurrency} {
				if bp := p.calibrationPlan(c, n); bp.Validate() != nil {
					t.Fatalf("a parsed calibration whose step %d the bench refuses", n)
				}
			}
		}
		if !strings.HasPrefix(p.Fingerprint(), "sha256:") {
			t.Fatal("no fingerprint")
		}
	})
}

func (p *Plan) matchedPlanValid() error   { bp := p.matchedPlan(); return bp.Validate() }
func (p *Plan) sustainedPlanValid() error { bp := p.sustainedPlan(); return bp.Validate() }
func (p *Plan) failurePlanValid() error   { bp := p.failurePlan(); return bp.Validate() }

// FuzzMemberAnswers: the readers of what members say never panic, and what they keep is bounded.
func FuzzMemberAnswers(f *testing.F) {
	f.Add([]byte(vllmModels), []byte(vllmPage))
	f.Add([]byte(`{"data":[{"id":"a"},{"id":"b","max_model_len":1}]}`), []byte("vllm:num_requests_running{model_name=\"m/one\"} 1e300\n"))
	f.Add([]byte(`{"version":"0.12.0"}`), []byte("# TYPE x summary\nx{quantile=\"0.5\"} 1\n"))
	f.Fuzz(func(t *testing.T, body, page []byte) {
		if list, err := parseModels(body); err == nil {
			for _, c := range list {
				if c.ID == "" || c.MaxModelLen != nil && *c.MaxModelLen < 0 {
					t.Fatalf("kept an invalid card %+v", c)
				}
			}
		}
		if v, err := parseVersion(body); err == nil && v != "(not printable)" && !printable(v, maxText) {
			t.Fatalf("kept an unprintable version %q", v)
		}
		if l, err := parseMetrics(page, "m/one"); err == nil && (l.Finished < 0 || l.Running < 0) {
			t.Fatalf("negative load %+v", l)
		}
	})
}

// FuzzRouterAnswers: the readers of the router's answers never panic.
func FuzzRouterAnswers(f *testing.F) {
	f.Add([]byte(capacityDoc), []byte(routerPage))
	f.Add([]byte(readyDoc), []byte("anvil_router_requests_total{tier=\"pool\",outcome=\"\"} 1\n"))
	f.Add([]byte(`{"records":1,"tiers":[{"tier":"pool"}]}`), []byte("anvil_router_upstream_attempts_total{tier=\"pool\",member=\"m\"} 9007199254740993\n"))
	f.Fuzz(func(t *testing.T, doc, page []byte) {
		if tier, err := capacityTier(doc, "pool"); err == nil && tier.ID != "pool" {
			t.Fatalf("found tier %q for pool", tier.ID)
		}
		if rt, err := readyTier(doc, "pool"); err == nil && rt.Tier != "pool" {
			t.Fatalf("found readiness of %q for pool", rt.Tier)
		}
		_, _ = parseSummary(doc)
		if c, err := parseCounters(page, "pool"); err == nil {
			for k, v := range c.Outcomes {
				if v < 0 || k == "" {
					t.Fatalf("kept outcome %q = %d", k, v)
				}
			}
		}
	})
}
