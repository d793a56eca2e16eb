// Package spool holds bytes the router cannot send on yet: an audio file part that arrived before the
// form's model field, kept until the model is known. A Buffer keeps up to a bound in memory and the
// rest in one temporary file in the spool's dedicated directory; Close removes the file.
//
// The directory is the router's own: created 0700, refused when it is a link, not a directory, not
// owned by this user or open to others. Files are created with O_EXCL and O_NOFOLLOW, mode 0600,
// named held-PID-RANDOM.part, so that Open can recognise, at start, the files a process that died
// without closing them left behind (a SIGKILL, a crash past every defer), and remove them: those of
// this process's PID (a restarted container's router has the same PID) and of PIDs that no longer
// run; a live PID is another router's, its files are left alone.
package spool

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// ErrUnsafeDir refuses a spool directory another user could read or replace.
var ErrUnsafeDir = errors.New("spool: the directory is a link, not a directory, not ours, or open to others")

// ErrClosed refuses a file created after Close.
var ErrClosed = errors.New("spool: closed")

// DirName is the spool directory's name under os.TempDir when none is given.
const DirName = "anvil-spool"

const (
	namePrefix = "held-"
	nameSuffix = ".part"
	randBytes  = 8
)

// Dir is the spool directory. It knows its live files, so Close removes what a stuck holder did not.
type Dir struct {
	path string
	pid  int
	mu   sync.Mutex
	live map[string]*os.File
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
	if err := checkDir(path); err != nil {
		return nil, nil, err
	}
	d := &Dir{path: path, pid: os.Getpid(), live: map[string]*os.File{}}
	removed, err := d.sweep()
	return d, removed, err
}

// checkDir refuses a directory that is not this user's own: a link, another type, another owner, or
// group or other permissions.
func checkDir(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 || fi.Mode().Perm()&0o077 != 0 || !ok || int(st.Uid) != os.Geteuid() {
		return ErrUnsafeDir
	}
	return nil
}

// Path is the spool directory.
func (d *Dir) Path() string { return d.path }

// sweep removes the stale files: regular files of exactly the spool's name pattern whose PID is this
// process's (it has created none yet) or a process that no longer runs.
func (d *Dir) sweep() ([]string, error) {
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	var removed []string
	var first error
	for _, e := range entries {
		pid, ok := parseName(e.Name())
		if !ok || !e.Type().IsRegular() || (pid != d.pid && alive(pid)) {
			continue
		}
		if err := os.Remove(filepath.Join(d.path, e.Name())); err != nil {
			first = cmpOr(first, err)
			continue
		}
		removed = append(removed, e.Name())
	}
	return removed, first
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// parseName reads the PID of a spool file's name: held-PID-HEX.part, PID 1-10 digits, HEX 16 lower
// hex digits.
func parseName(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, namePrefix)
	if !ok {
		return 0, false
	}
	if rest, ok = strings.CutSuffix(rest, nameSuffix); !ok {
		return 0, false
	}
	digits, hexPart, ok := strings.Cut(rest, "-")
	if !ok || len(digits) < 1 || len(digits) > 10 || len(hexPart) != 2*randBytes {
		return 0, false
	}
	for _, c := range []byte(hexPart) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return 0, false
		}
	}
	pid, err := strconv.Atoi(digits)
	if err != nil || pid <= 0 || strconv.Itoa(pid) != digits {
		return 0, false
	}
	return pid, true
}

// alive reports whether a process with this PID runs (signal 0 is only a permission check; EPERM is
// a process of another user, alive).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// create opens a new spool file exclusively, never through a link, readable by this user only.
func (d *Dir) create() (*os.File, error) {
	var r [randBytes]byte
	_, _ = rand.Read(r[:]) // crypto/rand never fails on a supported platform
	name := filepath.Join(d.path, namePrefix+strconv.Itoa(d.pid)+"-"+hex.EncodeToString(r[:])+nameSuffix)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return nil, ErrClosed
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	d.live[name] = f
	return f, nil
}

// release closes and removes one spool file.
func (d *Dir) release(f *os.File) error {
	d.mu.Lock()
	_, mine := d.live[f.Name()]
	delete(d.live, f.Name())
	d.mu.Unlock()
	if !mine { // Close removed it already
		return nil
	}
	return errors.Join(f.Close(), os.Remove(f.Name()))
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

// Close removes every spool file still open and refuses new ones: the last word of a shutdown, for
// holders that never got to close theirs. A Buffer whose file it removed reads an error.
func (d *Dir) Close() error {
	d.mu.Lock()
	live := d.live
	d.live, d.done = map[string]*os.File{}, true
	d.mu.Unlock()
	var errs []error
	for name, f := range live {
		errs = append(errs, f.Close(), os.Remove(name))
	}
	return errors.Join(errs...)
}
