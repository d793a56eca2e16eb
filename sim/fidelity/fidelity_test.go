package fidelity

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim"
)

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// knownScenario is a scenario whose name, seed and loop the known results carry.
func knownScenario(t *testing.T) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.ParseOverride([]byte(`name: known
seed: 7
duration: 1m
strategies: [capacity, round_robin]
tier:
  strategy: capacity
  members:
    - {id: a, max_concurrency: 4}
    - {id: b, max_concurrency: 4}
workload:
  open: {process: poisson, rate: 2}
  prompt_tokens: {dist: constant, value: 64}
  output_tokens: {dist: constant, value: 16}
expect:
  - {metric: tier.ceiling_violations, op: "==", value: 0}
`), scenarios.Override{Duration: 30 * time.Second})
	require.NoError(t, err)
	return sc
}

// knownSim is a hand-made simulated run: two streamed successes (TTFT 10 and 30 ms, end to end 110
// and 230 ms, ten tokens after the first each 10 ms apart), an ordinary success of 320 ms and a
// refusal.
func knownSim(strategy string) *sim.Result {
	return &sim.Result{Scenario: "known", Strategy: strategy, Seed: 7, Requests: []sim.Request{
		{Arrival: 0, FirstToken: ms(10), End: ms(110), Output: 11, Stream: true, Outcome: decisionlog.OutcomeSuccess},
		{Arrival: ms(100), FirstToken: ms(130), End: ms(330), Output: 21, Stream: true, Outcome: decisionlog.OutcomeSuccess},
		{Arrival: ms(200), FirstToken: ms(220), End: ms(520), Output: 8, Outcome: decisionlog.OutcomeSuccess},
		{Arrival: ms(300), FirstToken: -1, End: ms(300), Outcome: decisionlog.OutcomeNotAdmitted, Status: 503},
	}}
}

// knownBench is anvil-bench's result of records built to be compared with knownSim.
func knownBench(t *testing.T, label string, recs []bench.Record) bench.Result {
	t.Helper()
	h := bench.RawHeader{Format: bench.RawFormat, Label: label, Scenario: "known", Seed: 7, Endpoint: "chat", Mode: "open",
		Load: "open loop", ArrivalWindowS: 30, Targets: []bench.TargetInfo{{Name: "run", Model: "chat", URLs: 1}}}
	results := bench.Build(h, recs)
	require.Len(t, results, 1)
	return results[0]
}

// capacityRecords: TTFT 11 and 36 ms, end to end 121, 240 and 330 ms, and a 503; one request sent
// 2 ms late.
func capacityRecords() []bench.Record {
	return []bench.Record{
		{Target: "run", ID: 0, Stream: true, Chunks: []time.Duration{ms(11), ms(121)}, End: ms(121), Status: 200, Outcome: bench.OK, OutputTokens: 11, Usage: true},
		{Target: "run", ID: 1, Stream: true, Scheduled: ms(98), Start: ms(100), Chunks: []time.Duration{ms(36), ms(240)}, End: ms(240), Status: 200, Outcome: bench.OK, OutputTokens: 21, Usage: true},
		{Target: "run", ID: 2, Scheduled: ms(200), Start: ms(200), End: ms(330), Status: 200, Outcome: bench.OK, OutputTokens: 8, Usage: true},
		{Target: "run", ID: 3, Scheduled: ms(300), Start: ms(300), End: ms(1), Status: 503, Outcome: bench.HTTP503, RetryAfter: time.Second},
	}
}

// roundRobinRecords: every request refused.
func roundRobinRecords() []bench.Record {
	var recs []bench.Record
	for i := range 3 {
		at := ms(float64(100 * i))
		recs = append(recs, bench.Record{Target: "run", ID: i, Scheduled: at, Start: at, End: ms(1), Status: 503, Outcome: bench.HTTP503})
	}
	return recs
}

// TestKnownTable: a known bench result beside a known simulated run gives exactly this table. The
// simulated TTFT p50 is 20 ms (10 and 30), the real 23.5 (11 and 36): +17.5%, outside 10%; the p99s
// are 29.8 and 35.75: +19.97%, inside 20%. The round-robin run refused everything for real: every
// bounded figure with a simulated sample and no real one is outside.
func TestKnownTable(t *testing.T) {
	sc := knownScenario(t)
	results := []bench.Result{knownBench(t, "capacity", capacityRecords()), knownBench(t, "round_robin", roundRobinRecords())}
	require.NoError(t, Match(sc, results))
	assert.Equal(t, []string{"capacity", "round_robin"}, Strategies(results))
	r := Build(sc, []*sim.Result{knownSim("capacity"), knownSim("round_robin")}, results)

	var text bytes.Buffer
	require.NoError(t, r.Text(&text))
	assert.Equal(t, `anvil-sim compare: known, seed 7, 30 s of arrivals: simulated vs real time (anvil-bench)

  strategy     figure           sim   real  real - sim  relative  bound  verdict
  -----------  -------------  -----  -----  ----------  --------  -----  -------
  capacity     requests           4      4          +0     +0.0%      -        -
  capacity     succeeded          3      3          +0     +0.0%      -        -
  capacity     ttft p50 (ms)   20.0   23.5        +3.5    +17.5%   ±10%  outside
  capacity     ttft p90 (ms)   28.0   33.5        +5.5    +19.6%      -        -
  capacity     ttft p99 (ms)   29.8   35.8        +5.9    +20.0%   ±20%   within
  capacity     e2e p50 (ms)   230.0  240.0       +10.0     +4.3%   ±10%   within
  capacity     e2e p90 (ms)   302.0  312.0       +10.0     +3.3%      -        -
  capacity     e2e p99 (ms)   318.2  328.2       +10.0     +3.1%   ±20%   within
  capacity     tpot p50 (ms)   10.0   10.6        +0.6     +6.0%      -        -
  capacity     tpot p90 (ms)   10.0   10.9        +0.9     +9.2%      -        -
  capacity     tpot p99 (ms)   10.0   11.0        +1.0     +9.9%      -        -
  round_robin  requests           4      3          -1    -25.0%      -        -
  round_robin  succeeded          3      0          -3   -100.0%      -        -
  round_robin  ttft p50 (ms)   20.0    0.0       -20.0   -100.0%   ±10%  outside
  round_robin  ttft p90 (ms)   28.0    0.0       -28.0   -100.0%      -        -
  round_robin  ttft p99 (ms)   29.8    0.0       -29.8   -100.0%   ±20%  outside
  round_robin  e2e p50 (ms)   230.0    0.0      -230.0   -100.0%   ±10%  outside
  round_robin  e2e p90 (ms)   302.0    0.0      -302.0   -100.0%      -        -
  round_robin  e2e p99 (ms)   318.2    0.0      -318.2   -100.0%   ±20%  outside
  round_robin  tpot p50 (ms)   10.0    0.0       -10.0   -100.0%      -        -
  round_robin  tpot p90 (ms)   10.0    0.0       -10.0   -100.0%      -        -
  round_robin  tpot p99 (ms)   10.0    0.0       -10.0   -100.0%      -        -

Send lag of the real runs (how late anvil-bench sent requests; it grows when the machine stalls the bench): capacity p50 0.0, p99 1.9, max 2.0 ms; round_robin p50 0.0, p99 0.0, max 0.0 ms.
Verdict: FAIL, 3 of 8 bounded figures within their bounds (p50 10%, p99 20%); the others are findings.
`, text.String())

	var md bytes.Buffer
	require.NoError(t, r.Markdown(&md))
	assert.Contains(t, md.String(), "## anvil-sim compare: known, seed 7, 30 s of arrivals")
	assert.Contains(t, md.String(), "| strategy | figure | sim | real | real - sim | relative | bound | verdict |\n| --- | --- | ---: |")
	assert.Contains(t, md.String(), "| capacity | ttft p99 (ms) | 29.8 | 35.8 | +5.9 | +20.0% | ±20% | within |\n")

	data, err := json.Marshal(r)
	require.NoError(t, err)
	var back Report
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, r, back, "the JSON holds the whole report")
	assert.False(t, r.Passed)
	assert.Equal(t, 8, r.Bounded)
	assert.Equal(t, 3, r.Within)
}

// TestIdenticalRunsAgree: a bench result made of a real simulated run's own requests (sent at
// their arrivals, first chunk at the first token, done at the end) agrees with the simulation
// exactly, so the two columns' definitions are the same.
func TestIdenticalRunsAgree(t *testing.T) {
	sc := knownScenario(t)
	res, err := sim.Run(sc, sim.Options{Strategy: scenarios.StrategyCapacity})
	require.NoError(t, err)
	var recs []bench.Record
	for i, q := range res.Requests {
		rec := bench.Record{Target: "run", ID: i, Stream: q.Stream, Start: q.Arrival, End: q.End - q.Arrival,
			Status: int(q.Status), OutputTokens: int64(q.Output), Usage: true}
		switch {
		case q.Outcome == decisionlog.OutcomeSuccess:
			rec.Outcome = bench.OK
			if q.Stream {
				rec.Chunks = []time.Duration{q.FirstToken - q.Arrival, q.End - q.Arrival}
			}
		default:
			rec.Outcome = bench.HTTP503
		}
		recs = append(recs, rec)
	}
	real := knownBench(t, "capacity", recs)
	require.NoError(t, Match(sc, []bench.Result{real}))
	r := Build(sc, []*sim.Result{res}, []bench.Result{real})
	require.Positive(t, r.Runs[0].Sim.TTFT.N)
	assert.Equal(t, r.Runs[0].Sim, r.Runs[0].Real)
	for _, row := range r.Rows {
		assert.Zero(t, row.Diff, row.Figure)
	}
	assert.True(t, r.Passed)
	assert.Equal(t, 4, r.Within)
}

func TestMatchRefuses(t *testing.T) {
	sc := knownScenario(t)
	good := func() bench.Result { return knownBench(t, "capacity", capacityRecords()) }
	cases := []struct {
		name   string
		change func(r *bench.Result)
		msg    string
	}{
		{"other scenario", func(r *bench.Result) { r.Scenario = "heterogeneous" }, `result 1 is a run of scenario "heterogeneous", the simulation is of "known"`},
		{"other seed", func(r *bench.Result) { r.Seed = 8 }, "result 1 was sent with seed 8, the simulation runs seed 7 (give --seed 8)"},
		{"request count", func(r *bench.Result) { r.ArrivalWindowS = 0 }, "sent a request count"},
		{"other window", func(r *bench.Result) { r.ArrivalWindowS = 60 }, "sent arrivals for 60 s, the simulation runs 30 s"},
		{"other loop", func(r *bench.Result) { r.Mode = "closed" }, "is a closed loop, the scenario's workload a open loop"},
		{"other endpoint", func(r *bench.Result) { r.Endpoint = "completions" }, "sent completions requests"},
		{"stopped", func(r *bench.Result) { r.Target.Stopped = "interrupted" }, "stopped early"},
		{"no strategy", func(r *bench.Result) { r.Label = "heterogeneous" }, `labelled "heterogeneous"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := good()
			c.change(&r)
			err := Match(sc, []bench.Result{r})
			require.ErrorIs(t, err, ErrMismatch)
			assert.Contains(t, err.Error(), c.msg)
		})
	}
	err := Match(sc, []bench.Result{good(), good()})
	require.ErrorIs(t, err, ErrMismatch)
	assert.Contains(t, err.Error(), "two results of strategy capacity")
	require.ErrorIs(t, Match(sc, nil), ErrMismatch)
}

func TestWindow(t *testing.T) {
	assert.Equal(t, 3*time.Minute, Window(bench.Result{ArrivalWindowS: 180}))
	assert.Equal(t, 1500*time.Millisecond, Window(bench.Result{ArrivalWindowS: 1.5}))
	assert.Zero(t, Window(bench.Result{}))
}
