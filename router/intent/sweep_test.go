package intent_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/intent"
)

// Sweep removes exactly the temporaries a killed save leaves (this store's pattern, regular files,
// in the file's own directory) and nothing that only looks like one.
func TestSweepRemovesOnlyStaleTemporaries(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "state")
	require.NoError(t, os.Mkdir(dir, 0o700))
	path := filepath.Join(dir, "intent.json")
	require.NoError(t, os.WriteFile(path, []byte(tierOnly), 0o600))
	stale := []string{".intent.json.tmp-1", ".intent.json.tmp-2941967296", ".intent.json.tmp-0042"}
	for _, n := range stale {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte(`{"tiers":`), 0o600))
	}
	survivors := []string{
		".intent.json.tmp-",            // no digits
		".intent.json.tmp-12345678901", // 11 digits: not os.CreateTemp's
		".intent.json.tmp-12a",         // not digits
		".intent.json.tmp-12.bak",      // a suffix
		"intent.json.tmp-12",           // not hidden
		".other.json.tmp-12",           // another file's
		".intent.json.tmp-someone-else",
		".intent.jsonx.tmp-12",
	}
	for _, n := range survivors {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("keep"), 0o600))
	}
	target := filepath.Join(root, "target")
	require.NoError(t, os.WriteFile(target, []byte("keep"), 0o600))
	require.NoError(t, os.Symlink(target, filepath.Join(dir, ".intent.json.tmp-7"))) // a link: kept, target too
	require.NoError(t, os.Mkdir(filepath.Join(dir, ".intent.json.tmp-8"), 0o700))    // a directory: kept
	require.NoError(t, os.WriteFile(filepath.Join(root, ".intent.json.tmp-9"), nil, 0o600))

	s, doc, err := intent.Load(intent.OS{}, path)
	require.NoError(t, err)
	removed, err := s.Sweep()
	require.NoError(t, err)
	assert.ElementsMatch(t, stale, removed)

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	assert.ElementsMatch(t, append(survivors, "intent.json", ".intent.json.tmp-7", ".intent.json.tmp-8"), left)
	_, err = os.Stat(target)
	assert.NoError(t, err, "a link's target is never touched")
	_, err = os.Stat(filepath.Join(root, ".intent.json.tmp-9"))
	assert.NoError(t, err, "another directory is never swept")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, tierOnly, string(b), "the intent file itself is untouched")
	assert.Equal(t, tiers("replicas", "maintenance"), doc)

	removed, err = s.Sweep()
	require.NoError(t, err)
	assert.Empty(t, removed, "a second sweep finds nothing")
}

// A save's own temporary file, left by a kill between create and rename, is of the pattern Sweep
// removes: the pattern is the one Save uses.
func TestSweepMatchesWhatSaveCreates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "intent.json")
	keeping := &keepTemp{armed: true}
	s, _, err := intent.Load(keeping, path)
	require.NoError(t, err)
	require.Error(t, s.Save(constant(tiers("a", "b"))), "the rename is refused: the temporary stays, as after a SIGKILL")
	keeping.armed = false
	require.NotEmpty(t, keeping.temp)
	_, err = os.Stat(keeping.temp)
	require.NoError(t, err)
	removed, err := s.Sweep()
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Base(keeping.temp)}, removed)
}

// keepTemp refuses the rename and, while armed, the removal of the temporary file, leaving it as a
// kill between create and rename would.
type keepTemp struct {
	intent.OS
	temp  string
	armed bool
}

func (k *keepTemp) Rename(oldpath, _ string) error {
	k.temp = oldpath
	return os.ErrPermission
}

func (k *keepTemp) Remove(name string) error {
	if k.armed {
		return os.ErrPermission
	}
	return k.OS.Remove(name)
}
