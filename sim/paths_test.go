package sim

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/scheduler"
	"github.com/anvil-llm/anvil/scenarios"
)

// twoMembers is a small capacity tier; tests append their workload and events.
// twoMembers is a tier for terminal-path tests: every member fails on purpose, so passive health
// (tested on its own scenarios) is off and every request reaches a member.
const twoMembers = `name: paths
duration: 20s
tier:
  strategy: capacity
  passive_health: {enabled: false}
  members:
    - {id: a, max_concurrency: 4}
    - {id: b, max_concurrency: 4}
`

// admittedByOutcome groups the admitted requests' statuses by outcome.
func admittedByOutcome(r *Result) map[decisionlog.Outcome][]int16 {
	out := map[decisionlog.Outcome][]int16{}
	for _, q := range r.Requests {
		if q.Outcome.Admitted() {
			out[q.Outcome] = append(out[q.Outcome], q.Status)
		}
	}
	return out
}

// TestStreamCutBeforeFirstByteIsTransportError: every stream is cut long before its first token
// (a 4096-token prefill); the relay has framed nothing, so it is a transport error, 502.
func TestStreamCutBeforeFirstByteIsTransportError(t *testing.T) {
	r := run(t, parse(t, twoMembers+`workload:
  closed: {clients: 4}
  prompt_tokens: {dist: constant, value: 4096}
  output_tokens: {dist: constant, value: 64}
events:
  - {at: 0s, action: stream_close, rate: 1, after_min: 1ms, after_max: 2ms}
`), Options{})
	assertAccounting(t, r)
	got := admittedByOutcome(r)
	require.Equal(t, []decisionlog.Outcome{decisionlog.OutcomeUpstreamTransportError}, slices.Collect(maps.Keys(got)))
	for _, st := range got[decisionlog.OutcomeUpstreamTransportError] {
		assert.Equal(t, int16(502), st)
	}
}

// TestStreamCutAfterFirstEventKeepsItsStatus: cut after the first token, a stream is truncated
// in-band after its 200.
func TestStreamCutAfterFirstEventKeepsItsStatus(t *testing.T) {
	r := run(t, parse(t, twoMembers+`workload:
  closed: {clients: 4}
  prompt_tokens: {dist: constant, value: 64}
  output_tokens: {dist: constant, value: 2000}
events:
  - {at: 0s, action: stream_close, rate: 1, after_min: 500ms, after_max: 1s}
`), Options{})
	assertAccounting(t, r)
	got := admittedByOutcome(r)
	require.NotEmpty(t, got[decisionlog.OutcomeStreamTruncated])
	for _, st := range got[decisionlog.OutcomeStreamTruncated] {
		assert.Equal(t, int16(200), st)
	}
}

// TestClientCancelAfterFirstEventKeepsTheStatus: the headers went out with the first event, so a
// client that leaves afterwards is recorded with the 200 it got, as the relay records it; one that
// leaves before is 499.
func TestClientCancelAfterFirstEventKeepsTheStatus(t *testing.T) {
	r := run(t, parse(t, twoMembers+`workload:
  closed: {clients: 4}
  prompt_tokens: {dist: constant, value: 64}
  output_tokens: {dist: constant, value: 2000}
  streaming: 0.5
  cancel: {share: 1, after_min: 500ms, after_max: 1s}
`), Options{})
	assertAccounting(t, r)
	var after, before int
	for _, q := range r.Requests {
		if q.Outcome != decisionlog.OutcomeClientCanceled {
			continue
		}
		if q.Stream && q.FirstToken >= 0 {
			after++
			assert.Equal(t, int16(200), q.Status)
		} else {
			before++
			assert.Equal(t, int16(decisionlog.StatusClientClosed), q.Status)
		}
	}
	assert.Positive(t, after, "streams canceled after their first event")
	assert.Positive(t, before, "ordinary requests canceled before their body")
}

// TestUpstreamTimeoutsFire: the router's upstream timers run in the sim. Both members are so slow
// that ordinary responses miss the first-byte timeout (504) and streams that started miss the
// overall timeout (200 already sent); every lease is released once.
func TestUpstreamTimeoutsFire(t *testing.T) {
	r := run(t, parse(t, twoMembers+`upstream: {first_byte_timeout: 1s, timeout: 2s}
workload:
  closed: {clients: 4}
  prompt_tokens: {dist: constant, value: 64}
  output_tokens: {dist: constant, value: 2000}
  streaming: 0.5
events:
  - {at: 0s, action: slow, member: a, factor: 30}
  - {at: 0s, action: slow, member: b, factor: 30}
`), Options{})
	assertAccounting(t, r)
	var firstByte, overall int
	for _, q := range r.Requests {
		require.Equal(t, decisionlog.OutcomeUpstreamTimeout, q.Outcome, "nothing finishes within 2 s")
		switch {
		case q.Stream && q.FirstToken >= 0:
			overall++
			assert.Equal(t, int16(200), q.Status)
			assert.Equal(t, 2*time.Second, q.End-q.Arrival, "the overall timer")
		default:
			firstByte++
			assert.Equal(t, int16(504), q.Status)
			assert.Equal(t, time.Second, q.End-q.Arrival, "the first-byte timer")
		}
	}
	assert.Positive(t, firstByte)
	assert.Positive(t, overall)
}

// TestDefaultUpstreamTimeoutsApply: without an upstream section the router's defaults (first byte
// 2 min) still bound an attempt.
func TestDefaultUpstreamTimeoutsApply(t *testing.T) {
	sc := parse(t, strings.Replace(twoMembers, "duration: 20s", "duration: 10m", 1)+`workload:
  closed: {clients: 1}
  prompt_tokens: {dist: constant, value: 64}
  output_tokens: {dist: constant, value: 2000}
  streaming: 0
events:
  - {at: 0s, action: slow, member: a, factor: 1000}
  - {at: 0s, action: slow, member: b, factor: 1000}
`)
	w, err := newWorld(sc, Options{})
	require.NoError(t, err)
	assert.Equal(t, 2*time.Minute, w.timers[timerFirstByte].after)
	assert.Equal(t, 10*time.Minute, w.timers[timerOverall].after)
	r := run(t, sc, Options{})
	assertAccounting(t, r)
	require.Len(t, r.Requests, 5, "one request per two minutes, then the backoff")
	for _, q := range r.Requests {
		assert.Equal(t, decisionlog.OutcomeUpstreamTimeout, q.Outcome)
		assert.Equal(t, int16(504), q.Status)
		assert.Equal(t, 2*time.Minute, q.End-q.Arrival)
	}
}

func TestDeadlinesCompact(t *testing.T) {
	d := deadlines{head: 5000}
	for i := range 6000 {
		d.ids, d.at = append(d.ids, int32(i)), append(d.at, time.Duration(i))
	}
	d.compact()
	assert.Equal(t, 0, d.head)
	assert.Len(t, d.ids, 1000)
	assert.Equal(t, int32(5000), d.ids[0])
	assert.Equal(t, time.Duration(5999), d.at[999])
	d.head = 10
	d.compact()
	assert.Equal(t, 10, d.head, "a small consumed front stays")
}

// TestDecisionLogChecksMembership: the sim's decision log checks evidence against the configured
// membership, as the server's does, so evidence with a wrong denominator is not stored.
func TestDecisionLogChecksMembership(t *testing.T) {
	w, err := newWorld(lookup(t, "twenty-concurrent"), Options{})
	require.NoError(t, err)
	evidence := func(capacities ...int64) *scheduler.Decision {
		var cands []scheduler.Candidate
		for i, id := range []string{"vllm-0", "vllm-1"} {
			c, err := scheduler.NewCandidate(id, true, 0, capacities[i], scheduler.UnknownPressure())
			require.NoError(t, err)
			cands = append(cands, c)
		}
		d, err := scheduler.Rank(cands, 0)
		require.NoError(t, err)
		return &d
	}
	rec := decisionlog.Record{RequestID: "sim-1", Alias: "chat", Tier: "pool", Member: "vllm-0",
		Route: decisionlog.RouteReplica, Strategy: decisionlog.StrategyCapacity, Outcome: decisionlog.OutcomeSuccess,
		Attempts: 1, Status: 200, Start: Epoch}
	rec.ReplicaScheduler = evidence(3, 4) // the configured ceilings
	require.NoError(t, w.router.Decisions().Add(rec))
	assert.Zero(t, w.router.Decisions().Stats().EvidenceDiscarded)
	rec.ReplicaScheduler = evidence(5, 4) // vllm-0's denominator is not its ceiling
	require.NoError(t, w.router.Decisions().Add(rec))
	assert.Equal(t, uint64(1), w.router.Decisions().Stats().EvidenceDiscarded)
}

// TestSnapshotsAreComplete: admission refuses a readiness map that misses a configured member
// and a pressure map that is neither nil nor complete; the sim's sources always cover every member.
func TestSnapshotsAreComplete(t *testing.T) {
	sc := lookup(t, "metrics-outage")
	w, err := newWorld(sc, Options{})
	require.NoError(t, err)
	w.prepare()
	ids := []string{"vllm-0", "vllm-1", "vllm-2"}
	check := func(stage string) {
		ready := w.ready.Snapshot(w.tier.ID)
		assert.ElementsMatch(t, ids, slices.Collect(maps.Keys(ready)), stage)
		p, err := w.press.Snapshot(w.tier.ID)
		require.NoError(t, err)
		assert.ElementsMatch(t, ids, slices.Collect(maps.Keys(p)), stage)
	}
	check("before the first probe")
	w.start()
	w.loop()
	check("after the run")
	assert.Nil(t, w.ready.Snapshot("other-tier"), "another tier's readiness is nothing, not a partial map")
	r := w.finish()
	assert.Zero(t, r.Decisions.NoEligible, "admission never refused the sim's snapshots")
}

// TestCheckRefusesWhatRunRefuses: Check builds what Run builds, per strategy.
func TestCheckRefusesWhatRunRefuses(t *testing.T) {
	sc := parse(t, `name: rr
duration: 5s
strategies: [round_robin, capacity]
tier:
  strategy: round_robin
  members:
    - {id: a}
    - {id: b}
workload:
  closed: {clients: 2}
  prompt_tokens: {dist: constant, value: 16}
  output_tokens: {dist: constant, value: 8}
`)
	require.NoError(t, Check(sc, scenarios.StrategyRoundRobin))
	err := Check(sc, scenarios.StrategyCapacity)
	require.ErrorIs(t, err, ErrScenario)
	assert.Contains(t, err.Error(), "max_concurrency")
	sc.Upstream = scenarios.Upstream{FirstByteTimeout: 2 * time.Minute, Timeout: time.Minute}
	require.ErrorIs(t, Check(sc, scenarios.StrategyRoundRobin), ErrScenario, "the router refuses first byte > timeout")
}

// TestDrainCountsInFlightFailures: requests in flight on a draining member that die with it are
// counted, so the drains' "nothing failed" gate can fail.
func TestDrainCountsInFlightFailures(t *testing.T) {
	r := run(t, parse(t, twoMembers+`workload:
  closed: {clients: 6}
  prompt_tokens: {dist: constant, value: 64}
  output_tokens: {dist: constant, value: 2000}
events:
  - {at: 5s, action: quiesce, member: a}
  - {at: 5s, action: drain, member: a}
  - {at: 6s, action: kill, member: a}
`), Options{})
	require.Len(t, r.Drains, 1)
	d := r.Drains[0]
	assert.True(t, d.Completed)
	assert.Positive(t, d.ActiveAtStart)
	assert.Equal(t, d.ActiveAtStart, d.InFlightFailed, "every request in flight on a died")
}
