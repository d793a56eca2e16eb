package spool

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func openDir(t *testing.T) *Dir {
	t.Helper()
	d, removed, err := Open(filepath.Join(t.TempDir(), DirName))
	require.NoError(t, err)
	assert.Empty(t, removed)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func entries(t *testing.T, d *Dir) []os.DirEntry {
	t.Helper()
	es, err := os.ReadDir(d.Path())
	require.NoError(t, err)
	return es
}

func unlimited(int64) error { return nil }

func TestOpenMakesAPrivateDirectory(t *testing.T) {
	d := openDir(t)
	fi, err := os.Lstat(d.Path())
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
}

func TestOpenRefusesAnUnsafeDirectory(t *testing.T) {
	base := t.TempDir()
	open := filepath.Join(base, "open")
	require.NoError(t, os.Mkdir(open, 0o700))
	require.NoError(t, os.Chmod(open, 0o755))
	target := filepath.Join(base, "target")
	require.NoError(t, os.Mkdir(target, 0o700))
	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(target, link))
	file := filepath.Join(base, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	for _, p := range []string{open, link, file} {
		_, _, err := Open(p)
		assert.ErrorIs(t, err, ErrUnsafeDir, p)
	}
	_, _, err := Open(filepath.Join(base, "missing", "deeper"))
	assert.Error(t, err, "a missing parent is not created")
}

func TestBufferInMemory(t *testing.T) {
	d := openDir(t)
	b := d.NewBuffer(1<<10, unlimited)
	_, err := b.Write([]byte("hello "))
	require.NoError(t, err)
	_, err = b.Write([]byte("world"))
	require.NoError(t, err)
	assert.False(t, b.Spilled())
	assert.Empty(t, entries(t, d), "no file while it fits in memory")
	got, err := io.ReadAll(b.Reader())
	require.NoError(t, err)
	assert.Equal(t, "hello world", string(got))
	require.NoError(t, b.Close())
	require.NoError(t, b.Close())
	_, err = b.Write([]byte("x"))
	assert.ErrorIs(t, err, ErrClosed)
}

func TestBufferSpills(t *testing.T) {
	d := openDir(t)
	var asked []int64
	b := d.NewBuffer(100, func(n int64) error { asked = append(asked, n); return nil })
	data := bytes.Repeat([]byte("0123456789"), SpillStep/10+50) // 1 MiB + 500 bytes
	n, err := b.Write(data)
	require.NoError(t, err)
	assert.Equal(t, len(data), n)
	assert.True(t, b.Spilled())
	assert.Equal(t, []int64{SpillStep, SpillStep}, asked, "disk is reserved a step at a time")
	assert.Equal(t, int64(2*SpillStep), b.Reserved())
	assert.Empty(t, entries(t, d), "the spool file is unlinked at once: only its descriptor is kept")
	info, err := b.file.Stat()
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	assert.Equal(t, int64(len(data)-100), info.Size(), "past the memory bound, on disk")
	assert.Equal(t, int64(len(data)-100), d.Bytes())
	got, err := io.ReadAll(b.Reader())
	require.NoError(t, err)
	assert.Equal(t, data, got)
	assert.Equal(t, 1, d.Live())
	require.NoError(t, b.Close())
	assert.Zero(t, d.Live(), "Close frees the file")
	assert.Zero(t, d.Bytes())
}

func TestBufferRefusals(t *testing.T) {
	d := openDir(t)
	full := errors.New("full")
	b := d.NewBuffer(10, func(int64) error { return full })
	n, err := b.Write(make([]byte, 20))
	assert.ErrorIs(t, err, full)
	assert.Equal(t, 10, n, "the memory part is taken")
	assert.Empty(t, entries(t, d), "no file without its reservation")

	off := d.NewBuffer(10, nil)
	_, err = off.Write(make([]byte, 11))
	assert.ErrorIs(t, err, ErrSpillOff)
}

func TestDirCloseRemovesLiveFiles(t *testing.T) {
	d := openDir(t)
	b := d.NewBuffer(0, unlimited)
	_, err := b.Write([]byte("held"))
	require.NoError(t, err)
	require.Equal(t, 1, d.Live())
	require.NoError(t, d.Close())
	assert.Zero(t, d.Live())
	assert.Empty(t, entries(t, d))
	assert.NoError(t, b.Close(), "a buffer whose file the directory closed closes quietly")
	assert.NoError(t, d.Close(), "Close again is a no-op")
	_, err = d.NewBuffer(0, unlimited).Write([]byte("x"))
	assert.ErrorIs(t, err, ErrClosed, "no file after Close")
}

func TestSweep(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	require.NoError(t, os.Mkdir(dir, 0o700))
	legacy := func(pid int, hex string) string { return "held-" + strconv.Itoa(pid) + "-" + hex + ".part" }
	// Every file of the pattern is stale (a live router holds only descriptors), the earlier
	// routers' PID-named files too, whatever the PID.
	stale := []string{"held-0123456789abcdef.part", legacy(os.Getpid(), "0123456789abcdef"), legacy(1, "fedcba9876543210"),
		legacy(4194304, "0123456789abcdef")}
	kept := []string{"held-01-0123456789abcdef.part", "held-5-0123456789ABCDEF.part", "held-12345678-0123456789abcdef.part",
		"held-5-0123456789abcdef.tmp", "held-5-0123.part", "held-0123456789abcde.part", "held--0123456789abcdef.part", "other"}
	for _, n := range append(append([]string{}, stale...), kept...) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), nil, 0o600))
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "held-aaaaaaaaaaaaaaaa.part"), 0o700))
	kept = append(kept, "held-aaaaaaaaaaaaaaaa.part")
	d, removed, err := Open(dir)
	require.NoError(t, err)
	defer d.Close()
	assert.ElementsMatch(t, stale, removed)
	var left []string
	for _, e := range entries(t, d) {
		left = append(left, e.Name())
	}
	assert.ElementsMatch(t, kept, left, "only regular files of the pattern")
}

// TestSpoolKilledLeavesNothing: a process SIGKILLed while it holds a spilled buffer leaves no file
// in the spool directory. The test runs itself as that process.
func TestSpoolKilledLeavesNothing(t *testing.T) {
	if dir := os.Getenv("ANVIL_SPOOL_KILL_DIR"); dir != "" {
		d, _, err := Open(dir)
		require.NoError(t, err)
		b := d.NewBuffer(0, unlimited)
		_, err = b.Write(make([]byte, 3*SpillStep))
		require.NoError(t, err)
		fmt.Println("spilled")
		select {} // until killed
	}
	dir := filepath.Join(t.TempDir(), DirName)
	cmd := exec.Command(os.Args[0], "-test.run=^TestSpoolKilledLeavesNothing$")
	cmd.Env = append(os.Environ(), "ANVIL_SPOOL_KILL_DIR="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "spilled\n", line)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, names, "nothing left behind by a killed process")
}

// TestBufferProperty: whatever the writes and the memory bound, the buffer reads back exactly what
// was written, keeps at most its bound in memory, asks for disk only for what it writes there, and
// leaves no file after Close.
func TestBufferProperty(t *testing.T) {
	d := openDir(t)
	rapid.Check(t, func(t *rapid.T) {
		memLimit := rapid.Int64Range(0, 200<<10).Draw(t, "memLimit")
		writes := rapid.SliceOfN(rapid.IntRange(0, 300<<10), 0, 8).Draw(t, "writes")
		var reserved int64
		b := d.NewBuffer(memLimit, func(n int64) error { reserved += n; return nil })
		var want []byte
		for i, n := range writes {
			p := bytes.Repeat([]byte{byte(i + 1)}, n)
			m, err := b.Write(p)
			if err != nil || m != n {
				t.Fatalf("write %d: %d of %d: %v", i, m, n, err)
			}
			want = append(want, p...)
		}
		var memCap int64
		for _, c := range b.mem {
			memCap += int64(cap(c))
		}
		if b.memSize > memLimit || memCap > memLimit {
			t.Fatalf("memory %d (cap %d) over its bound %d", b.memSize, memCap, memLimit)
		}
		if onDisk := int64(len(want)) - b.memSize; reserved < onDisk || reserved >= onDisk+SpillStep+1 && onDisk > 0 {
			t.Fatalf("reserved %d for %d on disk", reserved, onDisk)
		}
		got, err := io.ReadAll(b.Reader())
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("read back %d bytes, want %d: %v", len(got), len(want), err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if d.Live() != 0 {
			t.Fatalf("%d files left", d.Live())
		}
	})
}

// TestSpoolClosedUnderBuffer: a buffer whose file a shutdown's Dir.Close closed reads and writes
// ErrClosed, so its owner can tell a shutdown from a failed disk.
func TestSpoolClosedUnderBuffer(t *testing.T) {
	d := openDir(t)
	b := d.NewBuffer(4, unlimited)
	_, err := b.Write([]byte("held on disk"))
	require.NoError(t, err)
	require.NoError(t, d.Close())
	_, err = io.ReadAll(b.Reader())
	assert.ErrorIs(t, err, ErrClosed)
	_, err = b.Write([]byte("more"))
	assert.ErrorIs(t, err, ErrClosed)
	assert.NoError(t, b.Close())
}

// spoolPattern is spoolName's reference: the current names and the earlier routers' PID names.
var spoolPattern = regexp.MustCompile(`^held-([1-9][0-9]{0,6}-)?[0-9a-f]{16}\.part$`)

// FuzzSpoolName: the sweep's name check (a directory entry is outside input) agrees with the
// reference pattern on every name.
func FuzzSpoolName(f *testing.F) {
	for _, s := range []string{"held-0123456789abcdef.part", "held-1-0123456789abcdef.part", "held-01-0123456789abcdef.part",
		"held-12345678-0123456789abcdef.part", "held--0123456789abcdef.part", "held-0123456789ABCDEF.part", "other", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		assert.Equal(t, spoolPattern.MatchString(name), spoolName(name), name)
	})
}
