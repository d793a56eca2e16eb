// Package spool holds bytes the router cannot send on yet: an audio file part that arrived before the
// form's model field, kept until the model is known. A Buffer keeps up to a bound in memory and the
// rest in one temporary file in the spool's dedicated directory; Close frees it.
//
// The directory is the router's own: created 0700, refused when it is a link, not a directory, not
// owned by this user or open to others, and held open (an os.Root) so that every file is made in the
// directory that was checked, never through a link. A spool file is created with O_EXCL, mode 0600,
// named held-RANDOM.part, and unlinked at once: only its descriptor is kept (Linux keeps an unlinked
// file readable and writable while it is open), so a process that dies however it dies (SIGKILL
// included) leaves nothing, its disk freed by the kernel. What a crash can leave is a file between its
// create and its unlink; Open removes those: every regular file of the spool's name pattern, whose
// owner, if it still runs, holds its descriptor and loses nothing.
package spool

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// ErrUnsafeDir refuses a spool directory another user could read or replace.
var ErrUnsafeDir = errors.New("spool: the directory is a link, not a directory, not ours, or open to others")

// ErrClosed refuses a file created after Close, and reports a Buffer's file Close closed.
var ErrClosed = errors.New("spool: closed")

// DirName is the spool directory's name under os.TempDir when none is given.
const DirName = "anvil-spool"

const (
	namePrefix = "held-"
	nameSuffix = ".part"
	randBytes  = 8
)

// Dir is the spool directory. It knows its live files, so Close frees what a stuck holder did not.
type Dir struct {
	path string
	root *os.Root
	mu   sync.Mutex
	live map[*os.File]struct{}
	done bool
	// bytes is what the Buffers wrote to their spool files, less what those closed since.
	bytes atomic.Int64
}

// DefaultPath is the spool directory under os.TempDir (which follows $TMPDIR).
func DefaultPath() string { return filepath.Join(os.TempDir(), DirName) }

// Open prepares path as the spool directory (creating it 0700 if missing) and removes the stale
// files it holds. It returns the base names it removed; a failure to remove one is reported with
// them but does not stop the spool from opening.
func Open(path string) (*Dir, []string, error) {
	if err := os.Mkdir(path, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, nil, fmt.Errorf("spool: %w", err)
	}
	checked, err := os.Lstat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("spool: %w", err)
	}
	if err := checkDir(checked); err != nil {
		return nil, nil, err
	}
	root, err := os.OpenRoot(path)
	if err != nil {
		return nil, nil, fmt.Errorf("spool: %w", err)
	}
	// The directory opened is the one checked: not one swapped in for it since.
	if opened, err := root.Stat("."); err != nil || !os.SameFile(checked, opened) {
		_ = root.Close()
		return nil, nil, ErrUnsafeDir
	}
	d := &Dir{path: path, root: root, live: map[*os.File]struct{}{}}
	removed, err := d.sweep()
	return d, removed, err
}

// checkDir refuses a directory that is not this user's own: a link, another type, another owner, or
// group or other permissions.
func checkDir(fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 || fi.Mode().Perm()&0o077 != 0 || !ok || int(st.Uid) != os.Geteuid() {
		return ErrUnsafeDir
	}
	return nil
}

// Path is the spool directory.
func (d *Dir) Path() string { return d.path }

// sweep removes the stale files: regular files of exactly the spool's name pattern.
func (d *Dir) sweep() ([]string, error) {
	f, err := d.root.Open(".")
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	entries, err := f.ReadDir(-1)
	_ = f.Close()
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		if !spoolName(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		if err := d.root.Remove(e.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, e.Name())
	}
	return removed, errors.Join(errs...)
}

// spoolName reports whether name is a spool file's: held-HEX.part, HEX 16 lower hex digits; or, as
// the routers before unlink-at-create named them, held-PID-HEX.part, PID 1-7 digits (Linux's
// largest pid_max, 4194304, has 7).
func spoolName(name string) bool {
	rest, ok := strings.CutPrefix(name, namePrefix)
	if !ok {
		return false
	}
	if rest, ok = strings.CutSuffix(rest, nameSuffix); !ok {
		return false
	}
	if pid, hexPart, legacy := strings.Cut(rest, "-"); legacy {
		if len(pid) < 1 || len(pid) > 7 || pid[0] == '0' || strings.Trim(pid, "0123456789") != "" {
			return false
		}
		rest = hexPart
	}
	return len(rest) == 2*randBytes && strings.Trim(rest, "0123456789abcdef") == ""
}

// create opens a new spool file exclusively, readable by this user only, and unlinks it at once: the
// descriptor is all that is kept.
func (d *Dir) create() (*os.File, error) {
	var r [randBytes]byte
	_, _ = rand.Read(r[:]) // crypto/rand never fails on a supported platform
	name := namePrefix + hex.EncodeToString(r[:]) + nameSuffix
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return nil, ErrClosed
	}
	f, err := d.root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	// A sweep of another router sharing the directory may have unlinked it first: as good.
	if err := d.root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		_ = f.Close()
		return nil, fmt.Errorf("spool: %w", err)
	}
	d.live[f] = struct{}{}
	return f, nil
}

// release closes one spool file (its disk freed: it has no name).
func (d *Dir) release(f *os.File) error {
	d.mu.Lock()
	_, mine := d.live[f]
	delete(d.live, f)
	d.mu.Unlock()
	if !mine { // Close closed it already
		return nil
	}
	return f.Close()
}

// Bytes is what the open spool files hold now; 0 for a nil Dir (no spool).
func (d *Dir) Bytes() int64 {
	if d == nil {
		return 0
	}
	return d.bytes.Load()
}

// Live is the number of spool files open now.
func (d *Dir) Live() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.live)
}

// Close closes every spool file still open and refuses new ones: the last word of a shutdown, for
// holders that never got to close theirs. A Buffer whose file it closed reads and writes ErrClosed.
func (d *Dir) Close() error {
	d.mu.Lock()
	live, done := d.live, d.done
	d.live, d.done = map[*os.File]struct{}{}, true
	d.mu.Unlock()
	if done {
		return nil
	}
	var errs []error
	for f := range live {
		errs = append(errs, f.Close())
	}
	return errors.Join(append(errs, d.root.Close())...)
}
