package decisionlog

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/scheduler"
)

func TestEvidenceKeptOnlyWhereItExplainsTheRecord(t *testing.T) {
	zero := scheduler.Decision{}
	cases := []struct {
		name string
		edit func(*Record)
		keep bool
	}{
		{"capacity selection", func(*Record) {}, true},
		{"canceled before the attempt", func(r *Record) { r.Outcome, r.Attempts = OutcomeClientCanceled, 0 }, true},
		{"upstream failure", func(r *Record) { r.Outcome, r.Status = OutcomeUpstreamTimeout, 504 }, true},
		{"round robin", func(r *Record) { r.Strategy = StrategyRoundRobin }, false},
		{"direct", func(r *Record) { r.Route, r.Strategy, r.Member = RouteDirect, StrategyNone, "" }, false},
		{"another member", func(r *Record) { r.Member = "m2" }, false},
		{"not admitted", func(r *Record) { r.Outcome, r.Attempts, r.Member = OutcomeNotAdmitted, 0, "" }, false},
		{"no-eligible decision", func(r *Record) { r.ReplicaScheduler = &zero }, false},
		{"not admitted naming the member", func(r *Record) { r.Outcome, r.Attempts, r.Status = OutcomeNotAdmitted, 0, 503 }, false},
		{"refused naming the member", func(r *Record) { r.Outcome, r.Attempts, r.Status = OutcomeRefused, 0, 400 }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sink bytes.Buffer
			l := mustLog(t, 4, &sink)
			r := capacityRecord(t)
			tc.edit(&r)
			require.NoError(t, l.Add(r), "evidence problems never refuse the record")
			stored := l.Recent(1)[0]
			sum := Summarize([]Record{r})
			require.Len(t, sum.Tiers, 1)
			if tc.keep {
				assert.NotNil(t, stored.ReplicaScheduler)
				assert.Contains(t, sink.String(), `"replica_scheduler":{`)
				assert.Contains(t, r.Line(), "replica_scheduler=capacity")
				assert.NotNil(t, sum.Tiers[0].Scheduler)
				assert.Zero(t, l.Stats().EvidenceDiscarded)
				return
			}
			// All four surfaces discard it together and keep the pair.
			assert.Nil(t, stored.ReplicaScheduler)
			assert.NotContains(t, sink.String(), "replica_scheduler")
			assert.NotContains(t, r.Line(), "replica_scheduler")
			assert.Nil(t, sum.Tiers[0].Scheduler)
			assert.Equal(t, uint64(1), l.Stats().EvidenceDiscarded)
			assert.Equal(t, r.Outcome, stored.Outcome)
			assert.Equal(t, r.Member, stored.Member)
		})
	}
}

func TestWithMembership(t *testing.T) {
	cases := []struct {
		name       string
		membership map[string]map[string]int64
		keep       bool
	}{
		{"matching", map[string]map[string]int64{"pool": membership3()}, true},
		{"tier not a capacity tier", map[string]map[string]int64{"other": membership3()}, false},
		{"ceiling differs", map[string]map[string]int64{"pool": {"m1": 5, "m2": 4, "m3": 4}}, false},
		{"member not configured", map[string]map[string]int64{"pool": {"m1": 4, "m3": 4}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := mustLog(t, 4, nil, WithMembership(tc.membership))
			require.NoError(t, l.Add(capacityRecord(t)))
			assert.Equal(t, tc.keep, l.Recent(1)[0].ReplicaScheduler != nil)
			assert.Equal(t, !tc.keep, l.Stats().EvidenceDiscarded == 1)
		})
	}
}

func TestWithMembershipCopiesTheMap(t *testing.T) {
	m := map[string]map[string]int64{"pool": membership3()}
	l := mustLog(t, 4, nil, WithMembership(m))
	m["pool"]["m1"] = 9
	require.NoError(t, l.Add(capacityRecord(t)))
	assert.NotNil(t, l.Recent(1)[0].ReplicaScheduler)
}

func TestValidateEvidence(t *testing.T) {
	d := threeMembers(t)
	// Cursor 2 over m1..m3 gives m1 rank 1 and m2 rank 2.
	rotated := rank(t, 2,
		member{"m1", true, 0, 4, fresh(t, 0)},
		member{"m2", true, 0, 4, fresh(t, 0)},
		member{"m3", false, 0, 4, fresh(t, 0)},
	)
	cases := []struct {
		name    string
		d       scheduler.Decision
		members map[string]int64
		want    string
	}{
		{"valid", d, membership3(), ""},
		{"valid without the ineligible member", d, map[string]int64{"m1": 4, "m2": 4}, ""},
		{"unconfigured member", d, map[string]int64{"m1": 4, "m3": 4}, "decisionlog: invalid scheduler evidence: member not configured"},
		{"denominator", d, map[string]int64{"m1": 4, "m2": 8, "m3": 4}, "decisionlog: invalid scheduler evidence: local capacity differs from the configured ceiling"},
		{"rank outside membership", rotated, map[string]int64{"m1": 4, "m2": 4}, "decisionlog: invalid scheduler evidence: rotating rank outside the membership"},
		{"no selection", scheduler.Decision{}, membership3(), "decisionlog: invalid scheduler evidence: no selected member"},
		{"one member", d, map[string]int64{"m1": 4}, "decisionlog: invalid scheduler evidence: membership must have 2-16 members"},
		{"bad member id", d, map[string]int64{"m1": 4, "M2": 4}, "decisionlog: invalid scheduler evidence: malformed membership"},
		{"zero ceiling", d, map[string]int64{"m1": 4, "m2": 0}, "decisionlog: invalid scheduler evidence: malformed membership"},
		{"huge ceiling", d, map[string]int64{"m1": 4, "m2": ident.MaxCeiling + 1}, "decisionlog: invalid scheduler evidence: malformed membership"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateEvidence(tc.d, tc.members)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tc.want)
			assert.ErrorIs(t, err, ErrInvalidEvidence)
		})
	}
}
