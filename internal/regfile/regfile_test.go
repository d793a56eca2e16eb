package regfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A FIFO (read or write, with or without a peer) and a directory are refused at once, never waited
// on; a regular file, or a link to one, opens; Read stops one byte past its limit.
func TestOpenRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	for _, flag := range []int{os.O_RDONLY, os.O_WRONLY | os.O_APPEND | os.O_CREATE} {
		_, err := Open(fifo, flag, 0o600)
		assert.ErrorIs(t, err, ErrNotRegular, "a FIFO, flag %#x", flag)
	}
	_, err := Open(dir, os.O_RDONLY, 0)
	assert.ErrorIs(t, err, ErrNotRegular, "a directory")

	file := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(file, []byte("0123456789"), 0o600))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink("token", link))
	data, err := Read(link, 4)
	require.NoError(t, err)
	assert.Equal(t, "01234", string(data), "limit+1 bytes, through the link")
	_, err = Read(filepath.Join(dir, "gone"), 4)
	assert.ErrorIs(t, err, os.ErrNotExist)
}
