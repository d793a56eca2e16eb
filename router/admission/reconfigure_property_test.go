package admission

import (
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// reconfModel is the reference the reconfiguration property keeps: per member identity (tier,
// member, endpoint), how many leases are out, and the configuration in force.
type reconfModel struct {
	specs  map[string]TierSpec // tier ID -> spec in force
	counts map[string]int64    // tier \x00 member key -> leases out
	leases []reconfLease
}

type reconfLease struct {
	l        *Lease
	tier     string
	kind     Kind   // a tier whose kind changed is a new tier
	key      string // "" for a direct tier
	released bool
}

func mkey(tier, memberKey string) string { return tier + "\x00" + memberKey }

func (m *reconfModel) tierCount(tier string, kind Kind) int64 {
	var n int64
	for _, l := range m.leases {
		if !l.released && l.tier == tier && l.kind == kind {
			n++
		}
	}
	return n
}

// genReconfSpec draws one tier's next configuration: 2-5 of six member IDs, each on one of two
// endpoints, with ceilings that move up and down.
func genReconfSpec(t *rapid.T, id string) TierSpec {
	if rapid.IntRange(0, 5).Draw(t, id+"direct") == 0 {
		return TierSpec{ID: id, Kind: KindDirect, MaxConcurrency: rapid.Int64Range(0, 3).Draw(t, id+"dmax"),
			MaxWaiting: rapid.IntRange(0, 2).Draw(t, id+"dwait")}
	}
	strategy := rapid.SampledFrom([]Strategy{StrategyRoundRobin, StrategyCapacity}).Draw(t, id+"strategy")
	pool := []string{"a", "b", "c", "d", "e", "f"}
	ids := rapid.SliceOfNDistinct(rapid.SampledFrom(pool), 2, 5, rapid.ID[string]).Draw(t, id+"members")
	spec := TierSpec{ID: id, Kind: KindReplica, Strategy: strategy, MaxWaiting: rapid.IntRange(0, 2).Draw(t, id+"wait")}
	var sum int64
	lo := int64(0)
	if strategy == StrategyCapacity {
		lo = 1
	}
	for _, m := range ids {
		c := rapid.Int64Range(lo, 3).Draw(t, id+m+"ceiling")
		sum += c
		ep := rapid.SampledFrom([]string{"http://10.0.0.1:1", "http://10.0.0.1:2"}).Draw(t, id+m+"endpoint")
		spec.Members = append(spec.Members, MemberSpec{ID: m, MaxConcurrency: c, Endpoint: ep})
	}
	spec.MaxConcurrency = rapid.Int64Range(0, sum+1).Draw(t, id+"max")
	return spec
}

func drawSpecs(t *rapid.T) []TierSpec {
	specs := []TierSpec{genReconfSpec(t, "t")}
	if rapid.Bool().Draw(t, "second tier") {
		specs = append(specs, genReconfSpec(t, "u"))
	}
	return specs
}

// TestReconfigureProperties drives random sequences of reconfigurations (members added, removed and
// moved to another endpoint, ceilings raised and lowered, strategies switched, a tier removed and
// added back), admissions through the generation in force and through superseded ones, and releases,
// and checks after every step: counts never negative, tier active equals the sum of its members
// (retiring ones included), every count equals the leases the model holds for that identity, no
// admission above a ceiling in force, no admission through a superseded generation, and every lease
// releases exactly once, into the counts it was taken from.
func TestReconfigureProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		specs := drawSpecs(t)
		set, err := New(specs)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		m := &reconfModel{specs: map[string]TierSpec{}, counts: map[string]int64{}}
		for _, s := range specs {
			m.specs[s.ID] = s
		}
		var old []*Set
		t.Repeat(map[string]func(*rapid.T){
			"reconfigure": func(t *rapid.T) {
				specs := drawSpecs(t)
				p, err := set.Reconfigure(specs)
				if err != nil {
					t.Fatalf("Reconfigure: %v", err)
				}
				next, err := p.Commit()
				if err != nil {
					t.Fatalf("Commit: %v", err)
				}
				if _, err := p.Commit(); !errors.Is(err, ErrStale) {
					t.Fatalf("second Commit: %v, want ErrStale", err)
				}
				old = append(old, set)
				set = next
				m.specs = map[string]TierSpec{}
				for _, s := range specs {
					m.specs[s.ID] = s
				}
			},
			"acquire": func(t *rapid.T) {
				acquireStep(t, set, m)
			},
			"acquire superseded": func(t *rapid.T) {
				if len(old) == 0 {
					t.Skip("no superseded generation yet")
				}
				s := rapid.SampledFrom(old).Draw(t, "generation")
				id := rapid.SampledFrom(s.IDs()).Draw(t, "tier")
				tier, _ := s.Tier(id)
				var err error
				if tier.Kind() == KindDirect {
					_, err = tier.Acquire()
				} else {
					_, err = tier.AcquireMember(allReady(tier.Members()...), nil, nil)
				}
				if !errors.Is(err, ErrSuperseded) {
					t.Fatalf("admission through a superseded generation: %v, want ErrSuperseded", err)
				}
				if _, err := tier.Enqueue(); !errors.Is(err, ErrSuperseded) {
					t.Fatalf("enqueue through a superseded generation: %v, want ErrSuperseded", err)
				}
			},
			"release": func(t *rapid.T) {
				if len(m.leases) == 0 {
					t.Skip("no lease")
				}
				i := rapid.IntRange(0, len(m.leases)-1).Draw(t, "lease")
				l := &m.leases[i]
				got := l.l.Release()
				if got == l.released {
					t.Fatalf("Release returned %v with released=%v", got, l.released)
				}
				if !l.released {
					l.released = true
					if l.key != "" {
						m.counts[mkey(l.tier, l.key)]--
					}
				}
			},
		})
		check(t, set, m)
		for i := range m.leases {
			if l := &m.leases[i]; !l.released {
				if !l.l.Release() {
					t.Fatalf("lease %d: first Release reported false", i)
				}
				l.released = true
				if l.key != "" {
					m.counts[mkey(l.tier, l.key)]--
				}
			}
		}
		check(t, set, m)
		for _, snap := range set.Snapshots() {
			if snap.Retiring || snap.Active != 0 {
				t.Fatalf("tier %s after every release: retiring=%v active=%d", snap.ID, snap.Retiring, snap.Active)
			}
			for _, ms := range snap.Members {
				if ms.Retiring || ms.Active != 0 {
					t.Fatalf("tier %s member %s after every release: retiring=%v active=%d", snap.ID, ms.ID, ms.Retiring, ms.Active)
				}
			}
		}
	})
}

// acquireStep admits through the generation in force and checks the answer against the model: a
// lease only below every ceiling in force, a refusal only when no member could take it.
func acquireStep(t *rapid.T, set *Set, m *reconfModel) {
	id := rapid.SampledFrom(set.IDs()).Draw(t, "tier")
	tier, _ := set.Tier(id)
	spec := m.specs[id]
	tierMax := newConf(spec).ceiling
	full := tierMax > 0 && m.tierCount(id, spec.Kind) >= tierMax
	var l *Lease
	var err error
	if spec.Kind == KindDirect {
		l, err = tier.Acquire()
	} else {
		l, err = tier.AcquireMember(allReady(tier.Members()...), nil, nil)
	}
	room := false
	for _, ms := range spec.Members {
		if ms.MaxConcurrency == 0 || m.counts[mkey(id, memberKey(ms))] < ms.MaxConcurrency {
			room = true
		}
	}
	if spec.Kind == KindDirect {
		room = true
	}
	if err != nil {
		if !errors.Is(err, ErrExhausted) {
			t.Fatalf("acquire: %v", err)
		}
		if !full && room {
			t.Fatalf("refused with room: tier %s count %d max %d", id, m.tierCount(id, spec.Kind), tierMax)
		}
		return
	}
	if full || !room {
		t.Fatalf("admitted above a ceiling in force: tier %s", id)
	}
	rl := reconfLease{l: l, tier: id, kind: spec.Kind}
	if spec.Kind == KindReplica {
		i := slices.IndexFunc(spec.Members, func(ms MemberSpec) bool { return ms.ID == l.Member() })
		if i < 0 {
			t.Fatalf("admitted to %q, not configured", l.Member())
		}
		ms := spec.Members[i]
		k := mkey(id, memberKey(ms))
		if ms.MaxConcurrency > 0 && m.counts[k] >= ms.MaxConcurrency {
			t.Fatalf("member %s admitted at %d, ceiling %d", ms.ID, m.counts[k], ms.MaxConcurrency)
		}
		m.counts[k]++
		rl.key = memberKey(ms)
	}
	m.leases = append(m.leases, rl)
}

// check compares every snapshot with the model.
func check(t *rapid.T, set *Set, m *reconfModel) {
	seen := map[string]bool{}
	for _, snap := range set.Snapshots() {
		spec, configured := m.specs[snap.ID]
		configured = configured && spec.Kind == snap.Kind
		seen[snap.ID] = seen[snap.ID] || configured
		if snap.Retiring == configured {
			t.Fatalf("tier %s: retiring=%v configured=%v", snap.ID, snap.Retiring, configured)
		}
		if n := m.tierCount(snap.ID, snap.Kind); snap.Active < 0 || snap.Active != n {
			t.Fatalf("tier %s active %d, model %d", snap.ID, snap.Active, n)
		}
		var sum int64
		for _, ms := range snap.Members {
			if ms.Active < 0 {
				t.Fatalf("tier %s member %s active %d", snap.ID, ms.ID, ms.Active)
			}
			if ms.Retiring && ms.Active == 0 {
				t.Fatalf("tier %s member %s retiring with no lease", snap.ID, ms.ID)
			}
			sum += ms.Active
		}
		if snap.Kind == KindReplica && sum != snap.Active {
			t.Fatalf("tier %s active %d != sum of members %d", snap.ID, snap.Active, sum)
		}
		if configured {
			for _, ms := range spec.Members {
				got := int64(-1)
				for _, s := range snap.Members {
					if s.ID == ms.ID && !s.Retiring {
						got = s.Active
					}
				}
				if want := m.counts[mkey(snap.ID, memberKey(ms))]; got != want {
					t.Fatalf("tier %s member %s active %d, model %d", snap.ID, ms.ID, got, want)
				}
			}
		}
	}
	for id := range m.specs {
		if !seen[id] {
			t.Fatalf("configured tier %s missing from snapshots", id)
		}
	}
}
