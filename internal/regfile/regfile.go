// Package regfile opens the files a configuration names (token files, the TLS pair, the decision
// log) so that what sits at the path cannot hang the process: the open never blocks (a FIFO would
// otherwise wait for a writer, or a reader), and anything but a regular file is refused, checked on
// the open descriptor so that a path swapped after a check cannot slip through.
package regfile

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// ErrNotRegular refuses a path that holds something other than a regular file: a FIFO would block
// the open or the read forever, a device never ends.
var ErrNotRegular = errors.New("not a regular file")

// Open opens name with flag and O_NONBLOCK, and refuses anything but a regular file with
// ErrNotRegular itself (the caller names the path in its own words). A FIFO without a reader fails
// the open itself (ENXIO); it is named as what it is. A final link is followed.
func Open(name string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(name, flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		if info, serr := os.Stat(name); serr == nil && !info.Mode().IsRegular() {
			return nil, ErrNotRegular
		}
		return nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = ErrNotRegular
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// Read reads at most limit+1 bytes of a regular file, so a caller can tell an oversized file from
// one that fits without reading all of it.
func Read(name string, limit int64) ([]byte, error) {
	f, err := Open(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return io.ReadAll(io.LimitReader(f, limit+1))
}
