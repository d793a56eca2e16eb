package server_test

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/manage"
)

// TestRolesRotateWithTheReload: observer tokens and labelled callers are per generation. A reload
// that adds an observer token file opens /metrics to it; rotating that file's token refuses the old
// one from the swap on and opens the new; a labelled caller added by a reload is recorded under its
// label; an observer token can read the reload's status but never trigger one.
func TestRolesRotateWithTheReload(t *testing.T) {
	const observerA, observerB = "observer-a-token-0123456789", "observer-b-token-0123456789"
	const teamToken = "team-b-token-0123456789"
	ms := startMembers(t, 2)
	yaml := replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 4})
	r := startSourceRouter(t, yaml)
	code, _ := r.call(t, http.MethodGet, "/metrics", observerA)
	require.Equal(t, http.StatusUnauthorized, code, "no observer token yet")

	r.writeFile(t, "observers", observerA+"\n")
	r.writeFile(t, "team-b", teamToken+"\n")
	withRoles := r.withTokenFiles(yaml) + "  observer_tokens_file: " + filepath.Join(r.dir, "observers") + "\n" +
		"  callers:\n    - {label: team-b, token_file: " + filepath.Join(r.dir, "team-b") + "}\n"
	r.writeFile(t, "router.yaml", withRoles)
	code, resp, body := r.reload(t)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, manage.ReloadApplied, resp.Result)
	assert.Equal(t, []string{"auth.observer_tokens_file: added", "auth.observer_tokens: changed", "auth.callers.team-b: added"}, resp.Changes)
	code, _ = r.call(t, http.MethodGet, "/metrics", observerA)
	assert.Equal(t, http.StatusOK, code, "the reload opened /metrics to the new observer token")
	code, _ = r.call(t, http.MethodGet, "/admin/v1/capacity", observerA)
	assert.Equal(t, http.StatusOK, code, "the reload opened the views to the new observer token")
	code, _ = r.call(t, http.MethodGet, manage.ConfigPath, observerA)
	assert.Equal(t, http.StatusForbidden, code, "the config status is the admin's")
	code, body2 := r.call(t, http.MethodPost, manage.ReloadPath, observerA)
	assert.Equal(t, http.StatusForbidden, code, "an observer never reloads: %s", body2)

	code, _ = r.call(t, http.MethodPost, "/v1/chat/completions", teamToken) // "{}": refused, and recorded before the answer leaves (the handler's defer)
	require.Equal(t, http.StatusBadRequest, code, "the labelled caller added by the reload is accepted")
	code, recs := r.call(t, http.MethodGet, "/admin/v1/decisions?format=json", observerA)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, string(recs), `"caller":"team-b"`)
	assert.NotContains(t, string(recs), teamToken)

	r.writeFile(t, "observers", observerB+"\n")
	code, resp, body = r.reload(t)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, manage.ReloadApplied, resp.Result, "a rotated observer file applies under the same config file")
	assert.Equal(t, []string{"auth.observer_tokens: changed"}, resp.Changes)
	code, _ = r.call(t, http.MethodGet, "/metrics", observerA)
	assert.Equal(t, http.StatusUnauthorized, code, "the old observer token is refused from the swap on")
	code, _ = r.call(t, http.MethodGet, "/metrics", observerB)
	assert.Equal(t, http.StatusOK, code)
	code, _ = r.call(t, http.MethodGet, "/v1/models", observerB)
	assert.Equal(t, http.StatusUnauthorized, code, "an observer is never a caller")
}
