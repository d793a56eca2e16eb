package intent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/anvil-llm/anvil/router/ident"
)

// FS is the file system a Store works on: the operating system's (OS) in the server, memory in the
// simulator, a failing one in tests.
type FS interface {
	// Open opens a file for reading; a missing file is an error matching fs.ErrNotExist, and what
	// is not a regular file is refused (ErrIsDirectory, ErrNotRegular, ErrSymlink).
	Open(name string) (io.ReadCloser, error)
	// CreateTemp creates a new file in dir exclusively, as os.CreateTemp does.
	CreateTemp(dir, pattern string) (File, error)
	// Rename replaces newpath by oldpath atomically.
	Rename(oldpath, newpath string) error
	// Remove removes one file.
	Remove(name string) error
	// SyncDir makes the directory's entries (a rename) durable.
	SyncDir(dir string) error
}

// File is a temporary file being written.
type File interface {
	io.Writer
	Name() string
	Sync() error
	Close() error
}

// OS is the operating system's file system.
type OS struct{}

// CreateTemp implements FS.
func (OS) CreateTemp(dir, pattern string) (File, error) { return os.CreateTemp(dir, pattern) }

// Rename implements FS.
func (OS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

// Remove implements FS.
func (OS) Remove(name string) error { return os.Remove(name) }

// SyncDir implements FS.
func (OS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// ErrWrite is wrapped by every failure to save the intent file. The previous file is intact.
var ErrWrite = errors.New("intent file not saved")

// ErrRead is wrapped by a failure to read the intent file that neither its absence nor what is at
// its path explains (an I/O error): a runtime failure, not the operator's input.
var ErrRead = errors.New("intent file unreadable")

// Store owns one intent file. Load reads it once; Check proves its directory writable; Save
// replaces it. Saves are serialized by the Store's own lock, which is never held together with an
// admission lock by this package: Save's build function reads admission snapshots, which take and
// release tier locks inside.
type Store struct {
	fs   FS
	path string
	mu   sync.Mutex // serializes Save and Check
}

// Load reads the intent file at path once, with the 1 MiB + 1 byte bound, and decodes it strictly.
// A missing file is an empty document. Errors name the file and a fixed problem: ErrInvalid for the
// content, ErrUnusable (with its problem) for what is at the path, ErrRead for an I/O error.
func Load(fsys FS, path string) (*Store, Document, error) {
	s := &Store{fs: fsys, path: path}
	f, err := fsys.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, Document{}, nil
	}
	if err != nil {
		return nil, Document{}, fmt.Errorf("intent file %s: %w", path, openProblem(err))
	}
	data, err := io.ReadAll(io.LimitReader(f, ident.MaxDocumentBytes+1))
	_ = f.Close()
	if err != nil {
		return nil, Document{}, fmt.Errorf("intent file %s: %w", path, ErrRead)
	}
	doc, err := Decode(data)
	if err != nil {
		return nil, Document{}, fmt.Errorf("intent file %s: %w", path, err)
	}
	return s, doc, nil
}

// Path returns the file's path.
func (s *Store) Path() string { return s.path }

// Check proves the file's directory takes a new file: it creates, syncs and removes an exclusive
// temporary file there, leaving the intent file itself untouched. A directory that is missing or
// takes no file is ErrUnusable (ErrNoDirectory, ErrDirNotWritable); other failures are ErrWrite.
func (s *Store) Check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.fs.CreateTemp(filepath.Dir(s.path), s.tempPattern())
	if err != nil {
		if p := createProblem(err); p != nil {
			return fmt.Errorf("intent file %s: %w", s.path, p)
		}
		return s.writeError("cannot create a file in its directory")
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if rerr := s.fs.Remove(f.Name()); err == nil {
		err = rerr
	}
	if err != nil {
		return s.writeError("cannot sync a file in its directory")
	}
	return nil
}

// Save replaces the file with the document build returns. build runs under the Store's lock, so
// when two transitions save at once, the later save reads the later state: the file never ends
// older than admission. On failure the previous file is intact and only this save's temporary file
// is removed.
func (s *Store) Save(build func() Document) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replace(Encode(build()))
}

func (s *Store) replace(data []byte) error {
	dir := filepath.Dir(s.path)
	f, err := s.fs.CreateTemp(dir, s.tempPattern())
	if err != nil {
		return s.writeError("cannot create the temporary file")
	}
	tmp := f.Name()
	if n, err := f.Write(data); err != nil || n != len(data) {
		return s.abandon(f, tmp, "cannot write the temporary file")
	}
	if err := f.Sync(); err != nil {
		return s.abandon(f, tmp, "cannot sync the temporary file")
	}
	if err := f.Close(); err != nil {
		_ = s.fs.Remove(tmp)
		return s.writeError("cannot close the temporary file")
	}
	if err := s.fs.Rename(tmp, s.path); err != nil {
		_ = s.fs.Remove(tmp)
		return s.writeError("cannot rename the temporary file over the intent file")
	}
	if err := s.fs.SyncDir(dir); err != nil {
		return s.writeError("replaced, but the directory could not be synced")
	}
	return nil
}

// abandon closes and removes this save's own temporary file.
func (s *Store) abandon(f File, tmp, what string) error {
	_ = f.Close()
	_ = s.fs.Remove(tmp)
	return s.writeError(what)
}

func (s *Store) writeError(what string) error {
	return fmt.Errorf("intent file %s: %w: %s", s.path, ErrWrite, what)
}

// tempPattern names temporary files after the intent file, hidden, so an operator listing the
// directory sees whose they are.
func (s *Store) tempPattern() string { return "." + filepath.Base(s.path) + ".tmp-*" }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
