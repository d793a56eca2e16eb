package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim"
)

func lookup(t testing.TB, name string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Lookup(name)
	require.NoError(t, err)
	return sc
}

// build runs every strategy of the scenario and builds its report.
func build(t testing.TB, sc *scenarios.Scenario) *Report {
	t.Helper()
	var results []*sim.Result
	for _, st := range sc.Strategies {
		r, err := sim.Run(sc, sim.Options{Strategy: st})
		require.NoError(t, err)
		results = append(results, r)
	}
	return Build(sc, results)
}

func encode(t testing.TB, r *Report) (string, string) {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, r.WriteJSON(&b))
	return b.String(), r.Markdown()
}

// TestDeterminism: the same scenario and seed give byte-identical JSON and Markdown; another seed
// changes them.
func TestDeterminism(t *testing.T) {
	for _, name := range []string{"twenty-concurrent", "upstream-errors", "rotation", "tier-drain",
		"heterogeneous", "metrics-outage", "stale-telemetry", "restart-intent"} {
		t.Run(name, func(t *testing.T) {
			sc := lookup(t, name)
			j1, m1 := encode(t, build(t, sc))
			j2, m2 := encode(t, build(t, lookup(t, name)))
			assert.Equal(t, j1, j2, "JSON")
			assert.Equal(t, m1, m2, "Markdown")
			other := lookup(t, name)
			other.Seed += 1000
			j3, m3 := encode(t, build(t, other))
			assert.NotEqual(t, j1, j3)
			assert.NotEqual(t, m1, m3)
		})
	}
}

func TestShippedShortScenariosPassTheirGates(t *testing.T) {
	// The hour and the ten-minute comparison run in `anvil-sim check` and the benchmark, not here.
	for _, name := range []string{"twenty-concurrent", "decisive-unknown", "rotation", "metrics-outage",
		"stale-telemetry", "member-drain", "tier-drain", "upstream-errors", "failing-member", "restart-intent",
		"engine-sglang", "engine-trtllm", "engine-llamacpp", "engine-tgi"} {
		t.Run(name, func(t *testing.T) {
			r := build(t, lookup(t, name))
			for _, g := range r.Gates {
				assert.Equal(t, GatePass, g.Status, "%s: actual %v %s", g.Name, g.Actual, g.Note)
			}
			assert.True(t, r.Passed)
		})
	}
}

// TestT012HoldsInTheReport checks the spec's T012 acceptance on the report's own numbers.
func TestT012HoldsInTheReport(t *testing.T) {
	r := build(t, lookup(t, "twenty-concurrent"))
	run := &r.Runs[0]
	for _, name := range []string{"tier.ceiling_violations", "tier.reconcile_violations", "tier.order_violations",
		"tier.evidence_violations", "tier.release_misuse", "tier.redispatches", "tier.attempts_minus_admitted",
		"tier.dispatch_mismatches", "tier.unreleased"} {
		v, ok := run.Value(name)
		require.True(t, ok, name)
		assert.Zero(t, v, name)
	}
	assert.Equal(t, int64(6), run.Tier.PeakActive)
	for _, m := range run.Members {
		assert.LessOrEqual(t, m.PeakActive, m.Ceiling)
	}
	assert.Equal(t, run.Invariants.Attempts, run.Invariants.Admitted, "member-side arrivals == admissions")
	assert.Positive(t, run.Invariants.Attempts)
	assert.Equal(t, run.Invariants.Acquired, run.Invariants.Released)
	assert.Equal(t, 1.0, run.Tier.Share)
	var share float64
	for _, m := range run.Members {
		share += m.Share
	}
	assert.InDelta(t, 1.0, share, 1e-9)
}

func TestBrokenGateFails(t *testing.T) {
	sc := lookup(t, "twenty-concurrent")
	sc.Expect = append(sc.Expect,
		scenarios.Gate{Name: "impossible", Metric: "tier.peak_active", Run: "capacity", Op: "==", Value: 7},
		scenarios.Gate{Name: "typo", Metric: "tier.peak_actve", Run: "capacity", Op: "==", Value: 6},
		scenarios.Gate{Name: "absent run", Metric: "tier.peak_active", Run: "round_robin", Op: "==", Value: 6},
	)
	r := build(t, sc)
	assert.False(t, r.Passed)
	byName := map[string]GateResult{}
	for _, g := range r.Gates {
		byName[g.Name] = g
	}
	assert.Equal(t, GateFail, byName["impossible"].Status)
	assert.Equal(t, 6.0, byName["impossible"].Actual)
	assert.Equal(t, GateFail, byName["typo"].Status)
	assert.Equal(t, "unknown metric", byName["typo"].Note)
	assert.Equal(t, GateSkip, byName["absent run"].Status)
	assert.Contains(t, r.Text(), "FAIL")
	assert.Contains(t, r.Markdown(), "Verdict: FAIL")
}

func TestRatioGates(t *testing.T) {
	runs := []Run{
		{Strategy: "round_robin", Metrics: []Metric{{"e2e.p99", 2}, {"zero", 0}}},
		{Strategy: "capacity", Metrics: []Metric{{"e2e.p99", 1}, {"zero", 0}}},
	}
	gates := []scenarios.Gate{
		{Name: "better", Metric: "e2e.p99", Run: "capacity", Vs: "round_robin", Op: "<", Value: 1},
		{Name: "worse", Metric: "e2e.p99", Run: "round_robin", Vs: "capacity", Op: "<", Value: 1},
		{Name: "zero", Metric: "zero", Run: "capacity", Vs: "round_robin", Op: "<", Value: 1},
	}
	res, passed := evaluate(gates, runs)
	assert.False(t, passed)
	assert.Equal(t, GatePass, res[0].Status)
	assert.Equal(t, 0.5, res[0].Actual)
	assert.Equal(t, GateFail, res[1].Status)
	assert.Equal(t, 2.0, res[1].Actual)
	assert.Equal(t, GateFail, res[2].Status)
	assert.Equal(t, "ratio over zero", res[2].Note)
}

func TestComparison(t *testing.T) {
	r := build(t, lookup(t, "rotation"))
	require.Len(t, r.Runs, 2)
	require.NotEmpty(t, r.Comparison)
	for _, c := range r.Comparison {
		require.Len(t, c.Values, 2)
		if c.Values[0] != 0 {
			assert.InDelta(t, c.Values[1]/c.Values[0], c.Ratio, 1e-12, c.Metric)
		}
	}
	assert.Contains(t, r.Text(), "Comparison")
}

func TestJSONShape(t *testing.T) {
	r := build(t, lookup(t, "member-drain"))
	var b bytes.Buffer
	require.NoError(t, r.WriteJSON(&b))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &doc))
	assert.Equal(t, "member-drain", doc["scenario"])
	assert.Equal(t, true, doc["passed"])
	runs := doc["runs"].([]any)
	run := runs[0].(map[string]any)
	for _, key := range []string{"tier", "members", "invariants", "decisions", "telemetry", "drains", "actions", "metrics"} {
		assert.Contains(t, run, key)
	}
	// Metrics are sorted by name, so gates can binary-search them and diffs stay stable.
	names := []string{}
	for _, m := range r.Runs[0].Metrics {
		names = append(names, m.Name)
	}
	assert.IsNonDecreasing(t, names)
}

func TestMarkdownTables(t *testing.T) {
	md := build(t, lookup(t, "twenty-concurrent")).Markdown()
	assert.True(t, strings.HasPrefix(md, "# anvil-sim: twenty-concurrent\n"))
	assert.Contains(t, md, "| scope | ceiling |")
	assert.Contains(t, md, "| --- | ---: |")
	assert.Contains(t, md, "Verdict: PASS")
}

func TestFigures(t *testing.T) {
	r := build(t, lookup(t, "rotation"))
	figs, err := r.Figures()
	require.NoError(t, err)
	require.Len(t, figs, 3, "one timeline per run and one CDF")
	assert.Equal(t, "rotation-capacity-active", figs[0].Name)
	assert.Equal(t, "rotation-latency-cdf", figs[2].Name)
	var png, svg bytes.Buffer
	require.NoError(t, figs[0].WriteTo(&png, FormatPNG))
	require.NoError(t, figs[2].WriteTo(&svg, FormatSVG))
	assert.True(t, bytes.HasPrefix(png.Bytes(), []byte("\x89PNG")))
	assert.Contains(t, svg.String(), "<svg")
	assert.ErrorIs(t, figs[0].WriteTo(&png, "gif"), ErrFormat)
}

// TestOneAttemptGatesReadTheMembers: the one-attempt metrics come from what the members received,
// so a request that reached two members fails the gates.
func TestOneAttemptGatesReadTheMembers(t *testing.T) {
	sc := lookup(t, "twenty-concurrent")
	res, err := sim.Run(sc, sim.Options{})
	require.NoError(t, err)
	res.Invariants.MemberDispatches++ // one request also reached a peer...
	res.Invariants.Redispatched++     // ...so it arrived twice
	res.Invariants.Misrouted++
	r := Build(sc, []*sim.Result{res})
	assert.False(t, r.Passed)
	for _, name := range []string{"tier.attempts_minus_admitted == 0", "tier.dispatch_mismatches == 0"} {
		var found bool
		for _, g := range r.Gates {
			if g.Name == name {
				found = true
				assert.Equal(t, GateFail, g.Status, name)
			}
		}
		assert.True(t, found, name)
	}
	v, _ := r.Runs[0].Value("tier.dispatch_mismatches")
	assert.Equal(t, 2.0, v)
}

func TestQueueTimeReportsOnlyTheMean(t *testing.T) {
	r := build(t, lookup(t, "twenty-concurrent"))
	run := &r.Runs[0]
	n, ok := run.Value("queue.n")
	require.True(t, ok)
	assert.Positive(t, n)
	mean, ok := run.Value("queue.mean")
	require.True(t, ok)
	assert.Positive(t, mean)
	for _, name := range []string{"queue.p50", "queue.p99", "member.vllm-0.queue.p99"} {
		_, ok := run.Value(name)
		assert.False(t, ok, name)
	}
	assert.Contains(t, r.Text(), "queue (mean only)")
}

func TestDrainMetrics(t *testing.T) {
	r := build(t, lookup(t, "member-drain"))
	v, ok := r.Runs[0].Value("drains.in_flight_failed")
	require.True(t, ok)
	assert.Zero(t, v)
	require.Len(t, r.Runs[0].Drains, 1)
	assert.Positive(t, r.Runs[0].Drains[0].ActiveAtStart, "the drain waited for requests that then succeeded")
}

// TestPassiveHealthGatesCanFail: the failing-member scenario's gates are the black hole's: with
// passive health off, the capacity scheduler sends the failing member most of the traffic during its
// failure, and the gates on its share, the tier's success and the ejections fail.
func TestPassiveHealthGatesCanFail(t *testing.T) {
	sc := lookup(t, "failing-member")
	off := false
	sc.Tier.PassiveHealth = &scenarios.PassiveHealth{Enabled: &off}
	r := build(t, sc)
	assert.False(t, r.Passed)
	failed := map[string]float64{}
	for _, g := range r.Gates {
		if g.Status == GateFail {
			failed[g.Name] = g.Actual
		}
	}
	assert.Greater(t, failed["capacity: window.failing.member.vllm-3.share <= 0.05"], 0.5, "a black hole")
	assert.Less(t, failed["capacity: window.failing.tier.success_rate >= 0.7"], 0.5)
	assert.Contains(t, failed, "round_robin: window.failing.member.vllm-3.share <= 0.05", "round robin sends it a quarter")
	assert.Contains(t, failed, "capacity: member.vllm-3.ejections > 0")
	h := r.Runs[0].Health
	assert.Nil(t, h, "no passive health, no ejections")
}

func TestHealthAndWindowMetrics(t *testing.T) {
	r := build(t, lookup(t, "flapping-member"))
	run := &r.Runs[1]
	require.Equal(t, "capacity", run.Strategy)
	require.NotNil(t, run.Health)
	var durations []float64
	for _, m := range run.Health.Members {
		if m.ID == "vllm-2" {
			for _, e := range m.Ejections {
				durations = append(durations, e.DurationS)
			}
		} else {
			assert.Empty(t, m.Ejections)
		}
	}
	require.GreaterOrEqual(t, len(durations), 6)
	for i, d := range durations {
		assert.Equal(t, float64(10*(i+1)), d, "the n-th consecutive ejection lasts n x 10 s")
	}
	v, ok := run.Value("member.vllm-2.ejection_max_s")
	require.True(t, ok)
	assert.Equal(t, durations[len(durations)-1], v)
	_, ok = run.Value("tier.ejections_held")
	assert.True(t, ok)

	fm := build(t, lookup(t, "failing-member"))
	for _, run := range fm.Runs {
		n, ok := run.Value("window.failing.tier.requests")
		require.True(t, ok)
		var inWindow int
		for _, q := range []string{"vllm-0", "vllm-1", "vllm-2", "vllm-3"} {
			v, _ := run.Value("window.failing.member." + q + ".requests")
			inWindow += int(v)
		}
		assert.LessOrEqual(t, float64(inWindow), n, "members' requests are the window's admitted arrivals")
		assert.Positive(t, n)
	}
}

// TestQueueCutsRefusals: on burst-queue's bursty arrivals, the same tier without a queue refuses
// hundreds of requests; with its queue (40 waiting, 5 s) refusals drop by more than 90% while no
// wait passes the timeout and no ceiling is exceeded.
func TestQueueCutsRefusals(t *testing.T) {
	with := build(t, lookup(t, "burst-queue"))
	noQueue := lookup(t, "burst-queue")
	noQueue.Tier.Queue = nil
	var gates []scenarios.Gate
	for _, g := range noQueue.Expect {
		if !strings.HasPrefix(g.Metric, "admission_queue.") {
			gates = append(gates, g)
		}
	}
	noQueue.Expect = gates
	without := build(t, noQueue)
	for i, run := range with.Runs {
		w, _ := run.Value("tier.not_admitted")
		wo, _ := without.Runs[i].Value("tier.not_admitted")
		t.Logf("%s: %v refused without the queue, %v with it", run.Strategy, wo, w)
		require.Positive(t, wo, "the bursts overflow the tier without a queue")
		assert.Less(t, w, 0.1*wo, "the queue cuts refusals by more than 90%")
		p99, _ := run.Value("admission_queue.wait.p99")
		assert.Less(t, p99, 5.0)
		v, _ := run.Value("tier.ceiling_violations")
		assert.Zero(t, v)
		assert.Nil(t, without.Runs[i].Queue)
	}
}

// The restart-intent gates can fail: a router without an intent file forgets the member's quiesce
// across the restart, and the scope and restore gates say so.
func TestRestartGatesFailWithoutPersistence(t *testing.T) {
	sc := lookup(t, "restart-intent")
	res, err := sim.Run(sc, sim.Options{NoIntentFile: true})
	require.NoError(t, err)
	r := Build(sc, []*sim.Result{res})
	assert.False(t, r.Passed)
	failed := map[string]bool{}
	for _, g := range r.Gates {
		if g.Status == GateFail {
			failed[g.Name] = true
		}
	}
	assert.True(t, failed["restarts.restored_members == 1"], "nothing was restored")
	assert.True(t, failed["tier.scope_violations == 0"], "the forgotten member admitted against the operator's intent")
	assert.False(t, failed["restarts.cut > 0"], "only the intent gates fail")
}
