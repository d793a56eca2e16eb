package server_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/intent"
	"github.com/anvil-llm/anvil/router/server"
)

// mkfifo makes a FIFO at dir/name and returns its path.
func mkfifo(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, syscall.Mkfifo(p, 0o600))
	return p
}

// newWithin runs server.New and fails the test when it has not returned within 20 s (it takes milliseconds): a path the
// server opens blocking on a FIFO must fail the test, not hang it.
func newWithin(t *testing.T, yaml string) error {
	t.Helper()
	cfg, err := load.Parse([]byte(yaml), env)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		srv, err := server.New(cfg, server.Options{})
		if err == nil {
			_ = srv.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("server.New blocked on a FIFO")
		return nil
	}
}

// Every path the server opens at start refuses a FIFO with a fixed error instead of blocking in
// open: the intent file, the decision log's JSONL file, the TLS certificate and key.
func TestAFIFOIsRefusedAtStart(t *testing.T) {
	ms := startMembers(t, 2)
	certPath, keyPath, _ := selfSigned(t)
	for name, c := range map[string]struct {
		extra func(fifo string) string
		want  error
	}{
		"intent_file":             {func(f string) string { return "intent_file: " + f + "\n" }, intent.ErrNotRegular},
		"decision_log.jsonl_path": {func(f string) string { return "decision_log:\n  jsonl_path: " + f + "\n" }, server.ErrNotRegular},
		"tls.cert_file": {func(f string) string {
			return "tls:\n  cert_file: " + f + "\n  key_file: " + keyPath + "\n"
		}, server.ErrNotRegular},
		"tls.key_file": {func(f string) string {
			return "tls:\n  cert_file: " + certPath + "\n  key_file: " + f + "\n"
		}, server.ErrNotRegular},
	} {
		t.Run(name, func(t *testing.T) {
			fifo := mkfifo(t, t.TempDir(), "fifo")
			err := newWithin(t, replicaYAML(ms, tierOpts{extra: c.extra(fifo)}))
			require.Error(t, err)
			assert.ErrorIs(t, err, c.want)
			assert.Contains(t, err.Error(), fifo)
			assert.Contains(t, err.Error(), "not a regular file")
		})
	}
}

// The decision log's path may be a link (it is only appended to), but not a link to a FIFO; a
// link to a regular file is appended through, and the link stays.
func TestTheDecisionLogFollowsALinkToARegularFile(t *testing.T) {
	ms := startMembers(t, 2)
	dir := t.TempDir()
	fifo := mkfifo(t, dir, "fifo")
	toFIFO := filepath.Join(dir, "to-fifo.jsonl")
	require.NoError(t, os.Symlink(fifo, toFIFO))
	err := newWithin(t, replicaYAML(ms, tierOpts{extra: "decision_log:\n  jsonl_path: " + toFIFO + "\n"}))
	assert.ErrorIs(t, err, server.ErrNotRegular)

	target := filepath.Join(dir, "decisions.jsonl")
	link := filepath.Join(dir, "link.jsonl")
	require.NoError(t, os.Symlink(target, link))
	require.NoError(t, newWithin(t, replicaYAML(ms, tierOpts{extra: "decision_log:\n  jsonl_path: " + link + "\n"})))
	info, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, info.Mode()&os.ModeSymlink, "the link stays a link")
	info, err = os.Stat(target)
	require.NoError(t, err)
	assert.True(t, info.Mode().IsRegular(), "the file is created at the link's target")
}

// A SIGKILL during a save leaves its temporary file; the next start removes it (and only files of
// exactly that pattern, in that directory) and says so in the log.
func TestStartRemovesStaleIntentTemporaries(t *testing.T) {
	ms := startMembers(t, 2)
	dir := t.TempDir()
	path := filepath.Join(dir, "intent.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"tiers":{"replicas":"maintenance"}}`), 0o600))
	stale := filepath.Join(dir, ".intent.json.tmp-3141592653")
	require.NoError(t, os.WriteFile(stale, []byte(`{"tiers":{"repl`), 0o600))
	lookalike := filepath.Join(dir, ".intent.json.tmp-3141592653.orig")
	require.NoError(t, os.WriteFile(lookalike, []byte("keep"), 0o600))

	var logs syncBuffer
	cfg, err := load.Parse([]byte(replicaYAML(ms, withIntent(tierOpts{}, path))), env)
	require.NoError(t, err)
	srv, err := server.New(cfg, server.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	defer func() { _ = srv.Close() }()

	_, err = os.Stat(stale)
	assert.ErrorIs(t, err, os.ErrNotExist, "the stale temporary is removed")
	_, err = os.Stat(lookalike)
	assert.NoError(t, err, "a look-alike name is kept")
	assert.Equal(t, 1, logs.count(`msg="stale intent temporary files removed" count=1 files=[.intent.json.tmp-3141592653]`))
	snap, ok := srv.Admission().Tier("replicas")
	require.True(t, ok)
	assert.Equal(t, "maintenance", snap.Snapshot().Reason, "the intent file itself was restored")
}
