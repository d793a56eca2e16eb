package capacity_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/capacity"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/readiness"
	"github.com/anvil-llm/anvil/router/routing"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// fixture is a direct tier "hosted" (ceiling 4), a round-robin tier "rr" (members a and b, a with a
// ceiling of 2), and a capacity tier "pool" of five members whose telemetry is, at the fixed clock,
// fresh, stale, failed, never sampled (unknown) and malformed (unknown with requests invalid).
const fixture = `
listen: 127.0.0.1:0
aliases:
  - {id: big, tier: hosted}
  - {id: spread, tier: rr}
  - {id: chat, tier: pool}
tiers:
  - id: hosted
    kind: direct
    served_model: gpt
    endpoint: https://api.example.com/v1
    max_concurrency: 4
    gates: {max_context_tokens: 4096}
  - id: rr
    kind: replica
    served_model: m
    host: 127.0.0.1
    provenance: test
    gates: {max_context_tokens: 4096}
    members:
      - {id: a, endpoint: "http://127.0.0.1:9101", max_concurrency: 2}
      - {id: b, endpoint: "http://127.0.0.1:9102"}
  - id: pool
    kind: replica
    served_model: m
    host: 127.0.0.1
    provenance: test
    replica_strategy: capacity
    gates: {max_context_tokens: 4096}
    members:
      - {id: fresh, endpoint: "http://127.0.0.1:9001", max_concurrency: 4}
      - {id: stale, endpoint: "http://127.0.0.1:9002", max_concurrency: 4}
      - {id: failed, endpoint: "http://127.0.0.1:9003", max_concurrency: 2}
      - {id: silent, endpoint: "http://127.0.0.1:9004", max_concurrency: 2}
      - {id: malformed, endpoint: "http://127.0.0.1:9005", max_concurrency: 2}
`

func fixtureConfig(t testing.TB) config.Config {
	t.Helper()
	cfg, err := load.Parse([]byte(fixture), func(k string) (string, bool) {
		return "caller-token-0123456789", k == config.EnvAPIToken
	})
	require.NoError(t, err)
	return cfg
}

// t0 is the fixed clock of the fixture's telemetry.
var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// fixedPressure is a pressure source frozen at t0+6s: Peek answers the same map every time. It has
// the cache's other methods only to fail the test if anything calls them.
type fixedPressure struct {
	t     testing.TB
	m     map[string]map[string]scheduler.Pressure
	err   error
	peeks []string
}

func (f *fixedPressure) Peek(tier string) (map[string]scheduler.Pressure, error) {
	f.peeks = append(f.peeks, tier)
	if f.err != nil {
		return nil, f.err
	}
	src, ok := f.m[tier]
	if !ok {
		return nil, errUnknownTier
	}
	out := make(map[string]scheduler.Pressure, len(src))
	for k, v := range src {
		out[k] = v
	}
	return out, nil
}

// Snapshot would schedule a scrape: a view must never call it.
func (f *fixedPressure) Snapshot(string) (map[string]scheduler.Pressure, error) {
	f.t.Fatal("a view called the pressure cache's Snapshot, which schedules a scrape")
	return nil, nil
}

// Fetch would collect a member: a view must never call it.
func (f *fixedPressure) Fetch() {
	f.t.Fatal("a view fetched a member's metrics")
}

type constErr string

func (e constErr) Error() string { return string(e) }

const errUnknownTier = constErr("unknown tier")

func some(v float64) scheduler.Metric { return scheduler.Metric{Value: v, Present: true} }

// fixturePressure normalizes the pool's five samples at t0+6s.
func fixturePressure(t testing.TB) *fixedPressure {
	now := t0.Add(6 * time.Second)
	obs := func(at time.Duration, ok bool, run, wait scheduler.Metric, kv scheduler.Metric, capacity int64) scheduler.Pressure {
		return scheduler.NormalizePressure(now, scheduler.Observation{ObservedAt: t0.Add(at), Successful: ok,
			RequestsRunning: run, RequestsWaiting: wait, KVCacheUsage: kv, SchedulerCapacity: capacity})
	}
	return &fixedPressure{t: t, m: map[string]map[string]scheduler.Pressure{"pool": {
		"fresh":     obs(5500*time.Millisecond, true, some(3), some(2), some(0.25), 4),
		"stale":     obs(0, true, some(1), some(0), some(0.5), 4),
		"failed":    obs(5*time.Second, false, scheduler.Metric{}, scheduler.Metric{}, scheduler.Metric{}, 2),
		"silent":    scheduler.UnknownPressure(),
		"malformed": obs(5900*time.Millisecond, true, scheduler.MalformedMetric(), some(0), some(0.1), 2),
	}}}
}

// fixtureAdmission is the fixture's real admission with leases held: one on the direct tier, two on
// the round-robin tier, three on the pool, and two of the pool's members quiesced, one idle and one
// draining.
func fixtureAdmission(t testing.TB, cfg config.Config, p *fixedPressure) *admission.Set {
	t.Helper()
	set, err := admission.New(routing.AdmissionSpecs(cfg))
	require.NoError(t, err)
	hosted, _ := set.Tier("hosted")
	_, err = hosted.Acquire()
	require.NoError(t, err)
	rr, _ := set.Tier("rr")
	for range 2 {
		_, err = rr.AcquireMember(map[string]bool{"a": true, "b": true}, nil, nil)
		require.NoError(t, err)
	}
	pool, _ := set.Tier("pool")
	ready := map[string]bool{"fresh": true, "stale": true, "failed": true, "silent": true, "malformed": true}
	for range 3 {
		_, err = pool.AcquireMember(ready, p.m["pool"], nil)
		require.NoError(t, err)
	}
	require.NoError(t, pool.QuiesceMember("stale", "maintenance"))  // idle: quiesced, not draining
	require.NoError(t, pool.QuiesceMember("silent", "disk-swap.2")) // one lease left: draining
	return set
}

// fixedReadiness answers fixed verdicts.
type fixedReadiness map[string][]readiness.MemberVerdict

func (f fixedReadiness) Verdicts(tier string) []readiness.MemberVerdict { return f[tier] }

func fixtureReadiness() fixedReadiness {
	return fixedReadiness{
		"rr": {{Member: "a", Verdict: readiness.Ready}, {Member: "b", Verdict: readiness.Unhealthy}},
		"pool": {{Member: "failed", Verdict: readiness.Unreachable}, {Member: "fresh", Verdict: readiness.Ready},
			{Member: "malformed", Verdict: readiness.Ready}, {Member: "silent", Verdict: readiness.Unprobed},
			{Member: "stale", Verdict: readiness.WrongModel}},
	}
}

// fixedStats are fixed decision-log counters.
type fixedStats decisionlog.Stats

func (f fixedStats) Stats() decisionlog.Stats { return decisionlog.Stats(f) }

func fixtureStats() fixedStats {
	return fixedStats{Added: 120, Rejected: 1, EvidenceDiscarded: 2, SinkLines: 117, SinkDropped: 2,
		SinkOversize: 1, SinkErrors: 3, SinkShortWrites: 1, SinkAfterClose: 0}
}

// snapshots is an admission reader frozen on given snapshots.
type snapshots []admission.Snapshot

func (s snapshots) Snapshots() []admission.Snapshot { return s }

func fixtureSources(t testing.TB) (capacity.Sources, []capacity.TierSpec, *fixedPressure) {
	cfg := fixtureConfig(t)
	p := fixturePressure(t)
	set := fixtureAdmission(t, cfg, p)
	return capacity.Sources{Admission: set, Pressure: p, SampleAges: fixtureAges(), Readiness: fixtureReadiness(), Decisions: fixtureStats()},
		capacity.Plan(cfg), p
}

// fixedAges is a sample-age source frozen on a map per tier, or failing.
type fixedAges struct {
	m   map[string]map[string]time.Duration
	err error
}

func (f fixedAges) SampleAges(tier string) (map[string]time.Duration, error) {
	if f.err != nil {
		return nil, f.err
	}
	return f.m[tier], nil
}

// fixtureAges gives the pool's members the ages behind their classes at t0+6s (fresh 250 ms, failed
// 500 ms, stale 6 s; silent and malformed never sampled), plus an age for a member the tier does not
// have and a negative one, which the views leave out.
func fixtureAges() fixedAges {
	return fixedAges{m: map[string]map[string]time.Duration{
		"pool": {"fresh": 250 * time.Millisecond, "failed": 500 * time.Millisecond, "stale": 6 * time.Second,
			"malformed": -time.Second, "ghost": time.Second},
		"rr": {"a": time.Second},
	}}
}
