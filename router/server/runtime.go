package server

import (
	"context"
	"io"
	"log/slog"
	"math"
	"os"
	"path"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"strconv"

	"github.com/anvil-llm/anvil/internal/gctune"
	"github.com/anvil-llm/anvil/router/config"
)

// ApplyRuntime sets the garbage collector's percentage and soft memory limit once, at start-up, as
// internal/gctune decides from the config, the environment (GOGC and GOMEMLIMIT always win: the
// runtime applied them before main) and the container's memory limit, and logs the values in
// force. It changes process-wide state, so only the process's composition (anvil-router serve, the
// benchmarks' router process) calls it, never New.
func ApplyRuntime(rt config.Runtime, log *slog.Logger) gctune.Plan {
	container := cgroupLimit(readProcFile)
	plan := gctune.Decide(gctune.Inputs{
		EnvGOGC: os.Getenv("GOGC"), EnvGOMEMLIMIT: os.Getenv("GOMEMLIMIT"),
		GCPercent: rt.GCPercent, MemoryLimitBytes: rt.MemoryLimitBytes, MemoryLimitPercent: rt.MemoryLimitPercent,
		CgroupLimit: container,
	})
	if plan.SetGCPercent {
		debug.SetGCPercent(plan.GCPercent)
	}
	if plan.SetMemoryLimit {
		debug.SetMemoryLimit(plan.MemoryLimit)
	}
	gcPercent, limit := runtimeGC()
	log.LogAttrs(context.Background(), slog.LevelInfo, "garbage collector",
		slog.String("gc_percent", gcPercent), slog.String("gc_percent_source", plan.GCSource),
		slog.String("memory_limit_bytes", limit), slog.String("memory_limit_source", plan.LimitSource),
		slog.Int64("container_memory_limit_bytes", container))
	return plan
}

// runtimeGC reads back the percentage and the limit in force, as the start-up log shows them: "off"
// for GOGC=off, "none" for no limit.
func runtimeGC() (gcPercent, limit string) {
	s := []rtmetrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	rtmetrics.Read(s)
	gcPercent, limit = "off", "none"
	if p := int64(s[0].Value.Uint64()); p >= 0 {
		gcPercent = strconv.FormatInt(p, 10)
	}
	if l := s[1].Value.Uint64(); l < math.MaxInt64 {
		limit = strconv.FormatInt(int64(l), 10)
	}
	return gcPercent, limit
}

// readProcFile reads one small kernel file (procfs, cgroupfs), at most 1 MiB of it.
func readProcFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 1<<20))
}

// cgroupLimit is the container's memory limit in bytes, 0 for none: the lowest limit set on the
// process's cgroup or any ancestor within the mounted hierarchy, v2 (memory.max) and v1
// (memory.limit_in_bytes) alike. A file that is missing or does not parse bounds nothing.
func cgroupLimit(read func(string) ([]byte, error)) int64 {
	procCgroup, err1 := read("/proc/self/cgroup")
	mountinfo, err2 := read("/proc/self/mountinfo")
	if err1 != nil || err2 != nil {
		return 0
	}
	cg, err1 := gctune.ParseProcCgroup(procCgroup)
	mounts, err2 := gctune.ParseMountinfo(mountinfo)
	if err1 != nil || err2 != nil {
		return 0
	}
	var lowest int64
	lookIn := func(dirs []string, file string) {
		for _, dir := range dirs {
			data, err := read(path.Join(dir, file))
			if err != nil {
				continue
			}
			if n, ok, err := gctune.ParseLimit(data); err == nil && ok && (lowest == 0 || n < lowest) {
				lowest = n
			}
		}
	}
	lookIn(gctune.Dirs(mounts.Unified, cg.Unified), "memory.max")
	lookIn(gctune.Dirs(mounts.MemoryV1, cg.MemoryV1), "memory.limit_in_bytes")
	return lowest
}
