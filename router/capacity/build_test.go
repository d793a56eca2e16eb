package capacity_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/capacity"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// tierByID finds a tier of a document.
func tierByID(t *testing.T, doc capacity.Document, id string) capacity.Tier {
	t.Helper()
	for _, tier := range doc.Tiers {
		if tier.ID == id {
			return tier
		}
	}
	t.Fatalf("tier %s missing from the view", id)
	return capacity.Tier{}
}

// mutate returns a copy of snaps with the snapshot of tier changed by f (members deep-copied).
func mutate(snaps []admission.Snapshot, tier string, f func(*admission.Snapshot)) []admission.Snapshot {
	out := make([]admission.Snapshot, len(snaps))
	for i, sn := range snaps {
		sn.Members = append([]admission.MemberSnapshot(nil), sn.Members...)
		if sn.ID == tier {
			f(&sn)
		}
		out[i] = sn
	}
	return out
}

func memberIndex(sn *admission.Snapshot, id string) int {
	for i, m := range sn.Members {
		if m.ID == id {
			return i
		}
	}
	return -1
}

// TestMalformedSnapshotsAreUnavailable: every breach of T011's snapshot rules makes that tier, and only
// that tier, unavailable; nothing is coerced.
func TestMalformedSnapshotsAreUnavailable(t *testing.T) {
	src, plan, p := fixtureSources(t)
	good := src.Admission.Snapshots()
	cases := []struct {
		name string
		tier string
		f    func(*admission.Snapshot)
	}{
		{"wrong kind", "pool", func(s *admission.Snapshot) { s.Kind = admission.KindDirect }},
		{"wrong strategy", "pool", func(s *admission.Snapshot) { s.Strategy = admission.StrategyRoundRobin }},
		{"unknown state", "pool", func(s *admission.Snapshot) { s.State = "paused" }},
		{"quiesced without a reason", "pool", func(s *admission.Snapshot) { s.State = admission.StateQuiesced }},
		{"admitting with a reason", "pool", func(s *admission.Snapshot) { s.Reason = "oops" }},
		{"reason outside the grammar", "pool", func(s *admission.Snapshot) {
			s.State, s.Reason, s.Draining = admission.StateQuiesced, "Not A Code!", true
		}},
		{"draining while admitting", "pool", func(s *admission.Snapshot) { s.Draining = true }},
		{"quiesced with leases but not draining", "pool", func(s *admission.Snapshot) {
			s.State, s.Reason = admission.StateQuiesced, "operator"
		}},
		{"tier ceiling differs from the configuration", "pool", func(s *admission.Snapshot) { s.MaxConcurrency = 13 }},
		{"negative active", "hosted", func(s *admission.Snapshot) { s.Active = -1 }},
		{"released beyond 2^53", "hosted", func(s *admission.Snapshot) { s.Released = 1 << 53 }},
		{"members do not sum to the tier", "pool", func(s *admission.Snapshot) { s.Active = 2 }},
		{"member ceiling differs", "pool", func(s *admission.Snapshot) { s.Members[0].MaxConcurrency = 3 }},
		{"configured member marked retiring", "pool", func(s *admission.Snapshot) { s.Members[0].Retiring = true }},
		{"retiring member without a lease", "pool", func(s *admission.Snapshot) {
			s.Members = append(s.Members, admission.MemberSnapshot{ID: "gone", State: admission.StateAdmitting, Retiring: true})
		}},
		{"retiring member with a ceiling", "pool", func(s *admission.Snapshot) {
			s.Members = append(s.Members, admission.MemberSnapshot{ID: "gone", State: admission.StateAdmitting,
				Retiring: true, Active: 1, MaxConcurrency: 2})
			s.Active++
		}},
		{"member draining while admitting", "pool", func(s *admission.Snapshot) { s.Members[memberIndex(s, "fresh")].Draining = true }},
		{"member state unknown", "pool", func(s *admission.Snapshot) { s.Members[0].State = "ejected" }},
		{"member missing", "pool", func(s *admission.Snapshot) { s.Members = s.Members[:4] }},
		{"member not configured", "pool", func(s *admission.Snapshot) { s.Members[0].ID = "ghost" }},
		{"members out of order", "pool", func(s *admission.Snapshot) { s.Members[0], s.Members[1] = s.Members[1], s.Members[0] }},
		{"member ID unsafe", "rr", func(s *admission.Snapshot) { s.Members[0].ID = "10.0.0.1" }},
		{"round-robin member ceiling differs", "rr", func(s *admission.Snapshot) { s.Members[1].MaxConcurrency = 9 }},
		{"direct tier with members", "hosted", func(s *admission.Snapshot) {
			s.Members = []admission.MemberSnapshot{{ID: "x", State: admission.StateAdmitting}}
		}},
		{"wrong ID", "hosted", func(s *admission.Snapshot) { s.ID = "other" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := capacity.Build(plan, mutate(good, c.tier, c.f), p)
			for _, tier := range doc.Tiers {
				assert.Equal(t, tier.ID != c.tier, tier.Available, "tier %s", tier.ID)
			}
		})
	}
}

// TestReloadShapes: after a reload, a count above a lowered ceiling is shown with both numbers,
// a removed member still holding leases is shown retiring after the configured ones, and a removed
// tier still holding leases is shown retiring after the configured tiers.
func TestReloadShapes(t *testing.T) {
	src, plan, p := fixtureSources(t)
	good := src.Admission.Snapshots()
	snaps := mutate(good, "hosted", func(s *admission.Snapshot) { s.Active = s.MaxConcurrency + 2 })
	snaps = mutate(snaps, "pool", func(s *admission.Snapshot) {
		i := memberIndex(s, "failed")
		s.Members[i].Active, s.Active = s.Members[i].MaxConcurrency+1, s.Active+s.Members[i].MaxConcurrency+1-s.Members[i].Active
		s.Members = append(s.Members, admission.MemberSnapshot{ID: "gone", State: admission.StateAdmitting, Retiring: true, Active: 2})
		s.Active += 2
	})
	snaps = append(snaps, admission.Snapshot{ID: "zz-removed", Kind: admission.KindDirect, State: admission.StateAdmitting,
		Retiring: true, Active: 1})
	doc := capacity.Build(plan, snaps, p)
	byID := map[string]capacity.Tier{}
	for _, tier := range doc.Tiers {
		require.True(t, tier.Available, "tier %s", tier.ID)
		byID[tier.ID] = tier
	}
	hosted := byID["hosted"]
	assert.Greater(t, hosted.Active, hosted.MaxConcurrency)
	pool := byID["pool"]
	last := pool.Members[len(pool.Members)-1]
	assert.Equal(t, "gone", last.ID)
	assert.True(t, last.Retiring)
	require.Equal(t, "zz-removed", doc.Tiers[len(doc.Tiers)-1].ID)
	assert.True(t, doc.Tiers[len(doc.Tiers)-1].Retiring)
	b, err := json.Marshal(doc.Tiers[len(doc.Tiers)-1])
	require.NoError(t, err)
	assert.Contains(t, string(b), `"retiring":true`)
}

// TestUnavailableShape pins the unavailable shape: the keys of the available shape, state
// "unavailable" and null for every number and for the members; never 0.
func TestUnavailableShape(t *testing.T) {
	src, plan, p := fixtureSources(t)
	var snaps []admission.Snapshot
	for _, sn := range src.Admission.Snapshots() {
		if sn.ID != "pool" && sn.ID != "hosted" {
			snaps = append(snaps, sn) // absent owners
		}
	}
	doc := capacity.Build(plan, snaps, p)
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	assert.JSONEq(t, `{"tiers":[
		{"id":"hosted","kind":"direct","state":"unavailable","draining":null,"active_requests":null,
		 "max_concurrency":null,"released":null,"release_misuse":null},
		{"id":"pool","kind":"replica","strategy":"capacity","state":"unavailable","draining":null,
		 "active_requests":null,"max_concurrency":null,"released":null,"release_misuse":null,"members":null},
		`+string(must(json.Marshal(tierByID(t, doc, "rr"))))+`]}`, string(b))
	assert.Empty(t, p.peeks, "an unavailable tier reads no telemetry")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestDuplicateSnapshotsAreUnavailable: two snapshots claiming one tier cannot both be the truth.
func TestDuplicateSnapshotsAreUnavailable(t *testing.T) {
	src, plan, p := fixtureSources(t)
	snaps := src.Admission.Snapshots()
	snaps = append(snaps, snaps[0])
	doc := capacity.Build(plan, snaps, p)
	assert.False(t, tierByID(t, doc, snaps[0].ID).Available)
}

// TestPlanBounds: a tier of 17 members, or more than 256 capacity members in all, is unavailable;
// a plan tier with an unsafe or repeated ID is never printed at all.
func TestPlanBounds(t *testing.T) {
	src, plan, p := fixtureSources(t)
	snaps := src.Admission.Snapshots()

	t.Run("17 members", func(t *testing.T) {
		big := capacity.TierSpec{ID: "big", Kind: admission.KindReplica, Strategy: admission.StrategyCapacity, MaxConcurrency: 17}
		sn := admission.Snapshot{ID: "big", Kind: admission.KindReplica, Strategy: admission.StrategyCapacity,
			State: admission.StateAdmitting, MaxConcurrency: 17}
		for i := range 17 {
			id := fmt.Sprintf("m%02d", i)
			big.Members = append(big.Members, capacity.MemberSpec{ID: id, MaxConcurrency: 1})
			sn.Members = append(sn.Members, admission.MemberSnapshot{ID: id, State: admission.StateAdmitting, MaxConcurrency: 1})
		}
		doc := capacity.Build([]capacity.TierSpec{big}, []admission.Snapshot{sn}, p)
		require.Len(t, doc.Tiers, 1)
		assert.False(t, doc.Tiers[0].Available)
		sn.Members, big.Members = sn.Members[:16], big.Members[:16]
		big.MaxConcurrency, sn.MaxConcurrency = 16, 16
		doc = capacity.Build([]capacity.TierSpec{big}, []admission.Snapshot{sn}, p)
		assert.True(t, doc.Tiers[0].Available, "16 is the bound, not over it")
	})

	t.Run("257 capacity members", func(t *testing.T) {
		var specs []capacity.TierSpec
		var all []admission.Snapshot
		for k := range 17 { // 17 tiers of 16 = 272 members
			spec := capacity.TierSpec{ID: fmt.Sprintf("t%02d", k), Kind: admission.KindReplica, Strategy: admission.StrategyCapacity, MaxConcurrency: 16}
			sn := admission.Snapshot{ID: spec.ID, Kind: admission.KindReplica, Strategy: admission.StrategyCapacity,
				State: admission.StateAdmitting, MaxConcurrency: 16}
			for i := range 16 {
				id := fmt.Sprintf("m%02d", i)
				spec.Members = append(spec.Members, capacity.MemberSpec{ID: id, MaxConcurrency: 1})
				sn.Members = append(sn.Members, admission.MemberSnapshot{ID: id, State: admission.StateAdmitting, MaxConcurrency: 1})
			}
			specs, all = append(specs, spec), append(all, sn)
		}
		for _, tier := range capacity.Build(specs, all, nil).Tiers {
			assert.False(t, tier.Available, tier.ID)
		}
		for _, tier := range capacity.Build(specs[:16], all, nil).Tiers {
			assert.True(t, tier.Available, "256 members in all is the bound: %s", tier.ID)
		}
	})

	t.Run("unsafe and repeated plan IDs", func(t *testing.T) {
		odd := append([]capacity.TierSpec{}, plan...)
		odd = append(odd, capacity.TierSpec{ID: "http://10.0.0.1:80"}, capacity.TierSpec{ID: "Hosted"}, plan[0])
		doc := capacity.Build(odd, snaps, p)
		var ids []string
		for _, tier := range doc.Tiers {
			ids = append(ids, tier.ID)
		}
		assert.Equal(t, []string{"pool", "rr"}, ids, "a repeated ID is ambiguous: none of its tiers is shown")
	})
}

// TestTelemetryEnvelope: the pressure read is validated as a whole (exactly the configured members,
// no error) before any member's value is shown; otherwise every member is unknown.
func TestTelemetryEnvelope(t *testing.T) {
	src, plan, good := fixtureSources(t)
	snaps := src.Admission.Snapshots()
	unknown := capacity.Telemetry{Freshness: scheduler.FreshnessUnknown}
	withMap := func(m map[string]scheduler.Pressure) *fixedPressure {
		return &fixedPressure{t: t, m: map[string]map[string]scheduler.Pressure{"pool": m}}
	}
	full := good.m["pool"]
	missingOne := map[string]scheduler.Pressure{}
	extra := map[string]scheduler.Pressure{"ghost": scheduler.UnknownPressure()}
	for k, v := range full {
		extra[k] = v
		if k != "stale" {
			missingOne[k] = v
		}
	}
	cases := []struct {
		name string
		src  capacity.PressureReader
	}{
		{"no cache", nil},
		{"the reader fails", &fixedPressure{t: t, err: constErr("dial tcp 10.0.0.1:8000: refused")}},
		{"the tier is unknown to the reader", &fixedPressure{t: t}},
		{"a nil map", withMap(nil)},
		{"a member missing", withMap(missingOne)},
		{"an extra member", withMap(extra)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pool := tierByID(t, capacity.Build(plan, snaps, c.src), "pool")
			require.True(t, pool.Available, "telemetry never makes admission unavailable")
			for _, m := range pool.Members {
				require.NotNil(t, m.Telemetry)
				assert.Equal(t, unknown, *m.Telemetry, m.ID)
			}
		})
	}
}

// TestReadingOnlyPeeks: a view reads admission first, then Peek once per capacity tier, and nothing
// else: fixedPressure fails the test on Snapshot or Fetch.
func TestReadingOnlyPeeks(t *testing.T) {
	src, plan, p := fixtureSources(t)
	var order []string
	adm := recordingAdmission{src.Admission, &order}
	pr := recordingPressure{p, &order}
	capacity.Build(plan, adm.Snapshots(), pr)
	assert.Equal(t, []string{"snapshots", "peek pool"}, order)
	order = order[:0]
	col := capacity.NewCollector(plan, capacity.Sources{Admission: adm, Pressure: pr})
	for range collectAll(col) {
	}
	assert.Equal(t, []string{"snapshots", "peek pool"}, order, "a scrape reads the same way")
	before := src.Admission.Snapshots()
	for range 3 {
		capacity.Build(plan, src.Admission.Snapshots(), p)
	}
	assert.Equal(t, before, src.Admission.Snapshots(), "reading reserves, releases and quiesces nothing")
}

type recordingAdmission struct {
	capacity.AdmissionReader
	order *[]string
}

func (r recordingAdmission) Snapshots() []admission.Snapshot {
	*r.order = append(*r.order, "snapshots")
	return r.AdmissionReader.Snapshots()
}

type recordingPressure struct {
	*fixedPressure
	order *[]string
}

func (r recordingPressure) Peek(tier string) (map[string]scheduler.Pressure, error) {
	*r.order = append(*r.order, "peek "+tier)
	return r.fixedPressure.Peek(tier)
}

// TestAdmissionViewMatchesCapacityView: direct and round-robin tiers have exactly the admission
// view's shape in the capacity view; capacity tiers add telemetry and nothing else; neither view shows
// a member's reason.
func TestAdmissionViewMatchesCapacityView(t *testing.T) {
	src, plan, p := fixtureSources(t)
	snaps := src.Admission.Snapshots()
	adm := capacity.AdmissionView(snaps)
	doc := capacity.Build(plan, snaps, p)
	require.Len(t, doc.Tiers, len(adm))
	for i := range adm {
		a, c := adm[i], doc.Tiers[i]
		if c.Kind == admission.KindReplica && c.Strategy == admission.StrategyCapacity {
			for j := range c.Members {
				require.NotNil(t, c.Members[j].Telemetry)
				c.Members[j].Telemetry = nil
			}
		}
		assert.JSONEq(t, string(must(json.Marshal(a))), string(must(json.Marshal(c))), a.ID)
	}
	for _, b := range [][]byte{must(json.Marshal(adm)), must(json.Marshal(doc))} {
		assert.NotContains(t, string(b), "maintenance", "member reasons stay off these views")
		assert.NotContains(t, string(b), "disk-swap")
	}
}
