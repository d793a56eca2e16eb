package admission

import (
	"testing"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// benchTier is a 16-member capacity tier with fresh pressure for every member,
// the worst case for the acquire path (every member is a ranked candidate).
func benchTier(b *testing.B, s Strategy) (*TierAdmission, map[string]bool, map[string]scheduler.Pressure) {
	b.Helper()
	ceilings := make([]int64, ident.MaxMembers)
	for i := range ceilings {
		ceilings[i] = ident.MaxCeiling
	}
	tier := newTierT(b, replicaSpec("bench", s, 0, ceilings...))
	ids := memberIDs(ident.MaxMembers)
	ready := allReady(ids...)
	pressure := make(map[string]scheduler.Pressure, len(ids))
	for i, id := range ids {
		pressure[id] = fresh(b, int64(i)*1000)
	}
	return tier, ready, pressure
}

func BenchmarkAcquireRelease(b *testing.B) {
	for _, s := range []Strategy{StrategyCapacity, StrategyRoundRobin} {
		b.Run(s.String()+"/16", func(b *testing.B) {
			tier, ready, pressure := benchTier(b, s)
			b.ReportAllocs()
			for b.Loop() {
				l, err := tier.AcquireMember(ready, pressure, nil)
				if err != nil {
					b.Fatal(err)
				}
				l.Release()
			}
		})
	}
	b.Run("direct", func(b *testing.B) {
		tier := newTierT(b, TierSpec{ID: "d"})
		b.ReportAllocs()
		for b.Loop() {
			l, err := tier.Acquire()
			if err != nil {
				b.Fatal(err)
			}
			l.Release()
		}
	})
}

func BenchmarkAcquireReleaseParallel(b *testing.B) {
	tier, ready, pressure := benchTier(b, StrategyCapacity)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l, err := tier.AcquireMember(ready, pressure, nil)
			if err != nil {
				b.Error(err)
				return
			}
			l.Release()
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}

// BenchmarkRankLocked16 is the critical section of the capacity path: building
// 16 candidates from current counts plus scheduler.Rank, under the tier lock.
func BenchmarkRankLocked16(b *testing.B) {
	tier, ready, pressure := benchTier(b, StrategyCapacity)
	var in inputs
	if err := tier.copyInputs(&in, ready, pressure); err != nil {
		b.Fatal(err)
	}
	var d scheduler.Decision
	b.ReportAllocs()
	for b.Loop() {
		tier.mu.Lock()
		_, err := tier.rankLocked(&in, &d)
		tier.mu.Unlock()
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCopyInputs isolates copying and validating the two 16-entry maps.
func BenchmarkCopyInputs(b *testing.B) {
	tier, ready, pressure := benchTier(b, StrategyCapacity)
	b.ReportAllocs()
	for b.Loop() {
		var in inputs
		if err := tier.copyInputs(&in, ready, pressure); err != nil {
			b.Fatal(err)
		}
	}
}
