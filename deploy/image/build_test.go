package image

import (
	"archive/tar"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// file is one entry of an image's filesystem as read back.
type file struct {
	mode     int64
	uid, gid int
	dir      bool
	data     []byte
}

// readFiles flattens an image's layers and returns every entry by absolute path.
func readFiles(t testing.TB, img v1.Image) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	out := map[string]file{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		name := "/" + filepath.Clean(h.Name)
		out[name] = file{mode: h.Mode, uid: h.Uid, gid: h.Gid, dir: h.Typeflag == tar.TypeDir, data: data}
	}
}

func TestBuildContentsAndConfig(t *testing.T) {
	in := testInputs(t)
	img, err := Build(in)
	require.NoError(t, err)

	mt, err := img.MediaType()
	require.NoError(t, err)
	assert.Equal(t, types.OCIManifestSchema1, mt)
	layers, err := img.Layers()
	require.NoError(t, err)
	assert.Len(t, layers, 1, "an empty base plus exactly one layer")

	cf, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "linux", cf.OS)
	assert.Equal(t, "amd64", cf.Architecture)
	assert.Equal(t, in.Created.UTC(), cf.Created.UTC())
	assert.Equal(t, "65532:65532", cf.Config.User)
	assert.Equal(t, []string{"/usr/local/bin/anvil-router"}, cf.Config.Entrypoint)
	assert.Equal(t, []string{"serve", "--config", "/etc/anvil/config/router.yaml"}, cf.Config.Cmd)
	assert.Equal(t, map[string]struct{}{"8080/tcp": {}}, cf.Config.ExposedPorts)
	assert.Empty(t, cf.Config.Env, "no environment: the binary needs none")
	assert.Equal(t, map[string]string{
		"org.opencontainers.image.title":       "anvil-router",
		"org.opencontainers.image.description": Description,
		"org.opencontainers.image.source":      "https://github.com/anvil-llm/anvil",
		"org.opencontainers.image.version":     "1.2.3",
		"org.opencontainers.image.revision":    "0123abcd",
	}, cf.Config.Labels)

	files := readFiles(t, img)
	want := map[string]file{}
	for _, e := range entries(in) {
		want[e.name] = file{mode: e.mode, uid: e.uid, gid: e.gid, dir: e.data == nil, data: e.data}
	}
	for name, f := range want {
		if f.data == nil {
			f.data = []byte{}
		}
		want[name] = f
	}
	assert.Equal(t, want, files)
	for _, shell := range []string{"/bin/sh", "/bin/bash", "/bin/busybox", "/usr/bin/env"} {
		assert.NotContains(t, files, shell)
	}
	assert.Equal(t, in.Binary, files["/usr/local/bin/anvil-router"].data)
	assert.Contains(t, string(files["/etc/passwd"].data), "nonroot:x:65532:65532:")
}

func TestBuildIsReproducible(t *testing.T) {
	in := testInputs(t)
	digest := func(in Inputs) v1.Hash {
		img, err := Build(in)
		require.NoError(t, err)
		d, err := img.Digest()
		require.NoError(t, err)
		return d
	}
	first := digest(in)
	assert.Equal(t, first, digest(in), "equal inputs, equal digest")
	later := in
	later.Created = in.Created.Add(time.Second)
	assert.NotEqual(t, first, digest(later), "the creation time is an input")
	other := in
	other.Revision = "fedcba98"
	assert.NotEqual(t, first, digest(other), "the revision label is an input")
}

func TestBuildRefuses(t *testing.T) {
	good := testInputs(t)
	dynamic, err := os.ReadFile(mustLookPath(t, "true")) // the system's own dynamically linked /bin/true
	require.NoError(t, err)
	cases := []struct {
		name   string
		mutate func(*Inputs)
		want   error
	}{
		{"not an ELF file", func(in *Inputs) { in.Binary = []byte("#!/bin/sh\necho hi\n") }, ErrNotStatic},
		{"empty binary", func(in *Inputs) { in.Binary = nil }, ErrNotStatic},
		{"dynamically linked", func(in *Inputs) { in.Binary = dynamic }, ErrNotStatic},
		{"built for arm64", func(in *Inputs) { in.Binary = withMachine(in.Binary, uint16(elf.EM_AARCH64)) }, ErrWrongArch},
		{"image arch arm64, binary amd64", func(in *Inputs) { in.Arch = "arm64" }, ErrWrongArch},
		{"unsupported arch", func(in *Inputs) { in.Arch = "riscv64" }, ErrBadArch},
		{"empty CA bundle", func(in *Inputs) { in.CABundle = nil }, ErrNoCerts},
		{"CA bundle is not PEM", func(in *Inputs) { in.CABundle = []byte("not a certificate") }, ErrNoCerts},
		{"version with a plus", func(in *Inputs) { in.Version = "1.2.3+meta" }, ErrBadVersion},
		{"version with a leading dot", func(in *Inputs) { in.Version = ".1" }, ErrBadVersion},
		{"empty version", func(in *Inputs) { in.Version = "" }, ErrBadVersion},
		{"revision with a space", func(in *Inputs) { in.Revision = "abc def" }, ErrBadRev},
		{"empty revision", func(in *Inputs) { in.Revision = "" }, ErrBadRev},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := good
			c.mutate(&in)
			img, err := Build(in)
			assert.ErrorIs(t, err, c.want)
			assert.Nil(t, img)
		})
	}
}

func mustLookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	require.NoError(t, err)
	p, err = filepath.EvalSymlinks(p)
	require.NoError(t, err)
	return p
}

func TestCheckCABundle(t *testing.T) {
	ca := testCA(t)
	cases := []struct {
		name   string
		bundle []byte
		ok     bool
	}{
		{"one certificate", ca, true},
		{"two certificates", append(append([]byte{}, ca...), ca...), true},
		{"comments around certificates", append(append([]byte("# Issuer: test\n"), ca...), "# end\n"...), true},
		{"empty", nil, false},
		{"whitespace only", []byte("\n\n"), false},
		{"a private key block", []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), false},
		{"a certificate block that does not parse", []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), false},
		{"cut short", append(append([]byte{}, ca...), ca[:len(ca)/2]...), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckCABundle(c.bundle)
			if c.ok {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ErrNoCerts)
			}
		})
	}
	if sys, err := os.ReadFile(DefaultCABundle); err == nil {
		assert.NoError(t, CheckCABundle(sys), "the system bundle the image copies in")
	}
}
