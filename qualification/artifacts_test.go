package qualification

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sealedDir(t *testing.T) *runDir {
	t.Helper()
	d, err := newRunDir(t.TempDir(), "q", time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	assert.Equal(t, "q-20250601T120000Z", filepath.Base(d.path))
	require.NoError(t, d.write("plan.json", []byte("{}\n")))
	require.NoError(t, d.writeJSON("phases/0-preflight.json", map[string]int{"a": 1}))
	require.NoError(t, d.write("raw/baseline.jsonl", []byte("x\n")))
	_, err = d.seal(Manifest{Qualification: "q", Evidence: EvidenceSynthetic, Verdict: VerdictPass})
	require.NoError(t, err)
	return d
}

func TestManifestVerifies(t *testing.T) {
	d := sealedDir(t)
	m, err := Verify(d.path)
	require.NoError(t, err)
	var paths []string
	for _, f := range m.Files {
		paths = append(paths, f.Path)
	}
	assert.Equal(t, []string{"phases/0-preflight.json", "plan.json", "raw/baseline.jsonl"}, paths)
	assert.Equal(t, "ca3d163bab055381827226140568f3bef7eaac187cebd76878e0b63e9e442356", m.Files[1].SHA256, "sha256 of {}\\n")
	assert.Equal(t, int64(3), m.Files[1].Bytes)
	entries, err := os.ReadDir(d.path)
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotContains(t, e.Name(), ".tmp-", "no temporary file is left behind")
	}
	info, err := os.Stat(filepath.Join(d.path, "plan.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(fileMode), info.Mode().Perm())
	// A second run in the same second never overwrites the first.
	_, err = newRunDir(filepath.Dir(d.path), "q", time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	assert.Error(t, err)
}

func TestVerifyRefusesAChangedDirectory(t *testing.T) {
	cases := map[string]func(t *testing.T, dir string){
		"edited file": func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "plan.json"), []byte("{ }\n"), 0o600))
		},
		"added file": func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "raw", "extra.jsonl"), nil, 0o600))
		},
		"removed file": func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "raw", "baseline.jsonl")))
		},
		"symbolic link": func(t *testing.T, dir string) {
			require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "link")))
		},
		"manifest not JSON": func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, ManifestName), []byte("nope"), 0o600))
		},
		"manifest with unknown keys": func(t *testing.T, dir string) {
			rewrite(t, dir, func(m map[string]any) { m["extra"] = 1 })
		},
		"manifest out of order": func(t *testing.T, dir string) {
			rewrite(t, dir, func(m map[string]any) {
				fs := m["files"].([]any)
				fs[0], fs[1] = fs[1], fs[0]
			})
		},
		"manifest naming a file outside": func(t *testing.T, dir string) {
			rewrite(t, dir, func(m map[string]any) {
				m["files"] = append(m["files"].([]any), map[string]any{"path": "../../etc/passwd", "bytes": 1, "sha256": "00"})
			})
		},
		"manifest missing": func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, ManifestName)))
		},
	}
	for name, change := range cases {
		t.Run(name, func(t *testing.T) {
			d := sealedDir(t)
			change(t, d.path)
			_, err := Verify(d.path)
			assert.ErrorIs(t, err, ErrManifest)
		})
	}
}

func rewrite(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ManifestName))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	edit(m)
	data, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, ManifestName), data, 0o600))
}
