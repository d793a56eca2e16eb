package image

import (
	"archive/tar"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repoRoot is the root module's directory, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(mod), "module github.com/anvil-llm/anvil\n"), "not the root module")
	return root
}

// TestMakeImage is the acceptance test of `make image`: with no Docker daemon and no registry it
// writes an OCI layout and a docker-loadable tarball; reading both back with go-containerregistry
// gives the promised user, entrypoint, labels and files, and the binary extracted from the image
// prints the version and revision its labels carry.
func TestMakeImage(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the image's binary is linux/" + runtime.GOARCH + "; running it needs Linux")
	}
	root := repoRoot(t)
	out := t.TempDir()
	const version, revision = "9.8.7-test", "0123456789abcdef0123456789abcdef01234567"
	cmd := exec.Command("make", "--no-print-directory", "-C", root, "image", "IMAGE_DIR="+out,
		"VERSION="+version, "REVISION="+revision, "SOURCE_DATE_EPOCH=1700000000")
	cmd.Env = withoutMake(os.Environ())
	logs, err := cmd.CombinedOutput()
	require.NoError(t, err, string(logs))
	assert.Contains(t, string(logs), "anvil-router:"+version+" linux/"+runtime.GOARCH+" sha256:")

	// The OCI layout: one image, tagged by version, for this platform.
	idx, err := layout.ImageIndexFromPath(filepath.Join(out, "oci"))
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 1)
	desc := im.Manifests[0]
	assert.Equal(t, version, desc.Annotations["org.opencontainers.image.ref.name"])
	require.NotNil(t, desc.Platform)
	assert.Equal(t, v1.Platform{OS: "linux", Architecture: runtime.GOARCH}, *desc.Platform)
	fromLayout, err := idx.Image(desc.Digest)
	require.NoError(t, err)

	// The tarball: docker save's format, tagged anvil-router:VERSION, the same config and layer.
	fromTar, err := tarball.ImageFromPath(filepath.Join(out, "anvil-router.tar"), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"anvil-router:" + version}, repoTags(t, filepath.Join(out, "anvil-router.tar")))
	for _, img := range []v1.Image{fromLayout, fromTar} {
		checkImage(t, img, version, revision)
	}
	cfgLayout, err := fromLayout.ConfigName()
	require.NoError(t, err)
	cfgTar, err := fromTar.ConfigName()
	require.NoError(t, err)
	assert.Equal(t, cfgLayout, cfgTar, "layout and tarball hold the same image config")

	// The binary from the image runs and reports what the labels say.
	files := readFiles(t, fromLayout)
	bin := filepath.Join(t.TempDir(), "anvil-router")
	require.NoError(t, os.WriteFile(bin, files[BinaryPath].data, 0o755))
	plain, err := exec.Command(bin, "version").Output()
	require.NoError(t, err)
	assert.Equal(t, "anvil-router "+version+" (revision "+revision+")\n", string(plain))
	raw, err := exec.Command(bin, "version", "--json").Output()
	require.NoError(t, err)
	var got map[string]string
	require.NoError(t, json.Unmarshal(raw, &got))
	cf, err := fromLayout.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"version":  cf.Config.Labels[LabelVersion],
		"revision": cf.Config.Labels[LabelRevision],
	}, got)
}

// checkImage verifies one image read back from the build outputs.
func checkImage(t *testing.T, img v1.Image, version, revision string) {
	t.Helper()
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "65532:65532", cf.Config.User)
	assert.Equal(t, []string{"/usr/local/bin/anvil-router"}, cf.Config.Entrypoint)
	assert.Equal(t, Cmd(), cf.Config.Cmd)
	assert.Equal(t, Labels(version, revision), cf.Config.Labels)
	assert.Equal(t, "2023-11-14T22:13:20Z", cf.Created.UTC().Format("2006-01-02T15:04:05Z"))

	files := readFiles(t, img)
	var names []string
	for name := range files {
		names = append(names, name)
	}
	assert.ElementsMatch(t, []string{"/etc", "/etc/passwd", "/etc/group", "/etc/ssl", "/etc/ssl/certs",
		"/etc/ssl/certs/ca-certificates.crt", "/usr", "/usr/local", "/usr/local/bin",
		"/usr/local/bin/anvil-router", "/var", "/var/lib", "/var/lib/anvil"}, names, "the binary, CA certificates, the user, the state dir: nothing else")
	assert.Equal(t, int64(0o755), files[BinaryPath].mode)
	assert.Equal(t, file{mode: 0o700, uid: UID, gid: GID, dir: true, data: []byte{}}, files[StateDir])
	assert.NoError(t, CheckCABundle(files[CABundlePath].data))
	ef, err := elf.NewFile(strings.NewReader(string(files[BinaryPath].data)))
	require.NoError(t, err)
	for _, p := range ef.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "the binary must be static")
	}
}

// repoTags reads the RepoTags of the tarball's manifest.json, which is what `docker load` tags by.
func repoTags(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatal("the tarball has no manifest.json")
		}
		require.NoError(t, err)
		if h.Name != "manifest.json" {
			continue
		}
		var m []struct{ RepoTags []string }
		require.NoError(t, json.NewDecoder(tr).Decode(&m))
		require.Len(t, m, 1)
		return m[0].RepoTags
	}
}

// withoutMake drops the variables a parent make passes down, so the child make sees only the
// command line this test gives it.
func withoutMake(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "GOFLAGS":
			continue
		}
		out = append(out, kv)
	}
	return out
}
