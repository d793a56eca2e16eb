package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config/load"
)

// routerYAML is a valid configuration whose member ceiling is n and whose caller token is read
// from tokens.
func routerYAML(n int, tokens string) string {
	return fmt.Sprintf(`auth:
  caller_tokens_file: %s
aliases:
  - {id: chat, tier: box}
tiers:
  - id: box
    kind: replica
    served_model: tiny
    gates: {max_context_tokens: 2048}
    host: 127.0.0.1
    provenance: one box
    replica_strategy: capacity
    members:
      - {id: m0, endpoint: "http://127.0.0.1:9001", max_concurrency: %d}
      - {id: m1, endpoint: "http://127.0.0.1:9002", max_concurrency: 4}
`, tokens, n)
}

const callerToken = "caller-token-aaaaaaaaaaaaaaaa"

// applied is a reload that loads the Source as the router would and records the digest of every
// configuration it applied.
type applied struct {
	src     *load.Source
	digests []string
	refused []error
}

func (a *applied) reload(ctx context.Context) error {
	l, err := a.src.Load(ctx)
	if err != nil {
		a.refused = append(a.refused, err)
		return err
	}
	a.digests = append(a.digests, l.Digest)
	return nil
}

// watched starts a watcher over path from the configuration loaded there now.
func watched(t *testing.T, path string) (*Watcher, *applied) {
	t.Helper()
	src := load.NewSource(path, func(string) (string, bool) { return "", false })
	start, err := src.Load(context.Background())
	require.NoError(t, err)
	a := &applied{src: src}
	w, err := New(start.Fingerprint, src, a.reload, DefaultInterval)
	require.NoError(t, err)
	return w, a
}

// polls runs n polls and returns how many reloads they ran.
func polls(t *testing.T, w *Watcher, n int) int {
	t.Helper()
	ran := 0
	for range n {
		did, _ := w.Poll(context.Background())
		if did {
			ran++
		}
	}
	return ran
}

func write(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
}

func digestOf(t *testing.T, path string) string {
	t.Helper()
	src := load.NewSource(path, func(string) (string, bool) { return "", false })
	l, err := src.Load(context.Background())
	require.NoError(t, err)
	return l.Digest
}

// TestConfigMapSwap lays files out as the kubelet does for a ConfigMap volume (router.yaml ->
// ..data/router.yaml, ..data -> a timestamped directory) and swaps ..data atomically: exactly one
// reload, of the new content.
func TestConfigMapSwap(t *testing.T) {
	dir := t.TempDir()
	version := func(name string, n int) {
		vdir := filepath.Join(dir, name)
		require.NoError(t, os.Mkdir(vdir, 0o700))
		write(t, filepath.Join(vdir, "tokens"), callerToken+"\n")
		write(t, filepath.Join(vdir, "router.yaml"), routerYAML(n, filepath.Join(dir, "tokens")))
	}
	version("..2026_12_01_00_00_00.000000001", 4)
	require.NoError(t, os.Symlink("..2026_12_01_00_00_00.000000001", filepath.Join(dir, "..data")))
	for _, name := range []string{"router.yaml", "tokens"} {
		require.NoError(t, os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)))
	}
	path := filepath.Join(dir, "router.yaml")
	w, a := watched(t, path)
	require.Equal(t, 0, polls(t, w, 3), "nothing changed yet")

	version("..2026_12_01_00_01_00.000000002", 2)
	require.NoError(t, os.Symlink("..2026_12_01_00_01_00.000000002", filepath.Join(dir, "..data_tmp")))
	require.NoError(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "..2026_12_01_00_00_00.000000001")))

	assert.Equal(t, 1, polls(t, w, 5), "one swap, one reload")
	assert.Equal(t, []string{digestOf(t, path)}, a.digests)
	assert.Empty(t, a.refused)
}

// TestEditorWritesInPlace: an editor truncating and rewriting the file, polled between its writes,
// reloads once, with the finished content; no partial content is ever loaded.
func TestEditorWritesInPlace(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	write(t, tokens, callerToken+"\n")
	path := filepath.Join(dir, "router.yaml")
	write(t, path, routerYAML(4, tokens))
	w, a := watched(t, path)

	next := routerYAML(2, tokens)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	ran := polls(t, w, 1) // the truncated, empty file
	for i := 0; i < len(next); i += 40 {
		_, err := f.WriteString(next[i:min(i+40, len(next))])
		require.NoError(t, err)
		ran += polls(t, w, 1)
	}
	require.NoError(t, f.Close())
	assert.Equal(t, 0, ran, "no reload while the file is being written")
	assert.Equal(t, 1, polls(t, w, 4), "one reload once the write is done")
	assert.Equal(t, []string{digestOf(t, path)}, a.digests)
	assert.Empty(t, a.refused)
}

// TestHalfWrittenFileIsNeverApplied: a writer that stalls halfway leaves a file that settles; its
// reload is refused (the half is not a valid configuration), is not retried while the file stays
// so, and the finished file then reloads.
func TestHalfWrittenFileIsNeverApplied(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	write(t, tokens, callerToken+"\n")
	path := filepath.Join(dir, "router.yaml")
	write(t, path, routerYAML(4, tokens))
	w, a := watched(t, path)

	next := routerYAML(2, tokens)
	write(t, path, next[:len(next)*2/3])
	assert.Equal(t, 1, polls(t, w, 6), "the settled half is tried once")
	require.Len(t, a.refused, 1)
	assert.Empty(t, a.digests, "nothing applied")

	write(t, path, next)
	assert.Equal(t, 1, polls(t, w, 4))
	assert.Equal(t, []string{digestOf(t, path)}, a.digests)
}

// TestRotatedTokenFileReloads: a token file rotated under an unchanged configuration file is seen.
func TestRotatedTokenFileReloads(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	write(t, tokens, callerToken+"\n")
	path := filepath.Join(dir, "router.yaml")
	write(t, path, routerYAML(4, tokens))
	w, a := watched(t, path)
	write(t, tokens, "caller-token-bbbbbbbbbbbbbbbb\n")
	assert.Equal(t, 1, polls(t, w, 4))
	assert.Len(t, a.digests, 1)
}
