package scheduler

import (
	"fmt"
	"testing"
	"time"
)

// benchCandidates builds n members with mixed loads and freshness, so every key
// component is exercised and most members are schedulable. Admission keeps its
// membership sorted by ID, so the input is sorted unless reversed is set.
func benchCandidates(b *testing.B, n int, reversed bool) []Candidate {
	cands := make([]Candidate, n)
	for i := range cands {
		p := freshP(b, int64(i%3)*100_000)
		if i%4 == 3 {
			p = UnknownPressure()
		}
		id := i
		if reversed {
			id = n - i
		}
		cands[i] = cand(b, fmt.Sprintf("member-%02d", id), true, int64(i%3), 4, p)
	}
	return cands
}

func BenchmarkRank(b *testing.B) {
	for _, bc := range []struct {
		n        int
		reversed bool
	}{{2, false}, {4, false}, {16, false}, {16, true}} {
		name := fmt.Sprintf("members=%d", bc.n)
		if bc.reversed {
			name += "/reversed-input"
		}
		n := bc.n
		b.Run(name, func(b *testing.B) {
			cands := benchCandidates(b, n, bc.reversed)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				d, err := Rank(cands, i%n)
				if err != nil || d.Reason() != ReasonSelected {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkNormalizePressure(b *testing.B) {
	o := full(3, 1, 8, 0.4321)
	now := t0.Add(time.Second)
	b.ReportAllocs()
	for b.Loop() {
		if NormalizePressure(now, o).Freshness() != FreshnessFresh {
			b.Fatal("not fresh")
		}
	}
}
