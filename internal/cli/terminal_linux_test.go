//go:build linux

package cli

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The terminal tests open a pseudo-terminal the Linux way (/dev/ptmx, TIOCSPTLCK, TIOCGPTN); the
// check itself (x/term) is portable.

func TestIsTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "f")
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, IsTerminal(f), "a regular file")
	assert.False(t, IsTerminal(&bytes.Buffer{}), "not a file")
	assert.False(t, IsTerminal(nil))
}

// TestIsTerminalCharDevices: /dev/null is a character device but no terminal, and a pipe is
// neither; only a real pseudo-terminal counts.
func TestIsTerminalCharDevices(t *testing.T) {
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer null.Close()
	assert.False(t, IsTerminal(null), "/dev/null")

	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	assert.False(t, IsTerminal(r), "a pipe's read end")
	assert.False(t, IsTerminal(w), "a pipe's write end")

	pts := openPTY(t)
	assert.True(t, IsTerminal(pts), "a pseudo-terminal")
}

// openPTY opens a new pseudo-terminal's follower side (skipping where /dev/ptmx is unavailable).
func openPTY(t *testing.T) *os.File {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { _ = ptmx.Close() })
	fd := int(ptmx.Fd())
	require.NoError(t, unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	require.NoError(t, err)
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("cannot open the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { _ = pts.Close() })
	return pts
}
