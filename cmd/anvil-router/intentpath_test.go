package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/internal/routerrig"
	"github.com/anvil-llm/anvil/router/config"
)

// serveWithin runs `serve --config cfg` in-process and fails the test when it has not returned
// within 20 s: each case here refuses the start, so the command must come back, not hang.
func serveWithin(t *testing.T, cfg string) (int, string) {
	t.Helper()
	type result struct {
		code int
		out  string
	}
	done := make(chan result, 1)
	go func() {
		code, out, err := runCmd(t, "serve", "--config", cfg)
		if err != nil {
			out += err.Error() // the line Execute would print
		}
		done <- result{code, out}
	}()
	select {
	case r := <-done:
		return r.code, r.out
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not return: the start hangs")
		return 0, ""
	}
}

// Every intent file (and decision log) path the operator pointed at the wrong thing refuses the
// start with exit 2, as OPERATIONS.md says, and the error names the one problem.
func TestIntentPathRefusalsExitUsage(t *testing.T) {
	t.Setenv(config.EnvAPIToken, routerrig.CallerToken)
	t.Setenv(config.EnvAdminToken, routerrig.AdminToken)
	urls := routerrig.Fakes(t, 3)
	for name, c := range map[string]struct {
		extra func(t *testing.T, dir string) (string, string) // YAML, the path named
		want  string
	}{
		"missing directory": {func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, "gone", "intent.json")
			return "intent_file: " + p + "\n", p
		}, "unusable: no such directory"},
		"a file where the directory belongs": {func(t *testing.T, dir string) (string, string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "state"), nil, 0o600))
			p := filepath.Join(dir, "state", "intent.json")
			return "intent_file: " + p + "\n", p
		}, "unusable: no such directory"},
		"a directory in place of the file": {func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, "intent.json")
			require.NoError(t, os.Mkdir(p, 0o700))
			return "intent_file: " + p + "\n", p
		}, "unusable: is a directory"},
		"a FIFO in place of the file": {func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, "intent.json")
			require.NoError(t, syscall.Mkfifo(p, 0o600))
			return "intent_file: " + p + "\n", p
		}, "unusable: not a regular file"},
		"a symbolic link": {func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, "intent.json")
			require.NoError(t, os.WriteFile(filepath.Join(dir, "real.json"), []byte(`{"tiers":{}}`), 0o600))
			require.NoError(t, os.Symlink("real.json", p))
			return "intent_file: " + p + "\n", p
		}, "unusable: is a symbolic link"},
		"a FIFO as the decision log": {func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, "decisions.jsonl")
			require.NoError(t, syscall.Mkfifo(p, 0o600))
			return "decision_log:\n  jsonl_path: " + p + "\n", p
		}, "not a regular file"},
		"a missing certificate": {func(t *testing.T, dir string) (string, string) {
			p := filepath.Join(dir, "router.crt")
			return "tls:\n  cert_file: " + p + "\n  key_file: " + filepath.Join(dir, "router.key") + "\n", p
		}, "tls: cannot load the certificate and key: open " + "DIR/router.crt: no such file or directory"},
		"a certificate that does not parse": {func(t *testing.T, dir string) (string, string) {
			p, key := filepath.Join(dir, "router.crt"), filepath.Join(dir, "router.key")
			require.NoError(t, os.WriteFile(p, []byte("not PEM"), 0o600))
			require.NoError(t, os.WriteFile(key, []byte("not PEM"), 0o600))
			return "tls:\n  cert_file: " + p + "\n  key_file: " + key + "\n", "tls: cannot load the certificate and key"
		}, "failed to find any PEM data"},
		"a read-only directory": {func(t *testing.T, dir string) (string, string) {
			state := filepath.Join(dir, "state")
			require.NoError(t, os.Mkdir(state, 0o500))
			t.Cleanup(func() { _ = os.Chmod(state, 0o700) })
			if f, err := os.CreateTemp(state, "probe-*"); err == nil {
				_ = f.Close()
				_ = os.Remove(f.Name())
				t.Skip("running as root: permissions do not bind (router/intent's tests inject EACCES and EROFS)")
			}
			p := filepath.Join(state, "intent.json")
			return "intent_file: " + p + "\n", p
		}, "unusable: directory not writable"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			extra, path := c.extra(t, dir)
			cfg := filepath.Join(dir, "router.yaml")
			require.NoError(t, os.WriteFile(cfg, []byte(routerrig.YAML(urls, extra)), 0o600))
			code, out := serveWithin(t, cfg)
			assert.Equal(t, exitUsage, code, out)
			assert.Contains(t, out, path)
			assert.Contains(t, out, strings.ReplaceAll(c.want, "DIR", dir))
			assert.NotContains(t, out, "serving", "refused before anything is served")
		})
	}
}
