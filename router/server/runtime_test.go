package server

import (
	"bytes"
	"io/fs"
	"log/slog"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/internal/gctune"
	"github.com/anvil-llm/anvil/router/config"
)

// fakeProc serves cgroupLimit's reads from a map.
func fakeProc(files map[string]string) func(string) ([]byte, error) {
	return func(name string) ([]byte, error) {
		if v, ok := files[name]; ok {
			return []byte(v), nil
		}
		return nil, fs.ErrNotExist
	}
}

func TestCgroupLimit(t *testing.T) {
	v2 := "0::/kubepods/pod1/ctr\n"
	v2Mount := "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
	tests := []struct {
		name  string
		files map[string]string
		want  int64
		warn  string // a warning the log must hold; "" for none
	}{
		{"v2: the container's own limit", map[string]string{"/proc/self/cgroup": v2, "/proc/self/mountinfo": v2Mount,
			"/sys/fs/cgroup/kubepods/pod1/ctr/memory.max": "1073741824\n", "/sys/fs/cgroup/kubepods/pod1/memory.max": "max\n"}, 1 << 30, ""},
		{"v2: a lower limit on an ancestor bounds too", map[string]string{"/proc/self/cgroup": v2, "/proc/self/mountinfo": v2Mount,
			"/sys/fs/cgroup/kubepods/pod1/ctr/memory.max": "max\n", "/sys/fs/cgroup/kubepods/pod1/memory.max": "536870912\n"}, 512 << 20, ""},
		{"v2 namespaced: the mount is the container's cgroup", map[string]string{"/proc/self/cgroup": "0::/\n",
			"/proc/self/mountinfo": v2Mount, "/sys/fs/cgroup/memory.max": "268435456\n"}, 256 << 20, ""},
		{"v2 without a limit", map[string]string{"/proc/self/cgroup": v2, "/proc/self/mountinfo": v2Mount,
			"/sys/fs/cgroup/kubepods/pod1/ctr/memory.max": "max\n"}, 0, ""},
		{"v1 hybrid: the memory controller's limit", map[string]string{
			"/proc/self/cgroup":    "4:memory:/docker/abc\n0::/\n",
			"/proc/self/mountinfo": "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
			"/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "2147483648\n",
			"/sys/fs/cgroup/memory/memory.limit_in_bytes":            "9223372036854771712\n"}, 2 << 30, ""},
		{"v1 mounted at the container's subtree", map[string]string{
			"/proc/self/cgroup":                           "4:memory:/docker/abc\n",
			"/proc/self/mountinfo":                        "35 31 0:32 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n",
			"/sys/fs/cgroup/memory/memory.limit_in_bytes": "104857600\n"}, 100 << 20, ""},
		{"a limit file that does not parse bounds nothing", map[string]string{"/proc/self/cgroup": v2, "/proc/self/mountinfo": v2Mount,
			"/sys/fs/cgroup/kubepods/pod1/ctr/memory.max": "lots\n"}, 0,
			"container memory limit file ignored\" file=/sys/fs/cgroup/kubepods/pod1/ctr/memory.max"},
		{"a network namespace's nsfs mount does not hide the limit", map[string]string{"/proc/self/cgroup": v2,
			"/proc/self/mountinfo":                        "612 29 0:4 net:[4026532615] /run/docker/netns/1f2e3d rw - nsfs nsfs rw\n" + v2Mount,
			"/sys/fs/cgroup/kubepods/pod1/ctr/memory.max": "1073741824\n"}, 1 << 30, ""},
		{"no /proc", map[string]string{}, 0, "container memory limit not detected\" file=/proc/self/cgroup"},
		{"a malformed /proc/self/cgroup", map[string]string{"/proc/self/cgroup": "junk", "/proc/self/mountinfo": v2Mount}, 0,
			"container memory limit not detected\" file=/proc/self/cgroup error=\"gctune: malformed cgroup file\""},
		{"a malformed /proc/self/mountinfo", map[string]string{"/proc/self/cgroup": v2, "/proc/self/mountinfo": "junk\n"}, 0,
			"container memory limit not detected\" file=/proc/self/mountinfo error=\"gctune: malformed cgroup file\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			assert.Equal(t, tc.want, cgroupLimit(fakeProc(tc.files), slog.New(slog.NewTextHandler(&buf, nil))))
			if tc.warn == "" {
				assert.NotContains(t, buf.String(), "level=WARN")
			} else {
				assert.Contains(t, buf.String(), "level=WARN msg=\""+tc.warn)
			}
		})
	}
}

// TestApplyRuntime: the config's settings are set and logged with their source, GOGC in the
// environment wins over the config, and the process's own settings are restored afterwards.
func TestApplyRuntime(t *testing.T) {
	before := debug.SetGCPercent(100)
	limitBefore := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(before); debug.SetMemoryLimit(limitBefore) })
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	plan := ApplyRuntime(config.Runtime{GCPercent: 250, MemoryLimitBytes: 3 << 30, MemoryLimitPercent: 90}, log)
	assert.Equal(t, 250, debug.SetGCPercent(250))
	assert.Equal(t, int64(3<<30), debug.SetMemoryLimit(-1))
	assert.Equal(t, gctune.SourceConfig, plan.GCSource)
	assert.Contains(t, buf.String(), `msg="garbage collector" gc_percent=250 gc_percent_source=config memory_limit_bytes=3221225472 memory_limit_source=config`)

	buf.Reset()
	debug.SetGCPercent(100)
	t.Setenv("GOGC", "100") // as if the process had started with it
	plan = ApplyRuntime(config.Runtime{GCPercent: 250, MemoryLimitPercent: 90}, log)
	require.False(t, plan.SetGCPercent)
	assert.Equal(t, 100, debug.SetGCPercent(100), "the environment wins")
	assert.Contains(t, buf.String(), "gc_percent=100 gc_percent_source=environment")
}

// TestApplyRuntimeClamps: a configured limit above the container's is clamped to it, and the log says so.
func TestApplyRuntimeClamps(t *testing.T) {
	before, limitBefore := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(before); debug.SetMemoryLimit(limitBefore) })
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	var buf bytes.Buffer
	plan := applyPlan(config.Runtime{MemoryLimitBytes: 2 << 30, MemoryLimitPercent: 90}, slog.New(slog.NewTextHandler(&buf, nil)), 1<<30)
	assert.True(t, plan.LimitClamped)
	assert.Equal(t, int64(1<<30), debug.SetMemoryLimit(-1))
	assert.Contains(t, buf.String(), `level=WARN msg="runtime.memory_limit_bytes is above the container's memory limit: the container's limit is used" memory_limit_bytes=2147483648 container_memory_limit_bytes=1073741824`)
}
