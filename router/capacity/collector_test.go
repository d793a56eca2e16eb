package capacity_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/capacity"
	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/scheduler"
)

func collectAll(c prometheus.Collector) []prometheus.Metric {
	ch := make(chan prometheus.Metric, 1024)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	var out []prometheus.Metric
	for m := range ch {
		out = append(out, m)
	}
	return out
}

// TestUnavailableSeriesAreOmitted: a tier whose snapshot is malformed loses every one of its series;
// none reads 0.
func TestUnavailableSeriesAreOmitted(t *testing.T) {
	src, plan, _ := fixtureSources(t)
	bad := mutate(src.Admission.Snapshots(), "pool", func(s *admission.Snapshot) { s.Active++ })
	src.Admission = snapshots(bad)
	reg := prometheus.NewRegistry()
	reg.MustRegister(capacity.NewCollector(plan, src))
	text := string(gatherText(t, reg))
	assert.NotContains(t, text, "anvil_router_replica_", "no capacity series of the pool at all")
	assert.Contains(t, text, `anvil_router_tier_active_requests{tier="hosted"} 1`, "other tiers are unaffected")
	assert.Contains(t, text, `anvil_router_admission_tier_active_requests{strategy="direct",tier="hosted"} 1`, "in both families")
	assert.NotContains(t, text, `anvil_router_admission_tier_active_requests{strategy="capacity",tier="pool"}`,
		"nor in the strategy-labelled family")
	assert.NotContains(t, text, `anvil_router_admission_member_active_requests{member="fresh",strategy="capacity"`)
	assert.Contains(t, text, `anvil_router_tier_info{kind="replica",strategy="capacity",tier="pool"} 1`,
		"the tier's info series stays: the dashboard's tier list keeps an unavailable tier")
	assert.Contains(t, text, `anvil_router_member_readiness{member="fresh",state="ready",tier="pool"} 1`,
		"readiness has its own source")
}

// TestSampleAgesFailingReader: a sample-age source that fails, or is absent, costs only the age
// series; the freshness series beside them stay.
func TestSampleAgesFailingReader(t *testing.T) {
	for name, ages := range map[string]capacity.SampleAgeReader{"failing": fixedAges{err: errors.New("boom")}, "absent": nil} {
		t.Run(name, func(t *testing.T) {
			src, plan, _ := fixtureSources(t)
			src.SampleAges = ages
			reg := prometheus.NewRegistry()
			reg.MustRegister(capacity.NewCollector(plan, src))
			text := string(gatherText(t, reg))
			assert.NotContains(t, text, "anvil_router_replica_member_pressure_sample_age_seconds{")
			assert.Contains(t, text, `anvil_router_replica_member_pressure_freshness{freshness="fresh",member="fresh",tier="pool"} 1`)
		})
	}
}

// TestCollectorAgreesWithTheJSON: one scrape and one capacity document of the same moment tell the
// same numbers.
func TestCollectorAgreesWithTheJSON(t *testing.T) {
	src, plan, _ := fixtureSources(t)
	doc := capacity.Build(plan, src.Admission.Snapshots(), src.Pressure)
	reg := prometheus.NewRegistry()
	reg.MustRegister(capacity.NewCollector(plan, src))
	families := gatherMap(t, reg)
	pool := tierByID(t, doc, "pool")
	assert.Equal(t, float64(pool.Active), value(t, families, "anvil_router_replica_tier_active_requests", "tier", "pool"))
	var sum float64
	for _, m := range pool.Members {
		v := value(t, families, "anvil_router_replica_member_active_requests", "tier", "pool", "member", m.ID)
		assert.Equal(t, float64(m.Active), v, m.ID)
		sum += v
		assert.Equal(t, 1.0, value(t, families, "anvil_router_replica_member_pressure_freshness",
			"tier", "pool", "member", m.ID, "freshness", m.Telemetry.Freshness.String()))
	}
	assert.Equal(t, float64(pool.Active), sum, "tier active is the sum of its members")
}

func gatherMap(t testing.TB, reg prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// value returns the value of the one series of name with the given label pairs.
func value(t testing.TB, families map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	mf := families[name]
	require.NotNil(t, mf, name)
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := len(got) == len(labels)/2
		for i := 0; i+1 < len(labels); i += 2 {
			match = match && got[labels[i]] == labels[i+1]
		}
		if match {
			if g := m.GetGauge(); g != nil {
				return g.GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

// oddIDs are tier and member IDs a hostile or broken input might carry.
var oddIDs = []string{"a", "m01", "x.y-z_0", "A", "-x", "", "10.0.0.1", "m:1", "a\"b", "a\nb", "é",
	"http://h", strings.Repeat("a", 65), "pool", "fresh"}

// drawer reads fuzz bytes as a stream of choices.
type drawer struct{ b []byte }

func (d *drawer) byte() byte {
	if len(d.b) == 0 {
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *drawer) int64() int64 {
	var buf [8]byte
	for i := range buf {
		buf[i] = d.byte()
	}
	return int64(binary.LittleEndian.Uint64(buf[:]))
}

func (d *drawer) pick(n int) int { return int(d.byte()) % n }

// small is a count or ceiling: mostly small, sometimes anything.
func (d *drawer) small() int64 {
	if d.pick(8) == 0 {
		return d.int64()
	}
	return int64(d.pick(6))
}

func (d *drawer) float() float64 {
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, 0, 0.5, 1, 1.5, 3, 1e9, 2e9}
	if d.pick(2) == 0 {
		return specials[d.pick(len(specials))]
	}
	return math.Float64frombits(uint64(d.int64()))
}

func (d *drawer) metric() scheduler.Metric {
	switch d.pick(4) {
	case 0:
		return scheduler.Metric{}
	case 1:
		return scheduler.MalformedMetric()
	}
	return scheduler.Metric{Value: d.float(), Present: true}
}

// fuzzInputs draws a plan, matching or broken snapshots and pressure from data.
func fuzzInputs(data []byte) ([]capacity.TierSpec, []admission.Snapshot, *fixedPressure) {
	d := &drawer{b: data}
	p := &fixedPressure{m: map[string]map[string]scheduler.Pressure{}}
	var plan []capacity.TierSpec
	var snaps []admission.Snapshot
	for range 1 + d.pick(3) {
		spec := capacity.TierSpec{ID: oddIDs[d.pick(len(oddIDs))], Kind: admission.Kind(d.pick(3)),
			Strategy: admission.Strategy(d.pick(3)), MaxConcurrency: d.small()}
		sn := admission.Snapshot{ID: spec.ID, Kind: spec.Kind, Strategy: spec.Strategy, MaxConcurrency: spec.MaxConcurrency,
			State: []string{admission.StateAdmitting, admission.StateQuiesced, "x"}[d.pick(3)], Active: d.small(),
			Reason: []string{"", "operator", "Bad!"}[d.pick(3)], Draining: d.pick(2) == 0,
			Released: uint64(d.small()), ReleaseMisuse: uint64(d.small())}
		pm := map[string]scheduler.Pressure{}
		for range d.pick(20) { // up to 19 members: past the 16 bound
			id := oddIDs[d.pick(len(oddIDs))]
			ceiling := d.small()
			spec.Members = append(spec.Members, capacity.MemberSpec{ID: id, MaxConcurrency: ceiling})
			sn.Members = append(sn.Members, admission.MemberSnapshot{ID: id, MaxConcurrency: ceiling, Active: d.small(),
				State: []string{admission.StateAdmitting, admission.StateQuiesced}[d.pick(2)], Draining: d.pick(2) == 0})
			obs := scheduler.Observation{ObservedAt: t0, Successful: d.pick(4) != 0, RequestsRunning: d.metric(),
				RequestsWaiting: d.metric(), KVCacheUsage: d.metric(), SchedulerCapacity: d.small()}
			pm[id] = scheduler.NormalizePressure(t0.Add(time.Duration(d.small())*time.Second), obs)
		}
		if d.pick(2) == 0 {
			consistent(&spec, &sn)
		}
		p.m[spec.ID] = pm
		plan = append(plan, spec)
		if d.pick(5) != 0 {
			snaps = append(snaps, sn)
		}
	}
	return plan, snaps, p
}

// consistent repairs the drawn snapshot's states and counts so it agrees with its spec (whatever the
// IDs), so the fuzz also reaches the projection of available tiers and their telemetry.
func consistent(spec *capacity.TierSpec, sn *admission.Snapshot) {
	sn.State, sn.Reason, sn.Draining, sn.Active = admission.StateAdmitting, "", false, 0
	var ceilings int64
	for i := range sn.Members {
		m := &sn.Members[i]
		m.State, m.Draining = admission.StateAdmitting, false
		m.MaxConcurrency = min(max(m.MaxConcurrency, 1), 100)
		spec.Members[i].MaxConcurrency = m.MaxConcurrency
		m.Active = min(max(m.Active, 0), m.MaxConcurrency)
		sn.Active += m.Active
		ceilings += m.MaxConcurrency
	}
	sn.Released, sn.ReleaseMisuse = 0, 0
	spec.MaxConcurrency, sn.MaxConcurrency = ceilings, ceilings
	slices.SortStableFunc(sn.Members, func(a, b admission.MemberSnapshot) int { return strings.Compare(a.ID, b.ID) })
}

// FuzzCollector: whatever the plan, snapshots and pressure (odd IDs, 17 members, NaN values), a
// scrape never panics, every exposition line parses back, every label value is a safe ID or a known
// enum, every value is finite, and the capacity JSON is valid JSON.
func FuzzCollector(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 1, 3, 0, 0, 0, 0, 17, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	f.Add(bytes.Repeat([]byte{1, 2, 1, 1, 17, 0}, 40))
	f.Add(bytes.Repeat([]byte{13, 1, 1, 19, 14, 0, 255, 7}, 64))
	f.Fuzz(func(t *testing.T, data []byte) {
		plan, snaps, p := fuzzInputs(data)
		p.t = t
		src := capacity.Sources{Admission: snapshots(snaps), Pressure: p, SampleAges: fuzzAges(snaps, data),
			Readiness: fixtureReadiness(), Decisions: fixtureStats()}
		reg := prometheus.NewRegistry()
		if err := reg.Register(capacity.NewCollector(plan, src)); err != nil {
			t.Fatal(err)
		}
		text := gatherText(t, reg)
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
		if err != nil {
			t.Fatalf("malformed exposition: %v\n%s", err, text)
		}
		for name, mf := range families {
			if !strings.HasPrefix(name, "anvil_router_") {
				t.Fatalf("unexpected family %s", name)
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if !safeLabel(l.GetName(), l.GetValue()) {
						t.Fatalf("unsafe label %s=%q in %s", l.GetName(), l.GetValue(), name)
					}
				}
				v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					t.Fatalf("%s has value %v", name, v)
				}
			}
		}
		b, err := json.Marshal(capacity.Build(plan, snaps, p))
		if err != nil || !json.Valid(b) {
			t.Fatalf("capacity JSON: %v", err)
		}
	})
}

func safeLabel(name, v string) bool {
	switch name {
	case "tier", "member":
		return ident.ValidID(v)
	case "freshness":
		_, err := scheduler.ParseFreshness(v)
		return err == nil
	case "state", "result", "reason":
		return ident.ValidReason(v)
	case "kind":
		return v == "direct" || v == "replica"
	case "strategy":
		return v == "direct" || v == "round_robin" || v == "capacity"
	}
	return false
}

// fuzzAges gives every member of every snapshot an age drawn from data: negative, zero, huge or
// ordinary, so the fuzz reaches the age filter too.
func fuzzAges(snaps []admission.Snapshot, data []byte) fixedAges {
	m := map[string]map[string]time.Duration{}
	i := 0
	for _, sn := range snaps {
		ages := map[string]time.Duration{}
		for _, mem := range sn.Members {
			var v int64
			if i+8 <= len(data) {
				v = int64(binary.LittleEndian.Uint64(data[i : i+8]))
			}
			i += 3
			ages[mem.ID] = time.Duration(v)
		}
		m[sn.ID] = ages
	}
	return fixedAges{m: m}
}
