package pressure_test

import (
	"testing"
	"time"

	"github.com/anvil-llm/anvil/router/pressure"
)

func BenchmarkCoreSnapshotWarm16(b *testing.B) {
	c, err := pressure.NewCore([]pressure.TierSpec{tier("chat", memberIDs(16)...)})
	if err != nil {
		b.Fatal(err)
	}
	_, _ = c.Snapshot("chat", t0)
	for j, ok := c.Next(t0); ok; j, ok = c.Next(t0) {
		c.Complete(j, t0, busy, pressure.ClassOK)
	}
	now := t0.Add(500 * time.Millisecond)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Snapshot("chat", now); err != nil {
			b.Fatal(err)
		}
	}
}
