package server

import (
	"context"
	"io"
	"log/slog"
	"math"
	"os"
	"path"
	"runtime"
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
	var container int64
	if runtime.GOOS == "linux" { // cgroups are Linux's; elsewhere there is nothing to read or warn of
		container = cgroupLimit(readProcFile, log)
	}
	return applyPlan(rt, log, container)
}

// applyPlan is ApplyRuntime once the container's limit (0 for none) is known.
func applyPlan(rt config.Runtime, log *slog.Logger, container int64) gctune.Plan {
	plan := gctune.Decide(gctune.Inputs{
		EnvGOGC: os.Getenv("GOGC"), EnvGOMEMLIMIT: os.Getenv("GOMEMLIMIT"),
		GCPercent: rt.GCPercent, MemoryLimitBytes: rt.MemoryLimitBytes, MemoryLimitPercent: rt.MemoryLimitPercent,
		CgroupLimit: container,
	})
	if plan.SetGCPercent {
		debug.SetGCPercent(plan.GCPercent)
	}
	if plan.LimitClamped {
		log.LogAttrs(context.Background(), slog.LevelWarn, "runtime.memory_limit_bytes is above the container's memory limit: the container's limit is used",
			slog.Int64("memory_limit_bytes", rt.MemoryLimitBytes), slog.Int64("container_memory_limit_bytes", container))
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
// (memory.limit_in_bytes) alike. A limit file that is missing bounds nothing (most levels set none);
// a /proc file that cannot be read or parsed, or a limit file that does not parse, is logged as a
// warning, because detection is then off and the operator should know why.
func cgroupLimit(read func(string) ([]byte, error), log *slog.Logger) int64 {
	warn := func(what string, err error) {
		log.LogAttrs(context.Background(), slog.LevelWarn, "container memory limit not detected",
			slog.String("file", what), slog.String("error", err.Error()))
	}
	procCgroup, err := read("/proc/self/cgroup")
	if err != nil {
		warn("/proc/self/cgroup", err)
		return 0
	}
	mountinfo, err := read("/proc/self/mountinfo")
	if err != nil {
		warn("/proc/self/mountinfo", err)
		return 0
	}
	cg, err := gctune.ParseProcCgroup(procCgroup)
	if err != nil {
		warn("/proc/self/cgroup", err)
		return 0
	}
	mounts, err := gctune.ParseMountinfo(mountinfo)
	if err != nil {
		warn("/proc/self/mountinfo", err)
		return 0
	}
	var lowest int64
	lookIn := func(dirs []string, file string) {
		for _, dir := range dirs {
			name := path.Join(dir, file)
			data, err := read(name)
			if err != nil {
				continue
			}
			n, ok, err := gctune.ParseLimit(data)
			if err != nil {
				log.LogAttrs(context.Background(), slog.LevelWarn, "container memory limit file ignored",
					slog.String("file", name), slog.String("error", err.Error()))
			} else if ok && (lowest == 0 || n < lowest) {
				lowest = n
			}
		}
	}
	lookIn(gctune.Dirs(mounts.Unified, cg.Unified), "memory.max")
	lookIn(gctune.Dirs(mounts.MemoryV1, cg.MemoryV1), "memory.limit_in_bytes")
	return lowest
}
