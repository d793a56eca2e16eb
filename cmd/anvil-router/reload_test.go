package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/internal/routerrig"
	"github.com/anvil-llm/anvil/router/manage"
)

// writeConfig replaces the config file atomically, as an editor's rename or a ConfigMap swap does.
func writeConfig(t *testing.T, path, yaml string) string {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(yaml), 0o600))
	require.NoError(t, os.Rename(tmp, path))
	sum := sha256.Sum256([]byte(yaml))
	return hex.EncodeToString(sum[:])
}

// waitLog waits for the process's next log line containing want.
func (p *process) waitLog(t *testing.T, want string) string {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case line := <-p.lines:
			if strings.Contains(line, want) {
				return line
			}
		case <-deadline:
			t.Fatalf("no log line with %q", want)
		}
	}
}

func (p *process) configStatus(t *testing.T) manage.ConfigStatus {
	t.Helper()
	c, err := manage.NewClient(http.DefaultClient, p.url, routerrig.AdminToken)
	require.NoError(t, err)
	st, err := c.Config(context.Background())
	require.NoError(t, err)
	return st
}

// withAlias adds the alias gpt on the direct tier to the rig's YAML.
func withAlias(yaml string) string {
	return strings.Replace(yaml, "aliases: [{id: chat, tier: replicas}]", "aliases: [{id: chat, tier: replicas}, {id: gpt, tier: solo}]", 1)
}

// testReloadCommand drives `anvil-router reload` against the real binary: unchanged, applied with
// its change lines, JSON, a restart-required refusal (exit 1, the key named, nothing applied), then
// SIGHUP applying the next file.
func testReloadCommand(t *testing.T, bin string) {
	urls := routerrig.Fakes(t, 3)
	path := filepath.Join(t.TempDir(), "router.yaml")
	digest := writeConfig(t, path, routerrig.YAML(urls, ""))
	p := serveBinary(t, bin, path)
	c := p.cli()

	code, out, errOut := c.run(t, "reload")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "reload: unchanged (generation 1, digest "+digest[:16]+")\n", out)

	digest = writeConfig(t, path, withAlias(routerrig.YAML(urls, "readiness:\n  interval: 3s\n")))
	code, out, errOut = c.run(t, "reload")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "reload: applied (generation 2, digest "+digest[:16]+")\n  readiness.interval: 2s -> 3s\n  aliases.gpt: added\n", out)

	code, out, errOut = c.run(t, "reload", "--output", "json")
	require.Equal(t, 0, code, errOut)
	var resp manage.ReloadResponse
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&resp))
	assert.Equal(t, manage.ReloadResponse{Result: manage.ReloadUnchanged, Digest: digest, Generation: 2, Changes: []string{}}, resp)

	writeConfig(t, path, withAlias(routerrig.YAML(urls, "readiness:\n  interval: 3s\nlog:\n  level: debug\n")))
	code, out, errOut = c.run(t, "reload")
	assert.Equal(t, exitFailure, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "config: log.level: restart required [config_refused]")
	assert.NotContains(t, errOut, p.url)
	st := p.configStatus(t)
	assert.Equal(t, uint64(2), st.Generation, "nothing of the refused file applied")
	assert.Equal(t, digest, st.Digest)

	digest = writeConfig(t, path, routerrig.YAML(urls, "readiness:\n  interval: 3s\n"))
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	p.waitLog(t, `msg="config reloaded" generation=3`) // generation 2's line is in the log too
	st = p.configStatus(t)
	assert.Equal(t, uint64(3), st.Generation)
	assert.Equal(t, digest, st.Digest)
	require.NotNil(t, st.LastReload)
	assert.Equal(t, []string{"aliases.gpt: removed"}, st.LastReload.Changes)
	p.stop(t)
}

// testServeWatch: with --watch, an atomically replaced file is applied on its own, a bad one is
// refused and the running config keeps serving, and the fixed file is applied after it.
func testServeWatch(t *testing.T, bin string) {
	urls := routerrig.Fakes(t, 3)
	path := filepath.Join(t.TempDir(), "router.yaml")
	writeConfig(t, path, routerrig.YAML(urls, ""))
	p := serveBinary(t, bin, path, "--watch", "--watch-interval", "100ms")

	digest := writeConfig(t, path, withAlias(routerrig.YAML(urls, "")))
	p.waitLog(t, `msg="config reloaded" generation=2`)
	st := p.configStatus(t)
	assert.Equal(t, uint64(2), st.Generation)
	assert.Equal(t, digest, st.Digest)

	writeConfig(t, path, withAlias(routerrig.YAML(urls, "bogus_key: 1\n")))
	line := p.waitLog(t, "config reload refused")
	assert.Contains(t, line, "bogus_key")
	assert.Equal(t, uint64(2), p.configStatus(t).Generation)

	digest = writeConfig(t, path, routerrig.YAML(urls, ""))
	p.waitLog(t, `msg="config reloaded" generation=3`)
	st = p.configStatus(t)
	assert.Equal(t, uint64(3), st.Generation)
	assert.Equal(t, digest, st.Digest)
	p.stop(t)
}

// TestReloadCommandRefusals: bad flags and a missing router exit 2 before anything is sent; a router
// that was not started from a file refuses with exit 1 and its fixed message.
func TestReloadCommandRefusals(t *testing.T) {
	e := startEphemeral(t)
	tests := []struct {
		name string
		c    cli
		args []string
		code int
		want string
	}{
		{"bad output", cli{e: e}, []string{"reload", "--output", "yaml"}, exitUsage, "--output must be table or json"},
		{"no router", cli{e: e, env: map[string]string{EnvRouterURL: ""}}, []string{"reload"}, exitUsage, "no router"},
		{"no file to reload", cli{e: e}, []string{"reload"}, exitFailure, "the router was not started from a config file [config_refused]"},
		{"a stray argument", cli{e: e}, []string{"reload", "now"}, exitUsage, "unknown command"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := tc.c.run(t, tc.args...)
			assert.Equal(t, tc.code, code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tc.want)
		})
	}
}

func TestRenderReloadKeepsTheTerminalSafe(t *testing.T) {
	var b strings.Builder
	require.NoError(t, renderReload(&b, manage.ReloadResponse{Result: manage.ReloadApplied, Generation: 2, Digest: "ab",
		Changes: []string{"tiers.x: added\x1b[2J"}}))
	assert.Equal(t, "reload: applied (generation 2, digest ab)\n  tiers.x: added?[2J\n", b.String())
}
