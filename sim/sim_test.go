package sim

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/scheduler"
	"github.com/anvil-llm/anvil/scenarios"
)

func lookup(t testing.TB, name string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Lookup(name)
	require.NoError(t, err)
	return sc
}

func parse(t testing.TB, doc string) *scenarios.Scenario {
	t.Helper()
	sc, err := scenarios.Parse([]byte(doc))
	require.NoError(t, err)
	return sc
}

func run(t testing.TB, sc *scenarios.Scenario, opts Options) *Result {
	t.Helper()
	r, err := Run(sc, opts)
	require.NoError(t, err)
	return r
}

func memberIndex(t testing.TB, r *Result, id string) int8 {
	t.Helper()
	for i, m := range r.Members {
		if m.ID == id {
			return int8(i)
		}
	}
	t.Fatalf("no member %s", id)
	return -1
}

// assertAccounting checks the invariants every run must keep, whatever the scenario.
func assertAccounting(t *testing.T, r *Result) {
	t.Helper()
	inv := r.Invariants
	assert.Positive(t, inv.Checks)
	assert.Zero(t, inv.CeilingViolations, "ceilings")
	assert.Zero(t, inv.ReconcileViolations, "tier active == sum of members")
	assert.Zero(t, inv.ScopeViolations, "quiesce scopes")
	assert.Zero(t, inv.OrderViolations, "evidence order")
	assert.Zero(t, inv.EvidenceViolations, "evidence agrees with the sim's books")
	assert.Zero(t, inv.ReleaseMisuse, "release exactly once (admission's count)")
	assert.Equal(t, inv.Acquired, inv.Released, "every lease released")
	assert.Zero(t, inv.EndActive)
	var admitted uint64
	for _, q := range r.Requests {
		switch {
		case q.Outcome.Admitted():
			admitted++
			assert.Equal(t, uint8(1), q.Attempts, "one attempt per admitted request")
			assert.GreaterOrEqual(t, q.Member, int8(0))
			assert.GreaterOrEqual(t, q.End, q.Arrival)
		default:
			assert.Zero(t, q.Attempts, "a refusal makes no attempt")
			assert.Equal(t, int8(-1), q.Member)
		}
	}
	assert.Equal(t, admitted, inv.Acquired, "acquired == admitted")
	assert.Equal(t, admitted, inv.MemberDispatches, "members received exactly the admitted requests")
	var received uint64
	for _, m := range r.Members {
		received += m.Received
	}
	assert.Equal(t, inv.MemberDispatches, received)
	assert.Zero(t, inv.Redispatched+inv.Undispatched+inv.Misrouted+inv.Phantom, "each admitted request reached its one member once")
	assert.Equal(t, uint64(len(r.Requests)), r.DecisionLog.Added, "one decision record per request")
	assert.Zero(t, r.DecisionLog.Rejected)
}

func TestTwentyConcurrentNeverExceedsCeilings(t *testing.T) {
	r := run(t, lookup(t, "twenty-concurrent"), Options{})
	assertAccounting(t, r)
	assert.Equal(t, int64(6), r.TierCeiling)
	assert.Equal(t, int64(6), r.Invariants.PeakTierActive, "twenty concurrent attempts fill the tier exactly")
	for _, m := range r.Members {
		assert.LessOrEqual(t, m.PeakActive, m.Ceiling, m.ID)
	}
	// At t=0 twenty attempts arrive at once: six are admitted, fourteen refused, nothing queued.
	var atZero, admittedAtZero int
	for _, q := range r.Requests {
		if q.Arrival == 0 {
			atZero++
			if q.Outcome.Admitted() {
				admittedAtZero++
			}
		}
	}
	assert.Equal(t, 20, atZero)
	assert.Equal(t, 6, admittedAtZero)
	assert.Positive(t, r.Decisions.TierFull)
}

// TestDecisiveUnknownCases reads the decision records back through the real strict JSONL
// ingestion and checks both decisive cases of the spec on the evidence itself.
func TestDecisiveUnknownCases(t *testing.T) {
	var sink bytes.Buffer
	r := run(t, lookup(t, "decisive-unknown"), Options{Decisions: &sink})
	assertAccounting(t, r)
	recs, err := decisionlog.ReadJSONL(&sink, decisionlog.MaxReadRecords)
	require.NoError(t, err)
	require.Len(t, recs, len(r.Requests))
	var unknownLowerLocal, freshAtEqualLocal int
	for _, rec := range recs {
		require.NotNil(t, rec.ReplicaScheduler, "every admitted capacity record carries evidence")
		rows := rec.ReplicaScheduler.Scores()
		sel, _ := rec.ReplicaScheduler.SelectedMemberID()
		require.Equal(t, sel, rec.Member)
		if len(rows) < 2 {
			continue
		}
		a, b := rows[0], rows[1]
		lr := a.LocalActive()*b.LocalCapacity() - b.LocalActive()*a.LocalCapacity()
		switch {
		case lr < 0 && a.UpstreamUnknown() && !b.UpstreamUnknown():
			unknownLowerLocal++ // unknown 0/2 beat fresh 1/2
		case lr == 0 && !a.UpstreamUnknown() && b.UpstreamUnknown():
			freshAtEqualLocal++ // fresh beat unknown at equal local load
		case lr == 0:
			assert.Equal(t, a.UpstreamUnknown(), b.UpstreamUnknown(), "unknown never beats fresh at equal local load")
		}
	}
	assert.Positive(t, unknownLowerLocal)
	assert.Positive(t, freshAtEqualLocal)
	assert.Equal(t, uint64(unknownLowerLocal), r.Decisions.UnknownLowerLocalWins)
	assert.Equal(t, uint64(freshAtEqualLocal), r.Decisions.FreshBeatsUnknown)
	assert.Positive(t, r.Decisions.DecidedBy[DecidedRotation], "with all telemetry unknown, rotation decides ties")
	assert.Positive(t, r.Decisions.RowFreshness[scheduler.FreshnessFailed])
}

func TestRotationSharesWithinOne(t *testing.T) {
	sc := lookup(t, "rotation")
	for _, st := range sc.Strategies {
		t.Run(st, func(t *testing.T) {
			r := run(t, sc, Options{Strategy: st})
			assertAccounting(t, r)
			lo, hi := r.Members[0].Selected, r.Members[0].Selected
			for _, m := range r.Members {
				lo, hi = min(lo, m.Selected), max(hi, m.Selected)
			}
			assert.LessOrEqual(t, hi-lo, uint64(1))
			assert.Positive(t, lo)
		})
	}
}

func TestMemberDrainKeepsItsScope(t *testing.T) {
	r := run(t, lookup(t, "member-drain"), Options{})
	assertAccounting(t, r)
	require.Len(t, r.Drains, 1)
	d := r.Drains[0]
	assert.True(t, d.Completed)
	assert.Equal(t, "vllm-1", d.Member)
	assert.Positive(t, d.ActiveAtStart, "the drain waited for in-flight requests")
	assert.Positive(t, d.OthersActiveEnd, "peers kept their leases: the drain covered one member")
	m1 := memberIndex(t, r, "vllm-1")
	var admittedDuring, admittedAfter int
	for _, q := range r.Requests {
		if q.Member != m1 {
			continue
		}
		switch {
		case q.Arrival >= 20*time.Second && q.Arrival < 40*time.Second:
			admittedDuring++
		case q.Arrival >= 40*time.Second:
			admittedAfter++
		}
		if q.Arrival < 20*time.Second && q.End >= 20*time.Second {
			assert.Equal(t, decisionlog.OutcomeSuccess, q.Outcome, "a drain never cancels in-flight requests")
		}
	}
	assert.Zero(t, admittedDuring, "a quiesced member admits nothing")
	assert.Positive(t, admittedAfter, "readmitted")
	assert.Zero(t, r.Decisions.Quiesced, "peers absorb the load")
}

func TestTierDrainAndIndependentScopes(t *testing.T) {
	r := run(t, lookup(t, "tier-drain"), Options{})
	assertAccounting(t, r)
	require.Len(t, r.Drains, 2)
	assert.True(t, r.Drains[0].Refused, "draining a scope that is not quiesced is refused")
	assert.True(t, r.Drains[1].Completed)
	assert.Empty(t, r.Drains[1].Member)
	m2 := memberIndex(t, r, "vllm-2")
	for _, q := range r.Requests {
		at := q.Arrival
		if at >= 20*time.Second && at < 35*time.Second {
			assert.False(t, q.Outcome.Admitted(), "tier quiesced: nothing admitted at %v", at)
		}
		if q.Member == m2 && at >= 10*time.Second && at < 45*time.Second {
			t.Errorf("vllm-2 admitted at %v while quiesced (tier readmit must not clear it)", at)
		}
	}
	for _, a := range r.Actions {
		assert.Empty(t, a.Err, "%s at %v", a.Action, a.At)
	}
}

func TestUpstreamErrorsReleaseOnceAndInvokeNoPeer(t *testing.T) {
	var sink bytes.Buffer
	r := run(t, lookup(t, "upstream-errors"), Options{Decisions: &sink})
	assertAccounting(t, r)
	seen := map[decisionlog.Outcome]int{}
	for _, q := range r.Requests {
		seen[q.Outcome]++
	}
	for _, o := range []decisionlog.Outcome{decisionlog.OutcomeUpstreamHTTPError, decisionlog.OutcomeStreamTruncated, decisionlog.OutcomeUpstreamTransportError, decisionlog.OutcomeClientCanceled} {
		assert.Positive(t, seen[o], string(o))
	}
	recs, err := decisionlog.ReadJSONL(&sink, decisionlog.MaxReadRecords)
	require.NoError(t, err)
	require.Len(t, recs, len(r.Requests))
	// Records are written when requests end, so they are matched by request ID.
	for _, rec := range recs {
		i, err := strconv.Atoi(strings.TrimPrefix(rec.RequestID, "sim-"))
		require.NoError(t, err)
		q := r.Requests[i]
		assert.Equal(t, Epoch.Add(q.Arrival), rec.Start)
		assert.Equal(t, q.Outcome, rec.Outcome)
		assert.Equal(t, int(q.Attempts), rec.Attempts)
		if q.Member >= 0 {
			assert.Equal(t, r.Members[q.Member].ID, rec.Member, "the record names the one member invoked")
		}
	}
}

func TestTelemetryFaults(t *testing.T) {
	t.Run("outage", func(t *testing.T) {
		r := run(t, lookup(t, "metrics-outage"), Options{})
		assertAccounting(t, r)
		m := r.Members[memberIndex(t, r, "vllm-2")]
		assert.Positive(t, m.Scrapes[1], "failed scrapes during the outage")
		assert.Positive(t, m.Scrapes[0], "fresh again after it")
		assert.Positive(t, m.Selected, "local leases remain the floor: it keeps serving")
	})
	t.Run("stale", func(t *testing.T) {
		r := run(t, lookup(t, "stale-telemetry"), Options{})
		assertAccounting(t, r)
		assert.Positive(t, r.Decisions.RowFreshness[scheduler.FreshnessStale])
		assert.Positive(t, r.Telemetry.Overdue)
		assert.LessOrEqual(t, r.Telemetry.MaxPending, len(r.Members), "the refresh queue is bounded by membership")
		assert.GreaterOrEqual(t, r.Telemetry.WorkerBusy[0], 15*time.Second, "a hung scrape held a worker")
		assert.GreaterOrEqual(t, r.Telemetry.WorkerBusy[1], 15*time.Second)
	})
}

func TestRoundRobinReadsNoPressure(t *testing.T) {
	r := run(t, lookup(t, "rotation"), Options{Strategy: scenarios.StrategyRoundRobin})
	assert.False(t, r.Telemetry.Enabled)
	assert.Zero(t, r.Telemetry.Snapshots)
	assert.Zero(t, r.Decisions.Capacity, "round robin leases carry no evidence")
}

func TestRunRefusesWhatTheRouterRefuses(t *testing.T) {
	// The tier ceiling exceeds the members' sum: the config model refuses it, so the sim does too.
	sc := parse(t, `name: bad
duration: 10s
tier:
  strategy: capacity
  max_concurrency: 9
  members:
    - {id: a, max_concurrency: 2}
    - {id: b, max_concurrency: 2}
workload:
  closed: {clients: 1}
  prompt_tokens: {dist: constant, value: 16}
  output_tokens: {dist: constant, value: 8}
`)
	_, err := Run(sc, Options{})
	require.ErrorIs(t, err, ErrScenario)
	assert.Contains(t, err.Error(), "max_concurrency")
}

func TestCapacityNeedsMemberCeilings(t *testing.T) {
	doc := `name: rr
duration: 5s
tier:
  strategy: round_robin
  members:
    - {id: a}
    - {id: b}
workload:
  closed: {clients: 2}
  prompt_tokens: {dist: constant, value: 16}
  output_tokens: {dist: constant, value: 8}
`
	r := run(t, parse(t, doc), Options{})
	assertAccounting(t, r)
	_, err := Run(parse(t, doc), Options{Strategy: scenarios.StrategyCapacity})
	require.ErrorIs(t, err, ErrScenario, "capacity mode requires member ceilings")
}

func TestGatesRefuseOversizedRequests(t *testing.T) {
	sc := parse(t, `name: gates
duration: 5s
tier:
  strategy: capacity
  gates: {max_context_tokens: 1000, max_output_tokens: 100}
  members:
    - {id: a, max_concurrency: 2}
    - {id: b, max_concurrency: 2}
workload:
  closed: {clients: 2}
  prompt_tokens: {dist: uniform, min: 16, max: 1200}
  output_tokens: {dist: uniform, min: 8, max: 200}
`)
	r := run(t, sc, Options{})
	assertAccounting(t, r)
	var refused, admitted int
	for _, q := range r.Requests {
		switch q.Outcome {
		case decisionlog.OutcomeRefused:
			refused++
			assert.Equal(t, int16(400), q.Status)
		case decisionlog.OutcomeSuccess:
			admitted++
			assert.LessOrEqual(t, q.Output, int32(100), "the output gate held")
		}
	}
	assert.Positive(t, refused)
	assert.Positive(t, admitted)
}

func TestDeterministicResults(t *testing.T) {
	for _, name := range []string{"upstream-errors", "metrics-outage", "stale-telemetry"} {
		t.Run(name, func(t *testing.T) {
			sc := lookup(t, name)
			var a, b bytes.Buffer
			ra := run(t, sc, Options{Decisions: &a})
			rb := run(t, sc, Options{Decisions: &b})
			assert.Equal(t, ra, rb)
			assert.Equal(t, a.String(), b.String(), "decision logs are byte-identical")
			other := *sc
			other.Seed++
			rc := run(t, &other, Options{})
			assert.NotEqual(t, ra.Requests, rc.Requests)
		})
	}
}

func TestProgressReachesTheEnd(t *testing.T) {
	var calls int
	var last time.Duration
	sc := lookup(t, "rotation")
	run(t, sc, Options{Progress: func(done, total time.Duration) {
		calls++
		assert.GreaterOrEqual(t, done, last)
		assert.Equal(t, sc.Duration, total)
		last = done
	}})
	assert.Greater(t, calls, 10)
	assert.Equal(t, sc.Duration, last)
}

func TestDecisionSinkErrorsAreCounted(t *testing.T) {
	r := run(t, lookup(t, "rotation"), Options{Decisions: failingWriter{}})
	assert.Positive(t, r.DecisionLog.SinkErrors)
	assert.Equal(t, uint64(len(r.Requests)), r.DecisionLog.Added, "the ring keeps every record")
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// A restart cuts what is in flight (a transport failure before the first byte, a truncated stream
// after), carries admission's books over to the new router, restores the member's quiesce from the
// persisted intent, and keeps the peers and the tier serving.
func TestRestartRestoresMemberIntent(t *testing.T) {
	r := run(t, lookup(t, "restart-intent"), Options{})
	assertAccounting(t, r)
	require.Len(t, r.Restarts, 1)
	rs := r.Restarts[0]
	assert.Equal(t, 25*time.Second, rs.At)
	assert.Equal(t, 1, rs.RestoredMembers)
	assert.Zero(t, rs.RestoredTiers)
	assert.Positive(t, rs.Cut)
	m1 := memberIndex(t, r, "vllm-1")
	var cut, m1During, peersAfter int64
	for _, q := range r.Requests {
		if q.Arrival < rs.At && q.End == rs.At && q.Outcome != decisionlog.OutcomeSuccess {
			cut++
			assert.Contains(t, []decisionlog.Outcome{decisionlog.OutcomeUpstreamTransportError, decisionlog.OutcomeStreamTruncated}, q.Outcome)
		}
		if q.Member == m1 && q.Arrival >= 10*time.Second && q.Arrival < 45*time.Second {
			m1During++
		}
		if q.Member >= 0 && q.Member != m1 && q.Arrival > rs.At {
			peersAfter++
		}
	}
	assert.Equal(t, rs.Cut, cut, "every cut request ended at the restart")
	assert.Zero(t, m1During, "the quiesced member admits nothing, before or after the restart")
	assert.Positive(t, peersAfter, "the peers serve after the restart")
	assert.Zero(t, r.Invariants.ScopeViolations)
	assert.Zero(t, r.Decisions.Quiesced, "the tier never refused")

	forgot := run(t, lookup(t, "restart-intent"), Options{NoIntentFile: true})
	assert.Zero(t, forgot.Restarts[0].RestoredMembers)
	assert.Positive(t, forgot.Invariants.ScopeViolations, "without an intent file the restart forgets the quiesce")
}

// A restart refuses the requests waiting in the admission queue (503, nothing reserved, as the
// server answers them when a shutdown cuts its queue) before it cuts what is in flight, so no
// release admits one into the dying process; the new router's queue starts empty and works.
func TestRestartRefusesTheQueue(t *testing.T) {
	sc := lookup(t, "restart-intent")
	sc.Tier.Queue = &scenarios.Queue{MaxWaiting: 64, Timeout: 10 * time.Second}
	sc.Workload.Closed.Clients = 48 // more callers than the 12 member slots: the queue is never empty
	r := run(t, sc, Options{})
	assertAccounting(t, r)
	require.Len(t, r.Restarts, 1)
	rs := r.Restarts[0]
	var refused, cut, queuedAfter int64
	for _, q := range r.Requests {
		switch {
		case q.End == rs.At && q.Outcome == decisionlog.OutcomeNotAdmitted:
			refused++
			assert.Positive(t, q.Queued, "it waited in the queue")
			assert.Zero(t, q.Attempts)
			assert.EqualValues(t, 503, q.Status)
			assert.Equal(t, int8(-1), q.Member)
		case q.End == rs.At && q.Arrival < rs.At && q.Outcome != decisionlog.OutcomeSuccess:
			cut++
		case q.Arrival > rs.At && q.Queued > 0 && q.Outcome == decisionlog.OutcomeSuccess:
			queuedAfter++
		}
	}
	assert.Positive(t, refused, "requests were waiting at the restart")
	assert.Equal(t, rs.Cut, refused+cut, "the restart counts both")
	assert.Positive(t, queuedAfter, "the new router's queue admits")
	assert.Zero(t, r.Invariants.ScopeViolations)
}
