package gctune

import (
	"bytes"
	"errors"
	"path"
	"strconv"
	"strings"
)

// ErrCgroupFile marks a cgroup or mountinfo file, or a limit value, that does not parse.
var ErrCgroupFile = errors.New("gctune: malformed cgroup file")

// NoLimitV1 is where cgroup v1 reports "no limit": PAGE_COUNTER_MAX pages, which is at least 2^62
// bytes with any page size; so every value from it up means none.
const NoLimitV1 = int64(1) << 62

// Cgroup is the process's place in the two hierarchies, as /proc/self/cgroup states it: the unified
// (v2) path, and the path in the v1 hierarchy that holds the memory controller. "" means absent.
type Cgroup struct {
	Unified, MemoryV1 string
}

// ParseProcCgroup reads /proc/self/cgroup: lines "ID:CONTROLLERS:PATH" (ID 0 and no controllers for
// v2). A path must be absolute.
func ParseProcCgroup(data []byte) (Cgroup, error) {
	var c Cgroup
	for line := range strings.SplitSeq(string(data), "\n") {
		if line == "" {
			continue
		}
		id, rest, ok1 := strings.Cut(line, ":")
		ctrls, p, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 || !strings.HasPrefix(p, "/") {
			return Cgroup{}, ErrCgroupFile
		}
		switch {
		case id == "0" && ctrls == "":
			c.Unified = path.Clean(p)
		case hasField(ctrls, "memory"):
			c.MemoryV1 = path.Clean(p)
		}
	}
	return c, nil
}

// hasField reports whether the comma-separated list holds name.
func hasField(list, name string) bool { return strings.Contains(","+list+",", ","+name+",") }

// Mount is one cgroup file system mount of /proc/self/mountinfo: the hierarchy's path mounted (Root)
// at Point.
type Mount struct {
	Root, Point string
}

// Mounts are the mounts that matter: the unified hierarchy's and the v1 memory controller's.
type Mounts struct {
	Unified, MemoryV1 *Mount
}

// ParseMountinfo reads /proc/self/mountinfo: "ID PARENT MAJ:MIN ROOT POINT OPTIONS [TAGS...] - FSTYPE
// SOURCE SUPEROPTIONS". The first mount of each kind counts; other file systems are skipped unread
// (an nsfs mount's ROOT is "net:[INODE]", not a path). Octal escapes (\040 for a space) in a cgroup
// mount's ROOT and POINT are decoded; both must be absolute.
func ParseMountinfo(data []byte) (Mounts, error) {
	var m Mounts
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		head, tail, ok := strings.Cut(string(line), " - ")
		f, t := strings.Fields(head), strings.Fields(tail)
		if !ok || len(f) < 6 || len(t) < 3 {
			return Mounts{}, ErrCgroupFile
		}
		unified := t[0] == "cgroup2" && m.Unified == nil
		memoryV1 := t[0] == "cgroup" && m.MemoryV1 == nil && hasField(t[2], "memory")
		if !unified && !memoryV1 {
			continue // another file system: its root need not be a path (nsfs's is "net:[4026532615]")
		}
		mount := &Mount{Root: unescapeOctal(f[3]), Point: unescapeOctal(f[4])}
		if !strings.HasPrefix(mount.Point, "/") || !strings.HasPrefix(mount.Root, "/") {
			return Mounts{}, ErrCgroupFile
		}
		if unified {
			m.Unified = mount
		} else {
			m.MemoryV1 = mount
		}
	}
	return m, nil
}

// unescapeOctal decodes the kernel's \ooo escapes of mountinfo fields.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return '0' <= c && c <= '7' }

// Dirs returns the directories whose limit files bound the process in one hierarchy, innermost first:
// its cgroup's directory under the mount point and every parent up to the mount point itself (a
// limit set on an ancestor bounds the process too). None when the process's cgroup is not under the
// mounted root (a mount of another namespace's subtree).
func Dirs(m *Mount, cgroupPath string) []string {
	if m == nil || cgroupPath == "" {
		return nil
	}
	root := path.Clean(m.Root)
	rel := cgroupPath
	if root != "/" {
		if cgroupPath != root && !strings.HasPrefix(cgroupPath, root+"/") {
			return nil
		}
		rel = strings.TrimPrefix(cgroupPath, root)
	}
	var dirs []string
	for {
		dirs = append(dirs, path.Join(m.Point, rel))
		if rel == "" || rel == "/" {
			return dirs
		}
		rel = path.Dir(rel)
	}
}

// ParseLimit reads a memory limit file: cgroup v2's memory.max ("max" for none) or v1's
// memory.limit_in_bytes (NoLimitV1 and above for none). ok is false for no limit.
func ParseLimit(data []byte) (limit int64, ok bool, err error) {
	s := strings.TrimSuffix(string(data), "\n")
	if s == "max" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || s[0] == '+' {
		return 0, false, ErrCgroupFile
	}
	if n == 0 || n >= NoLimitV1 {
		return 0, false, nil
	}
	return n, true, nil
}
