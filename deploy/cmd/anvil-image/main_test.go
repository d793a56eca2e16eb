package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hello builds a tiny static linux/amd64 program to stand in for anvil-router.
func hello(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644))
	cmd := exec.Command("go", "build", "-o", "hello", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return filepath.Join(dir, "hello")
}

func TestBuildWritesLayoutAndTarball(t *testing.T) {
	if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err != nil {
		t.Skip("no system CA bundle to copy in")
	}
	bin, out := hello(t), t.TempDir()
	args := []string{"--binary", bin, "--version", "1.0.0", "--revision", "abc", "--arch", "amd64",
		"--source-date-epoch", "1700000000", "--layout", filepath.Join(out, "oci"), "--tarball", filepath.Join(out, "img.tar")}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(args, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "anvil-router:1.0.0 linux/amd64 sha256:")
	assert.FileExists(t, filepath.Join(out, "img.tar"))

	// A second build replaces the layout instead of piling a second image into it.
	args[5] = "def"
	require.Equal(t, 0, run(args, &stdout, &stderr), stderr.String())
	idx, err := layout.ImageIndexFromPath(filepath.Join(out, "oci"))
	require.NoError(t, err)
	m, err := idx.IndexManifest()
	require.NoError(t, err)
	assert.Len(t, m.Manifests, 1)
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary files left beside the outputs")
}

func TestRefusals(t *testing.T) {
	bin, out := hello(t), t.TempDir()
	foreign := filepath.Join(out, "not-a-layout")
	require.NoError(t, os.MkdirAll(foreign, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(foreign, "precious"), []byte("x"), 0o644))
	base := func(extra ...string) []string {
		return append([]string{"--binary", bin, "--version", "1.0.0", "--revision", "abc", "--arch", "amd64",
			"--layout", filepath.Join(out, "oci"), "--tarball", filepath.Join(out, "img.tar")}, extra...)
	}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"missing flags", []string{"--binary", bin}, exitUsage, "required flag"},
		{"unknown flag", base("--nope"), exitUsage, "unknown flag"},
		{"no CA bundle", base("--ca-bundle", filepath.Join(out, "missing.crt")), exitUsage, "install Debian's ca-certificates package"},
		{"CA bundle that is not PEM", base("--ca-bundle", bin), exitUsage, "CA bundle holds no PEM certificate"},
		{"missing binary", base("--binary", filepath.Join(out, "nope")), exitUsage, "cannot read --binary"},
		{"bad epoch", base("--source-date-epoch", "yesterday"), exitUsage, "--source-date-epoch"},
		{"bad version", base("--version", "1.0+x"), exitUsage, "valid image tag"},
		{"layout over a foreign directory", base("--layout", foreign), exitFailure, "not an OCI image layout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, c.code, run(c.args, &stdout, &stderr))
			assert.Contains(t, stderr.String(), c.want)
		})
	}
	assert.FileExists(t, filepath.Join(foreign, "precious"), "a foreign directory is never removed")
}
