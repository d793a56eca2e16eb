package server_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/manage"
)

func digestOf(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestReloadEndpoint: POST /admin/v1/config/reload applies a changed file, answers "unchanged" for
// the same digest, refuses a bad file with 422 and the configuration error while the running
// config keeps serving, and GET /admin/v1/config reports the file in force and the last attempt.
func TestReloadEndpoint(t *testing.T) {
	ms := startMembers(t, 2)
	yaml := replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2})
	rig := startReloadRig(t, yaml, routerOptions{})

	st := rig.status(t)
	assert.Equal(t, digestOf(t, rig.path), st.Digest)
	assert.Equal(t, rig.path, st.Source)
	assert.Equal(t, uint64(1), st.Generation)
	assert.Nil(t, st.LastReload)
	assert.False(t, st.LoadedAt.IsZero())

	status, body := rig.reload(t)
	require.Equal(t, http.StatusOK, status, string(body))
	var resp manage.ReloadResponse
	require.NoError(t, json.Unmarshal(body, &resp))
	assert.Equal(t, manage.ReloadUnchanged, resp.Result, "the same file touches nothing")
	assert.Equal(t, uint64(1), resp.Generation)

	resp = rig.apply(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 3}))
	assert.Equal(t, uint64(2), resp.Generation)
	assert.Equal(t, digestOf(t, rig.path), resp.Digest)
	snap := rig.snapshot(t, "replicas")
	assert.Equal(t, int64(3), snap.Members[0].MaxConcurrency)
	code, _, _ := rig.do(t, "/v1/chat/completions", chatBody(2, false))
	require.Equal(t, http.StatusOK, code)
	rig.wait(t, 1)

	tests := []struct {
		name string
		yaml string
		want string // in the error text
	}{
		{"a YAML error", "tiers: [", "yaml"},
		{"an unknown key", yaml + "bogus_key: 1\n", "bogus_key"},
		{"a validation failure", strings.Replace(yaml, "max_concurrency: 2", "max_concurrency: 0", 1), "max_concurrency"},
		{"a restart-required change", strings.Replace(yaml, "listen: 127.0.0.1:0", "listen: 127.0.0.1:1", 1), "listen: restart required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rig.write(t, tt.yaml)
			status, body := rig.reload(t)
			require.Equal(t, http.StatusUnprocessableEntity, status, string(body))
			var e struct {
				Error struct{ Message, Code string }
			}
			require.NoError(t, json.Unmarshal(body, &e))
			assert.Equal(t, manage.ReloadRefusedCode, e.Error.Code)
			assert.Contains(t, strings.ToLower(e.Error.Message), tt.want)
			st := rig.status(t)
			assert.Equal(t, uint64(2), st.Generation, "nothing changed")
			require.NotNil(t, st.LastReload)
			assert.Equal(t, manage.ReloadRefused, st.LastReload.Result)
			assert.NotEmpty(t, st.LastReload.Error)
			assert.Equal(t, int64(3), rig.snapshot(t, "replicas").Members[0].MaxConcurrency)
			code, _, _ := rig.do(t, "/v1/chat/completions", chatBody(2, false))
			require.Equal(t, http.StatusOK, code, "the running config keeps serving")
			rig.wait(t, 1)
		})
	}
	t.Run("a vanished file", func(t *testing.T) {
		require.NoError(t, os.Remove(rig.path))
		status, _ := rig.reload(t)
		assert.Equal(t, http.StatusUnprocessableEntity, status)
		assert.Equal(t, uint64(2), rig.status(t).Generation)
	})
	t.Run("the reload endpoint needs the admin token and takes no fields", func(t *testing.T) {
		code, _ := rig.adminDo(t, http.MethodPost, manage.ReloadPath, callerToken, "{}")
		assert.Equal(t, http.StatusUnauthorized, code)
		code, _ = rig.adminDo(t, http.MethodPost, manage.ReloadPath, adminToken, `{"x":1}`)
		assert.Equal(t, http.StatusBadRequest, code)
	})
	assertSettled(t, rig.snapshot(t, "replicas"))
}
