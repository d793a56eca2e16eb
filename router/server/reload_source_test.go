package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/manage"
	"github.com/anvil-llm/anvil/router/server"
)

// sourceRouter is a real router wired as anvil-router serve wires it: started from a load.Source,
// reloading through the same Source, credentials in token files.
type sourceRouter struct {
	url, dir, path string
}

const (
	rotatedCaller = "caller-token-rotated-9876543210"
	fileAdmin     = "admin-token-from-file-0123456789"
)

func startSourceRouter(t *testing.T, yaml string) *sourceRouter {
	t.Helper()
	dir := t.TempDir()
	r := &sourceRouter{dir: dir, path: filepath.Join(dir, "router.yaml")}
	r.writeFile(t, "callers", callerToken+"\n")
	r.writeFile(t, "admin", fileAdmin+"\n")
	r.writeFile(t, "router.yaml", r.withTokenFiles(yaml))
	src := load.NewSource(r.path, func(string) (string, bool) { return "", false })
	loaded, err := src.Load(context.Background())
	require.NoError(t, err)
	srv, err := server.New(loaded.Config, server.Options{ConfigPath: r.path, ConfigDigest: loaded.Digest,
		Load: func(ctx context.Context) (config.Config, string, error) {
			l, err := src.Load(ctx)
			return l.Config, l.Digest, err
		}})
	require.NoError(t, err)
	srv.Start()
	srv.ProbeNow(context.Background())
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		_ = srv.Close()
	})
	r.url = hs.URL
	return r
}

func (r *sourceRouter) withTokenFiles(yaml string) string {
	return yaml + "auth:\n  caller_tokens_file: " + filepath.Join(r.dir, "callers") +
		"\n  admin_token_file: " + filepath.Join(r.dir, "admin") + "\n"
}

// writeFile replaces a file atomically, as an editor's rename or a ConfigMap swap does.
func (r *sourceRouter) writeFile(t *testing.T, name, content string) {
	t.Helper()
	tmp := filepath.Join(r.dir, "."+name+".tmp")
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o600))
	require.NoError(t, os.Rename(tmp, filepath.Join(r.dir, name)))
}

func (r *sourceRouter) call(t *testing.T, method, path, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, r.url+path, strings.NewReader("{}"))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

func (r *sourceRouter) reload(t *testing.T) (int, manage.ReloadResponse, string) {
	t.Helper()
	code, body := r.call(t, http.MethodPost, manage.ReloadPath, fileAdmin)
	var resp manage.ReloadResponse
	if code == http.StatusOK {
		require.NoError(t, json.Unmarshal(body, &resp))
	}
	return code, resp, string(body)
}

func (r *sourceRouter) status(t *testing.T) manage.ConfigStatus {
	t.Helper()
	code, body := r.call(t, http.MethodGet, manage.ConfigPath, fileAdmin)
	require.Equal(t, http.StatusOK, code, string(body))
	var st manage.ConfigStatus
	require.NoError(t, json.Unmarshal(body, &st))
	return st
}

// TestReloadThroughTheSource: the answer and GET /admin/v1/config list config.Diff's lines; a
// rotated caller token file under an unchanged config file applies (the old token is refused from
// the swap on); a restart-only key refuses the whole file with its key; the same files again are
// unchanged.
func TestReloadThroughTheSource(t *testing.T) {
	ms := startMembers(t, 2)
	yaml := replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 4})
	r := startSourceRouter(t, yaml)

	code, resp, body := r.reload(t)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, manage.ReloadUnchanged, resp.Result, "same file, same token files")

	r.writeFile(t, "router.yaml", r.withTokenFiles(replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2})))
	code, resp, body = r.reload(t)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, manage.ReloadApplied, resp.Result)
	want := []string{"tiers.replicas.members.m00.max_concurrency: 4 -> 2", "tiers.replicas.members.m01.max_concurrency: 4 -> 2"}
	assert.Equal(t, want, resp.Changes)
	st := r.status(t)
	require.NotNil(t, st.LastReload)
	assert.Equal(t, want, st.LastReload.Changes)
	assert.Equal(t, uint64(2), st.Generation)

	code, _ = r.call(t, http.MethodGet, "/v1/models", callerToken)
	require.Equal(t, http.StatusOK, code)
	r.writeFile(t, "callers", rotatedCaller+"\n")
	code, resp, body = r.reload(t)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, manage.ReloadApplied, resp.Result, "a rotated token file applies under the same config digest")
	assert.Equal(t, []string{"auth.caller_tokens: changed"}, resp.Changes)
	assert.Equal(t, st.Digest, resp.Digest, "the config file itself did not change")
	code, _ = r.call(t, http.MethodGet, "/v1/models", callerToken)
	assert.Equal(t, http.StatusUnauthorized, code, "the old token is refused from the swap on")
	code, _ = r.call(t, http.MethodGet, "/v1/models", rotatedCaller)
	assert.Equal(t, http.StatusOK, code)

	r.writeFile(t, "router.yaml", r.withTokenFiles("log:\n  level: debug\n"+replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 1})))
	code, _, body = r.reload(t)
	require.Equal(t, http.StatusUnprocessableEntity, code)
	assert.Contains(t, body, `"message":"config: log.level: restart required"`)
	st = r.status(t)
	assert.Equal(t, uint64(3), st.Generation, "nothing of the refused file applied")
	require.NotNil(t, st.LastReload)
	assert.Equal(t, manage.ReloadRefused, st.LastReload.Result)
	assert.Equal(t, "config: log.level: restart required", st.LastReload.Error)
}
