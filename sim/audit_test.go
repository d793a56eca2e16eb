package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// auditFixture is four members of ceiling 4 as the sim's books see them, and the decision the
// real scheduler makes over exactly those books.
type auditFixture struct {
	ids   []string
	views []memberView
}

func newAuditFixture() auditFixture {
	return auditFixture{
		ids: []string{"a", "b", "c", "d"},
		views: []memberView{
			{ceiling: 4, active: 1, eligible: true, freshness: scheduler.FreshnessFresh, ppm: 250_000},
			{ceiling: 4, active: 1, eligible: true, freshness: scheduler.FreshnessFresh, ppm: 500_000},
			{ceiling: 4, active: 2, eligible: true, freshness: scheduler.FreshnessUnknown},
			{ceiling: 4, active: 4, eligible: false, freshness: scheduler.FreshnessUnknown},
		},
	}
}

func (f auditFixture) index(id string) (int, bool) {
	for i, m := range f.ids {
		if m == id {
			return i, true
		}
	}
	return 0, false
}

// pressureOf builds the scheduler's pressure for a view through the real normalizer: a sample of
// (ppm/1e6 * capacity) requests, observed now.
func pressureOf(t *testing.T, v memberView) scheduler.Pressure {
	t.Helper()
	if v.freshness != scheduler.FreshnessFresh {
		return scheduler.UnknownPressure()
	}
	now := Epoch.Add(time.Minute)
	n := float64(v.ppm * v.ceiling / 1_000_000)
	p := scheduler.NormalizePressure(now, scheduler.Observation{ObservedAt: now, Successful: true, SchedulerCapacity: v.ceiling,
		RequestsRunning: scheduler.Metric{Value: n, Present: true}, RequestsWaiting: scheduler.Metric{Value: 0, Present: true}})
	got, ok := p.PPM()
	require.True(t, ok)
	require.Equal(t, v.ppm, got)
	return p
}

// decide ranks the books with the real scheduler, as admission would.
func (f auditFixture) decide(t *testing.T, books []memberView) scheduler.Decision {
	t.Helper()
	var cands []scheduler.Candidate
	for i, v := range books {
		c, err := scheduler.NewCandidate(f.ids[i], v.eligible, v.active, v.ceiling, pressureOf(t, v))
		require.NoError(t, err)
		cands = append(cands, c)
	}
	d, err := scheduler.Rank(cands, 0)
	require.NoError(t, err)
	return d
}

func TestCheckEvidenceAgreesWithHonestBooks(t *testing.T) {
	f := newAuditFixture()
	d := f.decide(t, f.views)
	sel, _ := d.SelectedMemberID()
	assert.Equal(t, "a", sel, "lower pressure wins at equal local load")
	assert.Equal(t, evidenceCheck{}, checkEvidence(d, sel, f.views, f.index))
	assert.Equal(t, evidenceCheck{order: 1}, checkEvidence(d, "b", f.views, f.index), "the lease names another member")
}

// TestCheckEvidenceCatchesDisagreement: evidence built from books other than the sim's must be
// counted, whichever figure differs.
func TestCheckEvidenceCatchesDisagreement(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(books []memberView)
	}{
		{"a local count other than the sim's leases", func(b []memberView) { b[1].active = 0 }},
		{"an eligible member left out", func(b []memberView) { b[1].eligible = false }},
		{"an ineligible member ranked", func(b []memberView) { b[3].active, b[3].eligible = 3, true }},
		{"a fresh ppm other than the held sample's", func(b []memberView) { b[1].ppm = 750_000 }},
		{"fresh where the held sample is not", func(b []memberView) { b[2].freshness, b[2].ppm = scheduler.FreshnessFresh, 0 }},
		{"unknown where the held sample is fresh", func(b []memberView) { b[0].freshness = scheduler.FreshnessUnknown }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newAuditFixture()
			books := append([]memberView(nil), f.views...)
			c.mutate(books)
			d := f.decide(t, books) // admission ranked these books...
			sel, _ := d.SelectedMemberID()
			got := checkEvidence(d, sel, f.views, f.index) // ...the sim holds the honest ones
			assert.Zero(t, got.order)
			assert.Positive(t, got.evidence)
		})
	}
}

func TestExpectedFreshnessFollowsTheHeldSample(t *testing.T) {
	w, err := newWorld(lookup(t, "metrics-outage"), Options{})
	require.NoError(t, err)
	w.prepare()
	tel := w.press
	f, _ := tel.expected(0, 0)
	assert.Equal(t, scheduler.FreshnessUnknown, f, "nothing published yet")

	tel.held[0] = heldSample{published: true, class: pressure.ClassOK, observedAt: time.Second, running: 3, waiting: 2,
		usedBlocks: 10, totalBlocks: 1000, kv: true}
	f, ppm := tel.expected(0, 2*time.Second)
	assert.Equal(t, scheduler.FreshnessFresh, f)
	assert.Equal(t, int64(625_000), ppm, "ceil(5 * 1e6 / 8) beats ceil(10 * 1e6 / 1000)")
	tel.held[0].usedBlocks = 999
	_, ppm = tel.expected(0, 2*time.Second)
	assert.Equal(t, int64(999_000), ppm, "KV pressure wins when higher")
	tel.held[0].kv = false
	_, ppm = tel.expected(0, 2*time.Second)
	assert.Equal(t, int64(625_000), ppm, "a page without a KV signal (llama.cpp's) is request pressure only")
	tel.held[0].kv = true
	f, _ = tel.expected(0, time.Second+scheduler.MaxAge+1)
	assert.Equal(t, scheduler.FreshnessStale, f)

	tel.workers[1] = worker{busy: true, member: 0, since: 2 * time.Second}
	f, _ = tel.expected(0, 3*time.Second)
	assert.Equal(t, scheduler.FreshnessFresh, f, "a running refresh within its budget changes nothing")
	f, _ = tel.expected(0, 3*time.Second+1)
	assert.Equal(t, scheduler.FreshnessFailed, f, "an overdue running refresh reads failed")
}
