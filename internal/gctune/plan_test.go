package gctune

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"
)

func TestDecide(t *testing.T) {
	const gib = int64(1) << 30
	tests := []struct {
		name string
		in   Inputs
		want Plan
	}{
		{"nothing: no limit, the unlimited default", Inputs{},
			Plan{SetGCPercent: true, GCPercent: 200, GCSource: SourceDefault, LimitSource: SourceNone}},
		{"GOMEMLIMIT=off is no limit", Inputs{EnvGOMEMLIMIT: "off", CgroupLimit: 1 << 30},
			Plan{SetGCPercent: true, GCPercent: 200, GCSource: SourceDefault, LimitSource: SourceEnv}},
		{"a container: 90% of its limit, the same default percentage", Inputs{CgroupLimit: gib},
			Plan{SetGCPercent: true, GCPercent: 200, GCSource: SourceDefault, SetMemoryLimit: true, MemoryLimit: 966367641, LimitSource: SourceCgroup}},
		{"the configured share", Inputs{CgroupLimit: gib, MemoryLimitPercent: 50},
			Plan{SetGCPercent: true, GCPercent: 200, GCSource: SourceDefault, SetMemoryLimit: true, MemoryLimit: gib / 2, LimitSource: SourceCgroup}},
		{"a small container: the derived limit is floored at 32 MiB", Inputs{CgroupLimit: 128 << 20, MemoryLimitPercent: 10},
			Plan{SetGCPercent: true, GCPercent: 200, GCSource: SourceDefault, SetMemoryLimit: true, MemoryLimit: 32 << 20, LimitSource: SourceCgroup}},
		{"a container below the floor: its own limit", Inputs{CgroupLimit: 20 << 20},
			Plan{SetGCPercent: true, GCPercent: 200, GCSource: SourceDefault, SetMemoryLimit: true, MemoryLimit: 20 << 20, LimitSource: SourceCgroup}},
		{"a configured limit above the container's: clamped to it", Inputs{MemoryLimitBytes: 2 * gib, CgroupLimit: gib},
			Plan{SetGCPercent: true, GCPercent: 200, GCSource: SourceDefault, SetMemoryLimit: true, MemoryLimit: gib, LimitSource: SourceConfig, LimitClamped: true}},
		{"configured values", Inputs{GCPercent: 150, MemoryLimitBytes: 512 << 20, CgroupLimit: gib},
			Plan{SetGCPercent: true, GCPercent: 150, GCSource: SourceConfig, SetMemoryLimit: true, MemoryLimit: 512 << 20, LimitSource: SourceConfig}},
		{"GOGC wins over the config, the limit is still derived", Inputs{EnvGOGC: "off", GCPercent: 150, CgroupLimit: 1000 << 20},
			Plan{GCSource: SourceEnv, SetMemoryLimit: true, MemoryLimit: 900 << 20, LimitSource: SourceCgroup}},
		{"GOMEMLIMIT wins over the config and the cgroup", Inputs{EnvGOMEMLIMIT: "2GiB", MemoryLimitBytes: 1 << 20, CgroupLimit: gib},
			Plan{SetGCPercent: true, GCPercent: 200, GCSource: SourceDefault, LimitSource: SourceEnv}},
		{"both in the environment: nothing set", Inputs{EnvGOGC: "100", EnvGOMEMLIMIT: "off", GCPercent: 300, MemoryLimitBytes: 1 << 30},
			Plan{GCSource: SourceEnv, LimitSource: SourceEnv}},
		{"a limit near the largest: no overflow", Inputs{CgroupLimit: NoLimitV1 - 1},
			Plan{SetGCPercent: true, GCPercent: 200, GCSource: SourceDefault, SetMemoryLimit: true, MemoryLimit: (NoLimitV1-1)/100*90 + (NoLimitV1-1)%100*90/100, LimitSource: SourceCgroup}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, Decide(tc.in)) })
	}
}

// TestDecideProperties: the environment always wins for its own setting, a derived limit lies within
// the container's limit, and something is always said about both settings.
func TestDecideProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := Inputs{
			EnvGOGC:            rapid.SampledFrom([]string{"", "off", "50", "x"}).Draw(t, "gogc"),
			EnvGOMEMLIMIT:      rapid.SampledFrom([]string{"", "off", "1GiB"}).Draw(t, "gomemlimit"),
			GCPercent:          rapid.IntRange(0, 10000).Draw(t, "gc_percent"),
			MemoryLimitBytes:   rapid.Int64Range(0, NoLimitV1).Draw(t, "memory_limit_bytes"),
			MemoryLimitPercent: rapid.IntRange(0, 100).Draw(t, "memory_limit_percent"),
			CgroupLimit:        rapid.Int64Range(0, NoLimitV1-1).Draw(t, "cgroup"),
		}
		p := Decide(in)
		if (in.EnvGOGC != "") == p.SetGCPercent || (in.EnvGOMEMLIMIT != "") && p.SetMemoryLimit {
			t.Fatalf("the environment did not win: %+v", p)
		}
		if p.SetGCPercent && p.GCPercent <= 0 {
			t.Fatalf("GC percentage %d", p.GCPercent)
		}
		if p.LimitSource == SourceCgroup {
			share := int64(in.MemoryLimitPercent)
			if share == 0 {
				share = DefaultMemoryLimitPercent
			}
			if p.MemoryLimit > in.CgroupLimit || p.MemoryLimit < min(max(in.CgroupLimit/100*share, MinMemoryLimit), in.CgroupLimit) || !p.SetMemoryLimit {
				t.Fatalf("derived limit %d of %d at %d%%", p.MemoryLimit, in.CgroupLimit, share)
			}
		}
		if p.LimitSource == SourceConfig && in.CgroupLimit > 0 && p.MemoryLimit > in.CgroupLimit {
			t.Fatalf("configured limit %d above the container's %d", p.MemoryLimit, in.CgroupLimit)
		}
		if p.LimitClamped != (p.LimitSource == SourceConfig && in.CgroupLimit > 0 && in.MemoryLimitBytes > in.CgroupLimit) {
			t.Fatalf("clamped %v: %+v from %+v", p.LimitClamped, p, in)
		}
		if p.GCSource == SourceDefault && p.GCPercent != DefaultGCPercent {
			t.Fatalf("default percentage %d with limit source %s", p.GCPercent, p.LimitSource)
		}
		if p.GCSource == "" || p.LimitSource == "" {
			t.Fatalf("unsourced plan %+v", p)
		}
	})
}
