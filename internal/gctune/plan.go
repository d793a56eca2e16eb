// Package gctune decides the router's garbage-collector settings: the GC percentage (GOGC) and the
// soft memory limit (GOMEMLIMIT). A lazier collector buys throughput on a router whose live heap is
// small (most of what a request allocates dies with it), and the soft limit keeps the heap that laziness
// lets grow within the container. Decide is the pure rule; the cgroup parsers read the files the shell
// (router/server's ApplyRuntime) hands them. Standard library only, no I/O, no clock, no goroutines.
package gctune

// Where a setting came from, as the start-up log names it.
const (
	SourceEnv     = "environment" // GOGC or GOMEMLIMIT: the runtime applied it before main; left alone
	SourceConfig  = "config"      // runtime.gc_percent or runtime.memory_limit_bytes
	SourceDefault = "default"     // DefaultGCPercent
	SourceCgroup  = "cgroup"      // runtime.memory_limit_percent of the container's memory limit
	SourceNone    = "none"        // no limit: no container limit and none configured
)

// DefaultGCPercent is the GC percentage when neither GOGC nor the config sets one, with a soft limit
// or without: the heap may grow to three times what survived the last collection, half as many
// collections as Go's default of 100. A lazier 400 under a limit cut the collector's CPU further but
// missed both memory goals of issue 31 (10,000 open streams within 600 MB, hostile-body bursts no
// higher than before: docs/benchmarks/router-cost.md section 8), and most operators run under a limit.
const DefaultGCPercent = 200

// MinMemoryLimit is the lowest soft limit a share of the container's limit yields (and the lowest
// runtime.memory_limit_bytes the config takes): below 32 MiB the router's own base does not fit, and
// the collector would run without pause. A container smaller than it gets its own limit.
const MinMemoryLimit = 32 << 20

// DefaultMemoryLimitPercent is the share of the container's memory limit the soft limit takes: the
// rest is room for what the Go runtime does not count (thread stacks outside the heap, the binary).
const DefaultMemoryLimitPercent = 90

// Inputs are everything the decision depends on. A zero field of the config part means "not set".
type Inputs struct {
	EnvGOGC, EnvGOMEMLIMIT string // the environment's values; "" when unset or empty
	GCPercent              int    // runtime.gc_percent
	MemoryLimitBytes       int64  // runtime.memory_limit_bytes
	MemoryLimitPercent     int    // runtime.memory_limit_percent (DefaultMemoryLimitPercent when 0)
	CgroupLimit            int64  // the container's memory limit in bytes; 0 when none was found
}

// Plan is what the shell applies and logs. Set* false means "leave the runtime's value".
type Plan struct {
	SetGCPercent   bool
	GCPercent      int // the value to set (0 with SourceEnv: the runtime's, read back by the shell)
	GCSource       string
	SetMemoryLimit bool
	MemoryLimit    int64 // the value to set, in bytes (0 with SourceEnv and SourceNone)
	LimitSource    string
	// LimitClamped: runtime.memory_limit_bytes was above the container's limit, so MemoryLimit is
	// the container's limit instead (a soft limit the kernel kills before is no limit); the shell
	// logs it.
	LimitClamped bool
}

// Decide applies the rule: an environment variable always wins for its own setting (the runtime
// read it at start-up, so the plan leaves it); otherwise the config's value, otherwise the default:
// for the limit the configured share of the container's limit, or none; for the percentage
// DefaultGCPercent, limit or none.
func Decide(in Inputs) Plan {
	p := decideLimit(in)
	switch {
	case in.EnvGOGC != "":
		p.GCSource = SourceEnv
	case in.GCPercent != 0:
		p.SetGCPercent, p.GCPercent, p.GCSource = true, in.GCPercent, SourceConfig
	default:
		p.SetGCPercent, p.GCPercent, p.GCSource = true, DefaultGCPercent, SourceDefault
	}
	return p
}

// decideLimit is Decide's rule for the soft memory limit.
func decideLimit(in Inputs) Plan {
	var p Plan
	share := int64(in.MemoryLimitPercent)
	if share == 0 {
		share = DefaultMemoryLimitPercent
	}
	switch {
	case in.EnvGOMEMLIMIT != "":
		p.LimitSource = SourceEnv
	case in.MemoryLimitBytes > 0:
		p.SetMemoryLimit, p.MemoryLimit, p.LimitSource = true, in.MemoryLimitBytes, SourceConfig
		if in.CgroupLimit > 0 && in.MemoryLimitBytes > in.CgroupLimit {
			p.MemoryLimit, p.LimitClamped = in.CgroupLimit, true
		}
	case in.CgroupLimit > 0:
		// Divide first: a limit near MaxInt64 must not overflow.
		derived := max(in.CgroupLimit/100*share+in.CgroupLimit%100*share/100, MinMemoryLimit)
		p.SetMemoryLimit, p.MemoryLimit, p.LimitSource = true, min(derived, in.CgroupLimit), SourceCgroup
	default:
		p.LimitSource = SourceNone
	}
	return p
}
