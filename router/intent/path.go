package intent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrUnusable is wrapped by every refusal of what is at the intent file's path, or of its
// directory, at start: something the operator fixes on disk or in the config, so it refuses
// startup like a malformed config (exit 2). Each refusal also wraps the sentinel of its one fixed
// problem below.
var ErrUnusable = errors.New("unusable")

// The fixed problems of an unusable intent file path.
var (
	ErrNoDirectory    = unusable("no such directory")
	ErrDirNotWritable = unusable("directory not writable")
	ErrIsDirectory    = unusable("is a directory")
	ErrNotRegular     = unusable("not a regular file")
	ErrSymlink        = unusable("is a symbolic link (name the link's target as intent_file)")
	ErrNotReadable    = unusable("not readable (permission denied)")
)

func unusable(text string) error { return fmt.Errorf("%w: %s", ErrUnusable, text) }

// Open implements FS: it opens without blocking (a FIFO would otherwise wait for a writer) and
// without following a final symbolic link (a save replaces the path itself, so a link would be
// replaced by a regular file), and refuses anything but a regular file, checked on the open
// descriptor so that a path swapped after a check cannot slip through.
func (OS) Open(name string) (io.ReadCloser, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if info, lerr := os.Lstat(name); lerr == nil && info.Mode()&fs.ModeSymlink != 0 {
			return nil, ErrSymlink
		}
		return nil, err
	}
	info, err := f.Stat()
	switch {
	case err != nil:
	case info.IsDir():
		err = ErrIsDirectory
	case !info.Mode().IsRegular():
		err = ErrNotRegular
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// openProblem names why the intent file could not be opened for reading: one of the unusable
// problems, or ErrRead for a failure the path does not explain (an I/O error).
func openProblem(err error) error {
	switch {
	case errors.Is(err, ErrUnusable):
		return err
	case errors.Is(err, syscall.ENOTDIR):
		return ErrNoDirectory // a component of the directory's path is a file
	case errors.Is(err, fs.ErrPermission):
		return ErrNotReadable
	}
	return ErrRead
}

// createProblem names why no file could be created in the intent file's directory.
func createProblem(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return ErrNoDirectory
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return ErrDirNotWritable
	}
	return nil
}
