package capacity_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/capacity"
	"github.com/anvil-llm/anvil/router/health"
	"github.com/anvil-llm/anvil/router/readiness"
)

// fixedHealth answers a tier's passive health from a map; a tier it lacks does not track it.
type fixedHealth map[string][]health.MemberHealth

func (f fixedHealth) Health(tier string) ([]health.MemberHealth, error) {
	hs, ok := f[tier]
	if !ok {
		return nil, health.ErrUnknownTier
	}
	return hs, nil
}

// rrHealth is a valid answer for the fixture's round-robin tier: a healthy with a streak, b ejected.
func rrHealth() []health.MemberHealth {
	return []health.MemberHealth{
		{ID: "a", State: health.Healthy, Streak: 2, Ejections: 1},
		{ID: "b", State: health.Ejected, Ejections: 3, EjectedUntil: t0.Add(1500 * time.Millisecond)},
	}
}

// TestPassiveHealthJoinsTheMembers: each replica member carries its passive-health state in both
// views; direct tiers and tiers the reader does not track carry none.
func TestPassiveHealthJoinsTheMembers(t *testing.T) {
	src, plan, _ := fixtureSources(t)
	src.Health = fixedHealth{"rr": rrHealth()}
	doc := capacity.Read(plan, src)
	rr := tierByID(t, doc, "rr")
	require.NotNil(t, rr.Members[0].PassiveHealth)
	assert.Equal(t, capacity.PassiveHealth{State: "healthy", Streak: 2, Ejections: 1}, *rr.Members[0].PassiveHealth)
	b := rr.Members[1].PassiveHealth
	require.NotNil(t, b)
	assert.Equal(t, "ejected", b.State)
	require.NotNil(t, b.EjectedUntil)
	assert.Equal(t, t0.Add(1500*time.Millisecond), *b.EjectedUntil)
	for _, m := range tierByID(t, doc, "pool").Members {
		assert.Nil(t, m.PassiveHealth, "the reader does not track pool")
	}

	out, err := json.Marshal(rr)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"passive_health":{"state":"ejected","streak":0,"ejections":3,"ejected_until":"2026-03-04T05:06:08.5Z"}`)

	view := capacity.AdmissionView(src.Admission.Snapshots())
	capacity.AttachHealth(view, src.Health)
	for _, tier := range view {
		if tier.ID == "rr" {
			assert.Equal(t, rr.Members[1].PassiveHealth, tier.Members[1].PassiveHealth, "both views agree")
		}
	}
}

// TestMalformedHealthIsNotShown: an answer that is not exactly the tier's members, in order, with
// consistent states, shows no passive health for that tier rather than a wrong one.
func TestMalformedHealthIsNotShown(t *testing.T) {
	cases := map[string]func([]health.MemberHealth) []health.MemberHealth{
		"a member missing":          func(h []health.MemberHealth) []health.MemberHealth { return h[:1] },
		"an extra member":           func(h []health.MemberHealth) []health.MemberHealth { return append(h, health.MemberHealth{ID: "c"}) },
		"out of order":              func(h []health.MemberHealth) []health.MemberHealth { return []health.MemberHealth{h[1], h[0]} },
		"unknown state":             func(h []health.MemberHealth) []health.MemberHealth { h[0].State = 9; return h },
		"ejected without an end":    func(h []health.MemberHealth) []health.MemberHealth { h[1].EjectedUntil = time.Time{}; return h },
		"an end while healthy":      func(h []health.MemberHealth) []health.MemberHealth { h[0].EjectedUntil = t0; return h },
		"negative streak":           func(h []health.MemberHealth) []health.MemberHealth { h[0].Streak = -1; return h },
		"ejections beyond 2^53 - 1": func(h []health.MemberHealth) []health.MemberHealth { h[0].Ejections = 1 << 53; return h },
	}
	for name, breakIt := range cases {
		t.Run(name, func(t *testing.T) {
			src, plan, _ := fixtureSources(t)
			src.Health = fixedHealth{"rr": breakIt(rrHealth())}
			rr := tierByID(t, capacity.Read(plan, src), "rr")
			require.True(t, rr.Available, "health never makes the tier unavailable")
			for _, m := range rr.Members {
				assert.Nil(t, m.PassiveHealth, m.ID)
			}
		})
	}
}

// queuedSnapshots gives the fixture's hosted tier a queue of 8 with 3 waiting and 5 refused full.
func queuedSnapshots(snaps []admission.Snapshot) []admission.Snapshot {
	return mutate(snaps, "hosted", func(s *admission.Snapshot) { s.Waiting, s.MaxWaiting, s.QueueFull = 3, 8, 5 })
}

func queuedPlan(plan []capacity.TierSpec) []capacity.TierSpec {
	out := append([]capacity.TierSpec(nil), plan...)
	for i := range out {
		if out[i].ID == "hosted" {
			out[i].MaxWaiting = 8
		}
	}
	return out
}

// TestQueueInTheViews: a tier with a queue shows it, checked against the configured bound; a
// snapshot whose queue disagrees with the configuration makes the tier unavailable, keeping the key.
func TestQueueInTheViews(t *testing.T) {
	src, plan, p := fixtureSources(t)
	snaps, qplan := queuedSnapshots(src.Admission.Snapshots()), queuedPlan(plan)
	hosted := tierByID(t, capacity.Build(qplan, snaps, p), "hosted")
	require.True(t, hosted.Available)
	assert.Equal(t, &capacity.Queue{Waiting: 3, MaxWaiting: 8, RefusedFull: 5}, hosted.Queue)
	out, err := json.Marshal(hosted)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"queue":{"waiting":3,"max_waiting":8,"refused_full":5}`)
	assert.Nil(t, tierByID(t, capacity.Build(qplan, snaps, p), "rr").Queue, "no queue configured, none shown")

	bad := map[string]func(*admission.Snapshot){
		"bound differs from the configuration": func(s *admission.Snapshot) { s.MaxWaiting = 9 },
		"more waiting than the bound":          func(s *admission.Snapshot) { s.Waiting = 9 },
		"negative waiting":                     func(s *admission.Snapshot) { s.Waiting = -1 },
		"refusals beyond 2^53 - 1":             func(s *admission.Snapshot) { s.QueueFull = 1 << 53 },
	}
	for name, f := range bad {
		t.Run(name, func(t *testing.T) {
			tier := tierByID(t, capacity.Build(qplan, mutate(snaps, "hosted", f), p), "hosted")
			assert.False(t, tier.Available)
			out, err := json.Marshal(tier)
			require.NoError(t, err)
			assert.Contains(t, string(out), `"queue":null`)
			assert.Contains(t, string(out), `"state":"unavailable"`)
		})
	}
	t.Run("a queue the configuration does not have", func(t *testing.T) {
		assert.False(t, tierByID(t, capacity.Build(plan, snaps, p), "hosted").Available)
	})
}

// TestCollectorShowsQueueAndHealth: the queue's gauges and counter and the members' one-hot
// passive-health state and ejections, from the same reads as the JSON.
func TestCollectorShowsQueueAndHealth(t *testing.T) {
	src, plan, _ := fixtureSources(t)
	src.Admission = snapshots(queuedSnapshots(src.Admission.Snapshots()))
	src.Health = fixedHealth{"rr": rrHealth()}
	reg := prometheus.NewRegistry()
	reg.MustRegister(capacity.NewCollector(queuedPlan(plan), src))
	f := gatherMap(t, reg)
	assert.Equal(t, 3.0, value(t, f, "anvil_router_admission_queue_waiting", "tier", "hosted"))
	assert.Equal(t, 8.0, value(t, f, "anvil_router_admission_queue_max_waiting", "tier", "hosted"))
	assert.Equal(t, 5.0, value(t, f, "anvil_router_admission_queue_full_total", "tier", "hosted"))
	assert.Len(t, f["anvil_router_admission_queue_waiting"].GetMetric(), 1, "only tiers with a queue")
	for _, c := range []struct {
		member, state string
		want          float64
	}{{"a", "healthy", 1}, {"a", "ejected", 0}, {"a", "half_open", 0}, {"b", "healthy", 0}, {"b", "ejected", 1}, {"b", "half_open", 0}} {
		assert.Equal(t, c.want, value(t, f, "anvil_router_member_passive_health", "tier", "rr", "member", c.member, "state", c.state), c)
	}
	assert.Equal(t, 3.0, value(t, f, "anvil_router_member_passive_health_ejections_total", "tier", "rr", "member", "b"))
	assert.Len(t, f["anvil_router_member_passive_health_ejections_total"].GetMetric(), 2, "only members with passive health")
}

// TestReadinessJoinsTheMembers: each replica member carries its latest completed verdict in both
// views; a verdict for a member the tier does not have, or outside the readiness verdicts, is not
// shown, and direct tiers carry none.
func TestReadinessJoinsTheMembers(t *testing.T) {
	src, plan, _ := fixtureSources(t)
	verdicts := fixtureReadiness()
	verdicts["rr"] = append(verdicts["rr"], readiness.MemberVerdict{Member: "ghost", Verdict: readiness.Ready})
	verdicts["pool"][0].Verdict = readiness.Verdict(200) // "failed": not a verdict
	src.Readiness = verdicts
	doc := capacity.Read(plan, src)
	got := map[string]string{}
	for _, tier := range doc.Tiers {
		for _, m := range tier.Members {
			got[tier.ID+"/"+m.ID] = m.Readiness
		}
	}
	assert.Equal(t, map[string]string{"rr/a": "ready", "rr/b": "unhealthy", "pool/failed": "",
		"pool/fresh": "ready", "pool/malformed": "ready", "pool/silent": "unprobed", "pool/stale": "wrong_model"}, got)

	view := capacity.AdmissionView(src.Admission.Snapshots())
	capacity.AttachReadiness(view, src.Readiness)
	for _, tier := range view {
		for _, m := range tier.Members {
			assert.Equal(t, got[tier.ID+"/"+m.ID], m.Readiness, "both views agree")
		}
	}
	out, err := json.Marshal(tierByID(t, doc, "rr"))
	require.NoError(t, err)
	assert.Contains(t, string(out), `"max_concurrency":0,"readiness":"unhealthy"`)
}
