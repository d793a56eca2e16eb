package gctune

import (
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hybrid is a machine with the v1 hierarchies and an empty unified one (this repository's CI box).
const hybridCgroup = `9:name=systemd:/
4:memory:/process_api/04db31bd
3:cpuset:/
1:cpu,cpuacct:/
0::/
`

const hybridMountinfo = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

func TestParseProcCgroup(t *testing.T) {
	c, err := ParseProcCgroup([]byte(hybridCgroup))
	require.NoError(t, err)
	assert.Equal(t, Cgroup{Unified: "/", MemoryV1: "/process_api/04db31bd"}, c)

	c, err = ParseProcCgroup([]byte("0::/kubepods.slice/pod1/cri-abc.scope\n"))
	require.NoError(t, err)
	assert.Equal(t, Cgroup{Unified: "/kubepods.slice/pod1/cri-abc.scope"}, c)

	c, err = ParseProcCgroup([]byte("5:cpu,memory,blkio:/docker/abc\n3:memorystats:/x\n"))
	require.NoError(t, err)
	assert.Equal(t, Cgroup{MemoryV1: "/docker/abc"}, c, "only the memory controller itself")

	for _, bad := range []string{"0:/", "garbage\n", "0::relative/path\n", "4:memory:\n"} {
		_, err := ParseProcCgroup([]byte(bad))
		assert.ErrorIs(t, err, ErrCgroupFile, "%q", bad)
	}
}

func TestParseMountinfo(t *testing.T) {
	m, err := ParseMountinfo([]byte(hybridMountinfo))
	require.NoError(t, err)
	assert.Equal(t, &Mount{Root: "/", Point: "/sys/fs/cgroup/unified"}, m.Unified)
	assert.Equal(t, &Mount{Root: "/", Point: "/sys/fs/cgroup/memory"}, m.MemoryV1)

	// Optional tags before the separator, an escaped space, a container's subtree as the root.
	m, err = ParseMountinfo([]byte(`1 0 0:1 /docker/abc /sys/fs/my\040cgroup ro,nosuid shared:4 master:1 - cgroup2 cgroup2 rw,nsdelegate` + "\n"))
	require.NoError(t, err)
	assert.Equal(t, &Mount{Root: "/docker/abc", Point: "/sys/fs/my cgroup"}, m.Unified)
	assert.Nil(t, m.MemoryV1)

	// Network namespaces (ip netns, Docker's /run/docker/netns) are nsfs mounts whose root is no path:
	// skipped, they must not hide the cgroup mounts.
	m, err = ParseMountinfo([]byte("612 29 0:4 net:[4026532615] /run/docker/netns/1f2e3d rw - nsfs nsfs rw\n" +
		"613 29 0:4 net:[4026532700] /run/netns/blue rw shared:5 - nsfs nsfs rw\n" + hybridMountinfo))
	require.NoError(t, err)
	assert.Equal(t, &Mount{Root: "/", Point: "/sys/fs/cgroup/unified"}, m.Unified)
	assert.Equal(t, &Mount{Root: "/", Point: "/sys/fs/cgroup/memory"}, m.MemoryV1)

	for _, bad := range []string{"1 0 0:1 / /x rw\n", "1 0 0:1 / /x rw - cgroup2\n", "short - a b c\n", "1 0 0:1 / rel rw - cgroup2 c rw\n",
		"1 0 0:1 net:[1] /x rw - cgroup cgroup rw,memory\n"} {
		_, err := ParseMountinfo([]byte(bad))
		assert.ErrorIs(t, err, ErrCgroupFile, "%q", bad)
	}
}

func TestDirs(t *testing.T) {
	root := &Mount{Root: "/", Point: "/sys/fs/cgroup/memory"}
	assert.Equal(t, []string{"/sys/fs/cgroup/memory/a/b", "/sys/fs/cgroup/memory/a", "/sys/fs/cgroup/memory"}, Dirs(root, "/a/b"))
	assert.Equal(t, []string{"/sys/fs/cgroup/memory"}, Dirs(root, "/"))
	sub := &Mount{Root: "/docker/abc", Point: "/sys/fs/cgroup"}
	assert.Equal(t, []string{"/sys/fs/cgroup"}, Dirs(sub, "/docker/abc"))
	assert.Equal(t, []string{"/sys/fs/cgroup/x", "/sys/fs/cgroup"}, Dirs(sub, "/docker/abc/x"))
	assert.Nil(t, Dirs(sub, "/docker/abcd"), "a sibling is not under the mounted root")
	assert.Nil(t, Dirs(nil, "/a"))
	assert.Nil(t, Dirs(root, ""))
}

func TestParseLimit(t *testing.T) {
	tests := []struct {
		in    string
		limit int64
		ok    bool
		err   error
	}{
		{"max\n", 0, false, nil},
		{"1073741824\n", 1 << 30, true, nil},
		{"536870912", 512 << 20, true, nil},
		{"9223372036854771712\n", 0, false, nil}, // v1's "no limit" with 4 KiB pages
		{"4611686018427387904\n", 0, false, nil}, // 2^62
		{"0\n", 0, false, nil},
		{"", 0, false, ErrCgroupFile},
		{"-1\n", 0, false, ErrCgroupFile},
		{"+5\n", 0, false, ErrCgroupFile},
		{"12 kB\n", 0, false, ErrCgroupFile},
		{"max\n\n", 0, false, ErrCgroupFile},
		{"99999999999999999999\n", 0, false, ErrCgroupFile},
	}
	for _, tc := range tests {
		limit, ok, err := ParseLimit([]byte(tc.in))
		assert.ErrorIs(t, err, tc.err, "%q", tc.in)
		assert.Equal(t, tc.limit, limit, "%q", tc.in)
		assert.Equal(t, tc.ok, ok, "%q", tc.in)
	}
}

// FuzzCgroupFiles feeds arbitrary bytes to every parser of the files the kernel writes: none panics, a
// refusal is ErrCgroupFile, a limit is positive and below NoLimitV1, and every path is absolute and
// clean, and so is every directory derived from it.
func FuzzCgroupFiles(f *testing.F) {
	f.Add([]byte(hybridCgroup))
	f.Add([]byte(hybridMountinfo))
	f.Add([]byte("max\n"))
	f.Add([]byte("1073741824\n"))
	f.Add([]byte(`1 0 0:1 /a\134b /p\040q rw shared:1 - cgroup cgroup rw,memory` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if limit, ok, err := ParseLimit(data); err != nil {
			assert.ErrorIs(t, err, ErrCgroupFile)
		} else if ok && (limit <= 0 || limit >= NoLimitV1) {
			t.Fatalf("limit %d from %q", limit, data)
		}
		c, err := ParseProcCgroup(data)
		if err != nil {
			assert.ErrorIs(t, err, ErrCgroupFile)
		}
		for _, p := range []string{c.Unified, c.MemoryV1} {
			if p != "" && !strings.HasPrefix(p, "/") {
				t.Fatalf("relative cgroup path %q", p)
			}
		}
		m, err := ParseMountinfo(data)
		if err != nil {
			assert.ErrorIs(t, err, ErrCgroupFile)
		}
		for i, mount := range []*Mount{m.Unified, m.MemoryV1} {
			point := ""
			if mount != nil {
				point = strings.TrimSuffix(path.Clean(mount.Point), "/")
			}
			for _, d := range Dirs(mount, []string{c.Unified, c.MemoryV1}[i]) {
				if d != path.Clean(mount.Point) && !strings.HasPrefix(d, point+"/") {
					t.Fatalf("directory %q outside the mount point %q", d, mount.Point)
				}
			}
		}
	})
}
