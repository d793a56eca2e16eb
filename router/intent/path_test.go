package intent_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/intent"
)

// loadWithin loads path and fails the test when Load has not returned within 20 s (it takes
// microseconds): a FIFO must be refused, not block in open.
func loadWithin(t *testing.T, fsys intent.FS, path string) (*intent.Store, error) {
	t.Helper()
	type result struct {
		s   *intent.Store
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, _, err := intent.Load(fsys, path)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-time.After(20 * time.Second):
		t.Fatal("Load blocked")
		return nil, nil
	}
}

// What is at the path, or its directory, is refused with one fixed problem each, all ErrUnusable;
// the path is left as it was.
func TestUnusablePathsNameTheirProblem(t *testing.T) {
	for name, c := range map[string]struct {
		make func(t *testing.T, dir string) string // returns the intent file's path
		want error
		text string
	}{
		"a FIFO": {func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "intent.json")
			require.NoError(t, syscall.Mkfifo(p, 0o600))
			return p
		}, intent.ErrNotRegular, "not a regular file"},
		"a directory": {func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "intent.json")
			require.NoError(t, os.Mkdir(p, 0o700))
			return p
		}, intent.ErrIsDirectory, "is a directory"},
		"a link to a regular file": {func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "intent.json")
			require.NoError(t, os.WriteFile(filepath.Join(dir, "target.json"), []byte(`{"tiers":{}}`), 0o600))
			require.NoError(t, os.Symlink("target.json", p))
			return p
		}, intent.ErrSymlink, "is a symbolic link"},
		"a dangling link": {func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "intent.json")
			require.NoError(t, os.Symlink("nowhere.json", p))
			return p
		}, intent.ErrSymlink, "is a symbolic link"},
		"a link to a FIFO": {func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "intent.json")
			require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
			require.NoError(t, os.Symlink("fifo", p))
			return p
		}, intent.ErrSymlink, "is a symbolic link"},
		"a file where the directory belongs": {func(t *testing.T, dir string) string {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "state"), nil, 0o600))
			return filepath.Join(dir, "state", "intent.json")
		}, intent.ErrNoDirectory, "no such directory"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := c.make(t, dir)
			before, err := os.Lstat(path)
			_, lerr := loadWithin(t, intent.OS{}, path)
			require.Error(t, lerr)
			assert.ErrorIs(t, lerr, c.want)
			assert.ErrorIs(t, lerr, intent.ErrUnusable)
			assert.Equal(t, "intent file "+path+": unusable: "+c.text, lerr.Error()[:len("intent file "+path+": unusable: "+c.text)])
			if err == nil {
				after, err := os.Lstat(path)
				require.NoError(t, err)
				assert.Equal(t, before.Mode(), after.Mode(), "the path is left as it was")
			}
		})
	}
}

// A missing directory loads as no intent (the file is absent) and Check names it.
func TestCheckNamesAMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gone", "intent.json")
	s, err := loadWithin(t, intent.OS{}, path)
	require.NoError(t, err)
	err = s.Check()
	assert.ErrorIs(t, err, intent.ErrNoDirectory)
	assert.ErrorIs(t, err, intent.ErrUnusable)
	assert.EqualError(t, err, "intent file "+path+": unusable: no such directory")
}

// denying fails CreateTemp with the error a read-only directory gives.
type denying struct {
	intent.OS
	errno syscall.Errno
}

func (d denying) CreateTemp(dir, _ string) (intent.File, error) {
	return nil, &fs.PathError{Op: "open", Path: dir, Err: d.errno}
}

// A directory that takes no file (permissions, a read-only mount) is ErrDirNotWritable: through
// the errors the OS gives, and for real where permissions bind (not for root).
func TestCheckNamesADirectoryNotWritable(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EACCES, syscall.EPERM, syscall.EROFS} {
		t.Run(errno.Error(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "intent.json")
			s, err := loadWithin(t, denying{errno: errno}, path)
			require.NoError(t, err)
			err = s.Check()
			assert.ErrorIs(t, err, intent.ErrDirNotWritable)
			assert.EqualError(t, err, "intent file "+path+": unusable: directory not writable")
		})
	}
	t.Run("chmod 0500", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.Chmod(dir, 0o500))
		defer func() { _ = os.Chmod(dir, 0o700) }()
		if f, err := os.CreateTemp(dir, "probe-*"); err == nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
			t.Skip("running as root: permissions do not bind; the injected errors above cover it")
		}
		s, err := loadWithin(t, intent.OS{}, filepath.Join(dir, "intent.json"))
		require.NoError(t, err)
		assert.ErrorIs(t, s.Check(), intent.ErrDirNotWritable)
	})
}
