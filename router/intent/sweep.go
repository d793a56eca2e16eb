package intent

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// dirReader is the optional FS method Sweep needs. An FS without it (the simulator's) leaves no
// temporaries behind to sweep.
type dirReader interface {
	// ReadDir lists dir as os.ReadDir does: entries with their types, links not followed.
	ReadDir(dir string) ([]fs.DirEntry, error)
}

// ReadDir implements dirReader.
func (OS) ReadDir(dir string) ([]fs.DirEntry, error) { return os.ReadDir(dir) }

// Sweep removes the temporary files an interrupted save (a SIGKILL between create and rename) left
// in the intent file's directory: only names of exactly this store's pattern (".NAME.tmp-" and the
// 1-10 decimal digits os.CreateTemp puts for the "*"), only regular files (never a link or a
// directory), only in that directory. It returns the base names it removed, sorted, and the first
// failure to list the directory or remove one of them; the start-up goes on either way (Check
// decides whether the directory is usable).
func (s *Store) Sweep() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lister, ok := s.fs.(dirReader)
	if !ok {
		return nil, nil
	}
	dir := filepath.Dir(s.path)
	entries, err := lister.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	var first error
	for _, e := range entries {
		if !s.isTemp(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		if err := s.fs.Remove(filepath.Join(dir, e.Name())); err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		removed = append(removed, e.Name())
	}
	return removed, first
}

// isTemp reports whether name is one of this store's temporary files.
func (s *Store) isTemp(name string) bool {
	prefix := strings.TrimSuffix(s.tempPattern(), "*")
	digits, ok := strings.CutPrefix(name, prefix)
	if !ok || len(digits) < 1 || len(digits) > 10 {
		return false
	}
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
