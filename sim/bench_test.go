package sim

import (
	"testing"
	"time"
)

// BenchmarkSixteenMembersHour runs the sixteen-members-hour scenario: sixteen members, one virtual
// hour near 80% of the tier ceiling. The goal is at most 10 wall seconds per run, that is at least
// 360 simulated seconds per wall second. Run it with -benchtime=1x: one iteration is the hour.
func BenchmarkSixteenMembersHour(b *testing.B) {
	benchScenario(b, "sixteen-members-hour")
}

// BenchmarkTwentyConcurrent is a short closed-loop scenario dominated by admission refusals.
func BenchmarkTwentyConcurrent(b *testing.B) {
	benchScenario(b, "twenty-concurrent")
}

func benchScenario(b *testing.B, name string) {
	sc := lookup(b, name)
	var virtual time.Duration
	var requests, events uint64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r, err := Run(sc, Options{})
		if err != nil {
			b.Fatal(err)
		}
		virtual += r.Duration
		requests += uint64(len(r.Requests))
		events += r.Events
	}
	wall := b.Elapsed().Seconds()
	b.ReportMetric(virtual.Seconds()/wall, "sim-s/s")
	b.ReportMetric(float64(requests)/wall, "req/s")
	b.ReportMetric(float64(events)/wall, "events/s")
}
