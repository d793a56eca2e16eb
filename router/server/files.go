package server

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrNotRegular refuses a path the server opens (the decision log's JSONL file, the TLS certificate
// and key) that holds something other than a regular file: a FIFO would block the open (or the
// read) forever, a device never ends.
var ErrNotRegular = errors.New("not a regular file")

// maxCertFileBytes bounds a TLS certificate or key file, as the config watcher reads it.
const maxCertFileBytes = 1 << 20

// openRegular opens name with flag and O_NONBLOCK, so that a FIFO cannot block the open, and
// refuses anything but a regular file, checked on the open descriptor so that a path swapped after
// a check cannot slip through. A FIFO without a reader fails the open itself (ENXIO); it is named
// as what it is.
func openRegular(name string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(name, flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		if info, serr := os.Stat(name); serr == nil && !info.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: %w", name, ErrNotRegular)
		}
		return nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("%s: %w", name, ErrNotRegular)
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// openAppend opens the decision log's JSONL file for appending, creating it when absent. A link is
// followed (the file is only ever appended to, never replaced), but what it ends at must be a
// regular file: a FIFO would block the start in open.
func openAppend(path string) (*os.File, error) {
	return openRegular(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
}

// readRegular reads a regular file of at most limit bytes.
func readRegular(name string, limit int64) ([]byte, error) {
	f, err := openRegular(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(data)) > limit {
		err = fmt.Errorf("%s: larger than %d bytes", name, limit)
	}
	return data, err
}
