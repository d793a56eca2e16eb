package intent_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/intent"
)

func tiers(kv ...string) intent.Document {
	d := intent.Document{Tiers: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Tiers[kv[i]] = kv[i+1]
	}
	return d
}

func constant(d intent.Document) func() intent.Document { return func() intent.Document { return d } }

func TestLoadMissingFileIsEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "intent.json")
	s, doc, err := intent.Load(intent.OS{}, path)
	require.NoError(t, err)
	assert.True(t, doc.Empty())
	assert.Equal(t, path, s.Path())
	_, err = os.Stat(path)
	assert.ErrorIs(t, err, os.ErrNotExist, "loading creates nothing")
}

func TestSaveThenLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "intent.json")
	s, _, err := intent.Load(intent.OS{}, path)
	require.NoError(t, err)
	require.NoError(t, s.Check())
	require.NoError(t, s.Save(constant(tiers("replicas", "maintenance"))))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, tierOnly, string(b))
	_, doc, err := intent.Load(intent.OS{}, path)
	require.NoError(t, err)
	assert.Equal(t, tiers("replicas", "maintenance"), doc)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file is left behind")
}

func TestLoadRefusalsNameTheFileAndLeaveItAlone(t *testing.T) {
	cases := map[string]string{
		"malformed":  `{"tiers":`,
		"duplicate":  `{"tiers":{"a":"x","a":"x"}}`,
		"wrong type": `{"tiers":{"a":7}}`,
		"oversized":  `{"tiers":{}}` + strings.Repeat("\n", ident.MaxDocumentBytes),
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "intent.json")
			require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
			_, _, err := intent.Load(intent.OS{}, path)
			require.Error(t, err)
			assert.ErrorIs(t, err, intent.ErrInvalid)
			assert.Contains(t, err.Error(), "intent file "+path+": invalid intent document: ")
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, content, string(b), "a refused file stays byte-identical")
		})
	}
	t.Run("a directory", func(t *testing.T) {
		_, _, err := intent.Load(intent.OS{}, t.TempDir())
		assert.ErrorIs(t, err, intent.ErrIsDirectory)
	})
}

// failing wraps the real file system and fails one step of a save.
type failing struct {
	intent.OS
	step  string // create, write, sync, close, rename, syncdir
	temps []string
}

func (f *failing) CreateTemp(dir, pattern string) (intent.File, error) {
	if f.step == "create" {
		return nil, errors.New("injected")
	}
	file, err := f.OS.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	f.temps = append(f.temps, file.Name())
	return &failingFile{File: file, step: f.step}, nil
}

func (f *failing) Rename(oldpath, newpath string) error {
	if f.step == "rename" {
		return errors.New("injected")
	}
	return f.OS.Rename(oldpath, newpath)
}

func (f *failing) SyncDir(dir string) error {
	if f.step == "syncdir" {
		return errors.New("injected")
	}
	return f.OS.SyncDir(dir)
}

type failingFile struct {
	intent.File
	step string
}

func (f *failingFile) Write(p []byte) (int, error) {
	if f.step == "write" {
		n, _ := f.File.Write(p[:len(p)/2]) // a short write, as a full disk makes
		return n, io.ErrShortWrite
	}
	return f.File.Write(p)
}

func (f *failingFile) Sync() error {
	if f.step == "sync" {
		return errors.New("injected")
	}
	return f.File.Sync()
}

func (f *failingFile) Close() error {
	err := f.File.Close()
	if f.step == "close" {
		return errors.New("injected")
	}
	return err
}

// A save that fails at any step reports ErrWrite, leaves the previous file byte-identical (except
// after the rename, when the new file is in place and only its durability is in doubt) and removes
// its own temporary file, never another file in the directory.
func TestFailedSaveLeavesThePreviousFile(t *testing.T) {
	for _, step := range []string{"create", "write", "sync", "close", "rename", "syncdir"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "intent.json")
			require.NoError(t, os.WriteFile(path, []byte(tierOnly), 0o600))
			stranger := filepath.Join(dir, ".intent.json.tmp-someone-else")
			require.NoError(t, os.WriteFile(stranger, []byte("not ours"), 0o600))

			fsys := &failing{step: step}
			s, _, err := intent.Load(fsys, path)
			require.NoError(t, err)
			err = s.Save(constant(tiers("replicas", "maintenance", "other", "x")))
			require.Error(t, err)
			assert.ErrorIs(t, err, intent.ErrWrite)
			assert.Contains(t, err.Error(), "intent file "+path)

			b, err := os.ReadFile(path)
			require.NoError(t, err)
			if step == "syncdir" {
				assert.Contains(t, string(b), `"other": "x"`, "the rename happened; only the directory sync failed")
			} else {
				assert.Equal(t, tierOnly, string(b), "the previous file is intact")
			}
			for _, tmp := range fsys.temps {
				_, err := os.Stat(tmp)
				assert.ErrorIs(t, err, os.ErrNotExist, "the save removed its own temporary file")
			}
			b, err = os.ReadFile(stranger)
			require.NoError(t, err)
			assert.Equal(t, "not ours", string(b), "another temporary file is never touched")
		})
	}
}

func TestCheckFailsWhenTheDirectoryTakesNoFile(t *testing.T) {
	s, _, err := intent.Load(&failing{step: "create"}, filepath.Join(t.TempDir(), "intent.json"))
	require.NoError(t, err)
	assert.ErrorIs(t, s.Check(), intent.ErrWrite)
	s, _, err = intent.Load(&failing{step: "sync"}, filepath.Join(t.TempDir(), "intent.json"))
	require.NoError(t, err)
	assert.ErrorIs(t, s.Check(), intent.ErrWrite)
}

// Concurrent saves are serialized: each build runs alone under the store's lock, so the file ends
// holding the last build's state whatever order the callers arrive in.
func TestSavesAreSerialized(t *testing.T) {
	path := filepath.Join(t.TempDir(), "intent.json")
	s, _, err := intent.Load(intent.OS{}, path)
	require.NoError(t, err)
	var mu sync.Mutex
	inside, maxInside, calls := 0, 0, 0
	build := func() intent.Document {
		mu.Lock()
		inside++
		maxInside = max(maxInside, inside)
		calls++
		n := calls
		mu.Unlock()
		defer func() { mu.Lock(); inside--; mu.Unlock() }()
		return tiers("t", "r"+strings.Repeat("x", n))
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			<-start
			assert.NoError(t, s.Save(build))
		})
	}
	close(start)
	wg.Wait()
	assert.Equal(t, 1, maxInside, "no two builds ran at once")
	_, doc, err := intent.Load(intent.OS{}, path)
	require.NoError(t, err)
	assert.Equal(t, "r"+strings.Repeat("x", 8), doc.Tiers["t"], "the last build's state is the file's")
}
