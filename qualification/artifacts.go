package qualification

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Manifest file and format.
const (
	ManifestName   = "manifest.json"
	ManifestFormat = "anvil-qualify-manifest/1"
	dirMode        = 0o750
	fileMode       = 0o640
	// maxArtifactBytes bounds one file when a manifest is verified.
	maxArtifactBytes = 1 << 30
)

// ErrManifest is wrapped by every failure of Verify.
var ErrManifest = errors.New("manifest does not match the run directory")

// Manifest lists every file of a run directory (but itself) with its SHA-256, sorted by path.
type Manifest struct {
	Format        string         `json:"format"`
	Qualification string         `json:"qualification"`
	Fingerprint   string         `json:"plan_fingerprint"`
	Evidence      string         `json:"evidence"`
	Verdict       string         `json:"verdict"`
	Files         []ManifestFile `json:"files"`
}

// ManifestFile is one file of a run directory.
type ManifestFile struct {
	Path   string `json:"path"` // slash-separated, relative to the run directory
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// runDir is one run's artifact directory. Every file is written atomically: a temporary file in
// the same directory, synced, then renamed over its name, so a reader (or a crash) sees the old
// file or the whole new one, never a part.
type runDir struct {
	path string
}

// newRunDir creates <output>/<name>-<UTC time>; it refuses an existing directory.
func newRunDir(output, name string, now time.Time) (*runDir, error) {
	if err := os.MkdirAll(output, dirMode); err != nil {
		return nil, fmt.Errorf("qualification: cannot create the output directory: %w", err)
	}
	path := filepath.Join(output, name+"-"+now.UTC().Format("20060102T150405Z"))
	if err := os.Mkdir(path, dirMode); err != nil {
		return nil, fmt.Errorf("qualification: cannot create the run directory: %w", err)
	}
	return &runDir{path: path}, nil
}

// write stores data at rel (slash-separated) atomically.
func (d *runDir) write(rel string, data []byte) error {
	return d.writeFunc(rel, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeJSON stores v as indented JSON with a final newline.
func (d *runDir) writeJSON(rel string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("qualification: encode %s: %w", rel, err)
	}
	return d.write(rel, append(b, '\n'))
}

// writeFunc stores what fill writes at rel atomically.
func (d *runDir) writeFunc(rel string, fill func(io.Writer) error) (err error) {
	full := filepath.Join(d.path, filepath.FromSlash(rel))
	dir := filepath.Dir(full)
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("qualification: write %s: %w", rel, err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("qualification: write %s: %w", rel, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := fill(tmp); err != nil {
		return fmt.Errorf("qualification: write %s: %w", rel, err)
	}
	if err := tmp.Chmod(fileMode); err != nil {
		return fmt.Errorf("qualification: write %s: %w", rel, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("qualification: write %s: %w", rel, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("qualification: write %s: %w", rel, err)
	}
	if err := os.Rename(tmp.Name(), full); err != nil {
		return fmt.Errorf("qualification: write %s: %w", rel, err)
	}
	return nil
}

// manifest hashes every regular file under the directory (but the manifest), as it is on disk.
func (d *runDir) manifest(m Manifest) (Manifest, error) {
	m.Format = ManifestFormat
	files, err := listFiles(d.path)
	if err != nil {
		return Manifest{}, err
	}
	m.Files = m.Files[:0]
	for _, rel := range files {
		if rel == ManifestName {
			continue
		}
		mf, err := hashFile(d.path, rel)
		if err != nil {
			return Manifest{}, err
		}
		m.Files = append(m.Files, mf)
	}
	return m, nil
}

// seal writes the manifest last and syncs the directory, so the renames before it are durable.
func (d *runDir) seal(m Manifest) (Manifest, error) {
	m, err := d.manifest(m)
	if err != nil {
		return Manifest{}, err
	}
	if err := d.writeJSON(ManifestName, m); err != nil {
		return Manifest{}, err
	}
	if dir, err := os.Open(d.path); err == nil {
		_ = dir.Sync() // best effort: not every file system syncs directories
		_ = dir.Close()
	}
	return m, nil
}

// listFiles returns every regular file under root, slash-separated and sorted. Symbolic links and
// other special files make the directory unverifiable.
func listFiles(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if !e.Type().IsRegular() {
			return fmt.Errorf("%w: %s is not a regular file", ErrManifest, filepath.ToSlash(rel))
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

func hashFile(root, rel string) (ManifestFile, error) {
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return ManifestFile{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, maxArtifactBytes+1))
	if err != nil {
		return ManifestFile{}, err
	}
	if n > maxArtifactBytes {
		return ManifestFile{}, fmt.Errorf("%w: %s is larger than %d bytes", ErrManifest, rel, maxArtifactBytes)
	}
	return ManifestFile{Path: rel, Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// Verify reads dir's manifest strictly and checks that the directory holds exactly the files it
// lists (but the manifest itself), each with the listed size and SHA-256. It returns the manifest.
func Verify(dir string) (Manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		return Manifest{}, fmt.Errorf("%w: cannot read %s", ErrManifest, ManifestName)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil || dec.More() || m.Format != ManifestFormat {
		return Manifest{}, fmt.Errorf("%w: %s is not a manifest", ErrManifest, ManifestName)
	}
	files, err := listFiles(dir)
	if err != nil {
		return Manifest{}, err
	}
	files = slices.DeleteFunc(files, func(f string) bool { return f == ManifestName })
	listed := make([]string, 0, len(m.Files))
	for _, f := range m.Files {
		listed = append(listed, f.Path)
	}
	if !slices.IsSorted(listed) || !slices.Equal(listed, slices.Compact(slices.Clone(listed))) {
		return Manifest{}, fmt.Errorf("%w: its files are not sorted and unique", ErrManifest)
	}
	if missing, extra := diff(listed, files); len(missing)+len(extra) > 0 {
		return Manifest{}, fmt.Errorf("%w: missing %s; not listed %s", ErrManifest, orNone(missing), orNone(extra))
	}
	for _, want := range m.Files {
		got, err := hashFile(dir, want.Path)
		if err != nil {
			return Manifest{}, err
		}
		if got != want {
			return Manifest{}, fmt.Errorf("%w: %s differs from its manifest entry", ErrManifest, want.Path)
		}
	}
	return m, nil
}

// diff returns the sorted lists' differences: in want only, in got only.
func diff(want, got []string) (missing, extra []string) {
	for _, w := range want {
		if _, ok := slices.BinarySearch(got, w); !ok {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if _, ok := slices.BinarySearch(want, g); !ok {
			extra = append(extra, g)
		}
	}
	return missing, extra
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}
