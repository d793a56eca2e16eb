package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/manage"
	"github.com/anvil-llm/anvil/router/server"
)

// reloadRig is a real router started from a config file on disk, reloading it as SIGHUP and the
// reload endpoint do: read, digest, validate with the startup rules.
type reloadRig struct {
	*router
	path string
	envs map[string]string // overrides of env, for token rotation
}

func fileLoad(path string, lookup func(string) (string, bool)) server.LoadFunc {
	return func(context.Context) (config.Config, string, error) {
		data, err := os.ReadFile(path)
		if err != nil {
			return config.Config{}, "", err
		}
		sum := sha256.Sum256(data)
		cfg, err := load.Parse(data, lookup)
		return cfg, hex.EncodeToString(sum[:]), err
	}
}

func startReloadRig(t *testing.T, yaml string, o routerOptions) *reloadRig {
	t.Helper()
	rig := &reloadRig{path: filepath.Join(t.TempDir(), "router.yaml"), envs: map[string]string{}}
	require.NoError(t, os.WriteFile(rig.path, []byte(yaml), 0o600))
	lookup := func(k string) (string, bool) {
		if v, ok := rig.envs[k]; ok {
			return v, true
		}
		return env(k)
	}
	load := fileLoad(rig.path, lookup)
	_, digest, err := load(context.Background())
	require.NoError(t, err)
	o.server.ConfigPath, o.server.ConfigDigest, o.server.Load = rig.path, digest, load
	rig.router = startRouterWith(t, yaml, o)
	return rig
}

// write replaces the config file (atomically, as an editor's rename or a ConfigMap swap does).
func (rig *reloadRig) write(t *testing.T, yaml string) {
	t.Helper()
	tmp := rig.path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(yaml), 0o600))
	require.NoError(t, os.Rename(tmp, rig.path))
}

// adminDo sends one admin request with token and waits for it to finish.
func (r *router) adminDo(t *testing.T, method, path, token, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, r.http.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r.wait(t, 1)
	return resp.StatusCode, b
}

// reload posts POST /admin/v1/config/reload.
func (rig *reloadRig) reload(t *testing.T) (int, []byte) {
	t.Helper()
	return rig.adminDo(t, http.MethodPost, manage.ReloadPath, adminToken, "{}")
}

// apply writes yaml and reloads it, requiring "applied".
func (rig *reloadRig) apply(t *testing.T, yaml string) manage.ReloadResponse {
	t.Helper()
	rig.write(t, yaml)
	status, body := rig.reload(t)
	require.Equal(t, http.StatusOK, status, string(body))
	var resp manage.ReloadResponse
	require.NoError(t, json.Unmarshal(body, &resp))
	require.Equal(t, manage.ReloadApplied, resp.Result)
	return resp
}

func (rig *reloadRig) status(t *testing.T) manage.ConfigStatus {
	t.Helper()
	code, body := rig.adminDo(t, http.MethodGet, manage.ConfigPath, adminToken, "")
	require.Equal(t, http.StatusOK, code, string(body))
	var st manage.ConfigStatus
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&st))
	return st
}
