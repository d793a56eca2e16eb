package main

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/internal/routerrig"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/manage"
	"github.com/anvil-llm/anvil/router/server"
)

// transition-status shows the quiesce intent the router keeps for scopes no longer configured, a
// whole tier's too, and readmit clears it.
func TestTransitionStatusShowsKeptIntent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "intent.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"tiers":{"gone":"maintenance"},"members":{"replicas":{"m05":"upgrade"}}}`), 0o600))
	cfg, err := load.Parse([]byte(routerrig.YAML(routerrig.Fakes(t, 3), "intent_file: "+path+"\n")), func(k string) (string, bool) {
		switch k {
		case config.EnvAPIToken:
			return routerrig.CallerToken, true
		case config.EnvAdminToken:
			return routerrig.AdminToken, true
		}
		return "", false
	})
	require.NoError(t, err)
	srv, err := server.New(cfg, server.Options{})
	require.NoError(t, err)
	srv.ProbeNow(t.Context())
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); _ = srv.Close() })
	c := cli{e: &ephemeral{srv: srv, url: hs.URL}}

	code, out, errOut := c.run(t, "transition-status", "--tier", "replicas")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `replicas/m00 +admitting`, out)
	assert.Regexp(t, `replicas/m05 +quiesced \(not configured\) +upgrade +- +- +-`, out)

	code, out, errOut = c.run(t, "transition-status", "--tier", "gone")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `gone +quiesced \(not configured\) +maintenance`, out)
	code, out, errOut = c.run(t, "transition-status", "--tier", "gone", "--output", "json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"not_configured": true`)

	code, _, errOut = c.run(t, "readmit", "--tier", "replicas", "--member", "m05", "--yes")
	require.Equal(t, 0, code, errOut)
	code, out, errOut = c.run(t, "transition-status", "--tier", "replicas")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "m05", "readmit cleared the kept intent")
	code, _, errOut = c.run(t, "readmit", "--tier", "gone", "--yes")
	require.Equal(t, 0, code, errOut)
	code, _, errOut = c.run(t, "transition-status", "--tier", "gone")
	assert.Equal(t, exitFailure, code, "nothing kept: the tier is unknown again, as before")
	assert.Contains(t, errOut, "unknown_tier")
}

// transition-status without --tier shows a quiesced tier a reload removed, after the configured
// tiers, as quiesced (not configured): the all-tier status reads the kept tiers from GET
// /admin/v1/config's kept_tiers. Before, it walked only the configured tiers and hid the intent.
func TestStatusOfEveryTierShowsKeptTier(t *testing.T) {
	env := func(k string) (string, bool) {
		switch k {
		case config.EnvAPIToken:
			return routerrig.CallerToken, true
		case config.EnvAdminToken:
			return routerrig.AdminToken, true
		}
		return "", false
	}
	yaml := routerrig.YAML(routerrig.Fakes(t, 3), "")
	cfg, err := load.Parse([]byte(yaml), env)
	require.NoError(t, err)
	srv, err := server.New(cfg, server.Options{})
	require.NoError(t, err)
	srv.ProbeNow(t.Context())
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); _ = srv.Close() })
	c := cli{e: &ephemeral{srv: srv, url: hs.URL}}

	code, _, errOut := c.run(t, "quiesce", "--tier", "solo", "--reason", "retired", "--yes")
	require.Equal(t, 0, code, errOut)
	without, err := load.Parse([]byte(yaml[:strings.Index(yaml, "  - id: solo")]), env)
	require.NoError(t, err)
	_, err = srv.Reload(t.Context(), without, "without-solo")
	require.NoError(t, err)

	code, out, errOut := c.run(t, "transition-status")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "status replicas: status")
	assert.Regexp(t, `solo +quiesced \(not configured\) +retired`, out)
	code, out, errOut = c.run(t, "transition-status", "--output", "json")
	require.Equal(t, 0, code, errOut)
	var all []manage.Response
	require.NoError(t, json.Unmarshal([]byte(out), &all))
	require.Len(t, all, 2)
	assert.Equal(t, []string{"replicas", "solo"}, []string{all[0].Tier, all[1].Tier}, "configured first, then kept")
	assert.Equal(t, manage.Scope{State: "quiesced", Reason: "retired", NotConfigured: true}, all[1].Scope)

	code, _, errOut = c.run(t, "readmit", "--tier", "solo", "--yes")
	require.Equal(t, 0, code, errOut)
	code, out, errOut = c.run(t, "transition-status")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "solo", "readmit cleared the kept intent: the tier is gone")
}
