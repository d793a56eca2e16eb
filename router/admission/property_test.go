package admission

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// model is the reference state the property test keeps next to a real tier.
type model struct {
	spec     TierSpec
	ids      []string // sorted
	ceilings []int64  // by sorted index
	ceiling  int64    // effective tier ceiling
	tierQ    bool
	memberQ  []bool
	active   []int64
	cursor   int
	acquired uint64
	released uint64
	misuse   uint64
	leases   []*Lease
	freed    []bool
}

func (m *model) tierActive() int64 {
	var sum int64
	for _, a := range m.active {
		sum += a
	}
	return sum
}

func genSpec(t *rapid.T) TierSpec {
	strategy := rapid.SampledFrom([]Strategy{StrategyRoundRobin, StrategyCapacity}).Draw(t, "strategy")
	n := rapid.IntRange(ident.MinMembers, ident.MaxMembers).Draw(t, "members")
	minCeil := int64(0)
	if strategy == StrategyCapacity {
		minCeil = 1
	}
	spec := TierSpec{ID: "t", Kind: KindReplica, Strategy: strategy}
	var sum int64
	for i := range n {
		c := rapid.Int64Range(minCeil, 3).Draw(t, fmt.Sprintf("ceiling%d", i))
		sum += c
		spec.Members = append(spec.Members, MemberSpec{ID: fmt.Sprintf("m%02d", n-1-i), MaxConcurrency: c}) // unsorted on purpose
	}
	spec.MaxConcurrency = rapid.Int64Range(0, sum+2).Draw(t, "tierCeiling")
	return spec
}

func newModel(spec TierSpec) *model {
	m := &model{spec: spec, ceiling: spec.MaxConcurrency}
	for _, ms := range sortedMembers(spec.Members) {
		m.ids = append(m.ids, ms.ID)
		m.ceilings = append(m.ceilings, ms.MaxConcurrency)
		if spec.Strategy == StrategyCapacity && spec.MaxConcurrency == 0 {
			m.ceiling += ms.MaxConcurrency
		}
	}
	m.memberQ = make([]bool, len(m.ids))
	m.active = make([]int64, len(m.ids))
	return m
}

func genPressure(t *rapid.T, label string) (scheduler.Pressure, bool) {
	switch rapid.IntRange(0, 4).Draw(t, label) {
	case 0:
		return scheduler.Pressure{}, false // absent
	case 1:
		return scheduler.UnknownPressure(), true
	case 2:
		p, _ := scheduler.NewPressure(scheduler.FreshnessFailed, 0, false, scheduler.SignalMissing, scheduler.SignalMissing)
		return p, true
	case 3:
		p, _ := scheduler.NewPressure(scheduler.FreshnessStale, 0, false, scheduler.SignalValid, scheduler.SignalValid)
		return p, true
	}
	ppm := rapid.SampledFrom([]int64{0, 1, 500_000, 1_000_000, 3_000_000}).Draw(t, label+"ppm")
	p, _ := scheduler.NewPressure(scheduler.FreshnessFresh, ppm, true, scheduler.SignalValid, scheduler.SignalMissing)
	return p, true
}

// expectedPick is the reference selection: the tier/member checks and, for
// capacity, the documented key (local ratio, unknown, ppm, rotating rank).
func (m *model) expectedPick(ready []bool, p []scheduler.Pressure) (int, error) {
	if m.tierQ {
		return -1, ErrQuiesced
	}
	if m.ceiling > 0 && m.tierActive() >= m.ceiling {
		return -1, ErrExhausted
	}
	if !slices.Contains(m.memberQ, false) {
		return -1, ErrQuiesced
	}
	n := len(m.ids)
	best := -1
	for k := range n {
		i := (m.cursor + k) % n // rotation order: earlier k = lower rotating rank
		if !ready[i] || m.memberQ[i] || (m.ceilings[i] > 0 && m.active[i] >= m.ceilings[i]) {
			continue
		}
		if m.spec.Strategy == StrategyRoundRobin {
			return i, nil
		}
		if best < 0 || m.beats(i, best, p) {
			best = i
		}
	}
	if best < 0 {
		return -1, ErrExhausted
	}
	return best, nil
}

// beats reports whether i ranks strictly before j ignoring rotation (which the
// caller's iteration order supplies).
func (m *model) beats(i, j int, p []scheduler.Pressure) bool {
	li, lj := m.active[i]*m.ceilings[j], m.active[j]*m.ceilings[i]
	if li != lj {
		return li < lj
	}
	ui, uj := p[i].Unknown(), p[j].Unknown()
	if ui != uj {
		return !ui
	}
	pi, _ := p[i].PPM()
	pj, _ := p[j].PPM()
	return !ui && pi < pj
}

func (m *model) check(t *rapid.T, tier *TierAdmission) {
	s := tier.Snapshot()
	checkInvariants(t, s)
	if s.Cursor != m.cursor || s.Acquired != m.acquired || s.Released != m.released || s.ReleaseMisuse != m.misuse {
		t.Fatalf("snapshot %+v, model cursor %d acquired %d released %d misuse %d", s, m.cursor, m.acquired, m.released, m.misuse)
	}
	if s.Active != m.tierActive() || (s.State == StateQuiesced) != m.tierQ || s.MaxConcurrency != m.ceiling {
		t.Fatalf("tier snapshot %+v disagrees with model", s)
	}
	for i, ms := range s.Members {
		if ms.ID != m.ids[i] || ms.Active != m.active[i] || (ms.State == StateQuiesced) != m.memberQ[i] || ms.MaxConcurrency != m.ceilings[i] {
			t.Fatalf("member %d snapshot %+v disagrees with model", i, ms)
		}
	}
}

func TestAdmissionProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newModel(genSpec(t))
		set, err := New([]TierSpec{m.spec})
		if err != nil {
			t.Fatalf("valid spec refused: %v", err)
		}
		tier, _ := set.Tier("t")
		member := func(t *rapid.T) int { return rapid.IntRange(0, len(m.ids)-1).Draw(t, "member") }
		t.Repeat(map[string]func(*rapid.T){
			"acquire": func(t *rapid.T) { m.acquire(t, tier) },
			"release": func(t *rapid.T) {
				if len(m.leases) == 0 {
					t.Skip("no lease")
				}
				k := rapid.IntRange(0, len(m.leases)-1).Draw(t, "lease")
				got := m.leases[k].Release()
				if got == m.freed[k] {
					t.Fatalf("Release() = %v on a lease freed=%v", got, m.freed[k])
				}
				if m.freed[k] {
					m.misuse++
					return
				}
				m.freed[k] = true
				m.released++
				m.active[slices.Index(m.ids, m.leases[k].Member())]--
			},
			"quiesce": func(t *rapid.T) {
				if err := tier.Quiesce("q"); err != nil {
					t.Fatal(err)
				}
				m.tierQ = true
			},
			"readmit": func(t *rapid.T) {
				if err := tier.Readmit(); err != nil {
					t.Fatal(err)
				}
				m.tierQ = false
			},
			"quiesceMember": func(t *rapid.T) {
				i := member(t)
				if err := tier.QuiesceMember(m.ids[i], "q"); err != nil {
					t.Fatal(err)
				}
				m.memberQ[i] = true
			},
			"readmitMember": func(t *rapid.T) {
				i := member(t)
				if err := tier.ReadmitMember(m.ids[i]); err != nil {
					t.Fatal(err)
				}
				m.memberQ[i] = false
			},
			"idle": func(t *rapid.T) {
				idle, err := tier.Idle("")
				checkIdle(t, idle, err, m.tierQ, m.tierActive())
			},
			"idleMember": func(t *rapid.T) {
				i := member(t)
				idle, err := tier.Idle(m.ids[i])
				checkIdle(t, idle, err, m.memberQ[i], m.active[i])
			},
			"": func(t *rapid.T) { m.check(t, tier) },
		})
	})
}

// checkIdle: the drain question answers exactly from the model's quiesce flag and lease count.
func checkIdle(t *rapid.T, idle bool, err error, quiesced bool, active int64) {
	switch {
	case !quiesced && !errors.Is(err, ErrNotQuiesced):
		t.Fatalf("drain question on an admitting scope: %v", err)
	case quiesced && err != nil:
		t.Fatalf("drain question on a quiesced scope: %v", err)
	case quiesced && idle != (active == 0):
		t.Fatalf("idle = %v with %d active", idle, active)
	}
}

func (m *model) acquire(t *rapid.T, tier *TierAdmission) {
	n := len(m.ids)
	ready := map[string]bool{}
	pressure := map[string]scheduler.Pressure{}
	readyIdx := make([]bool, n)
	pIdx := make([]scheduler.Pressure, n)
	for i, id := range m.ids {
		switch rapid.IntRange(0, 2).Draw(t, "ready"+id) {
		case 1:
			ready[id] = true
			readyIdx[i] = true
		case 2:
			ready[id] = false
		}
		p, ok := genPressure(t, "p"+id)
		if ok {
			pressure[id] = p
		}
		pIdx[i] = p
	}
	bad := rapid.IntRange(0, 9).Draw(t, "bad")
	switch bad {
	case 0:
		ready["ghost"] = true
	case 1:
		pressure["ghost"] = scheduler.UnknownPressure()
	}
	want, wantErr := m.expectedPick(readyIdx, pIdx)
	if bad <= 1 {
		want, wantErr = -1, ErrInvalidSnapshot
	}
	l, err := acquire(tier, ready, pressure)
	if wantErr != nil {
		if !errors.Is(err, wantErr) || l != nil {
			t.Fatalf("AcquireMember = %v, %v; want %v", l, err, wantErr)
		}
		return // the "" invariant check proves nothing moved
	}
	if err != nil {
		t.Fatalf("AcquireMember refused: %v; want %s", err, m.ids[want])
	}
	if l.Member() != m.ids[want] {
		t.Fatalf("picked %s, want %s", l.Member(), m.ids[want])
	}
	if _, ok := l.Decision(); ok != (m.spec.Strategy == StrategyCapacity) {
		t.Fatalf("decision presence %v in %s", ok, m.spec.Strategy)
	}
	m.active[want]++
	m.acquired++
	m.cursor = (want + 1) % n
	m.leases = append(m.leases, l)
	m.freed = append(m.freed, false)
}
