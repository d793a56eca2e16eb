package main

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/internal/routerrig"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/manage"
)

// TestStatusOfEveryTier: transition-status without --tier shows each configured tier with its
// members (a JSON list with --output json); a member still needs its tier.
func TestStatusOfEveryTier(t *testing.T) {
	e := startEphemeral(t)
	c := cli{e: e}
	code, out, errOut := c.run(t, "transition-status")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "status replicas: status")
	assert.Contains(t, out, "replicas/m01")
	assert.Contains(t, out, "status solo: status")

	code, out, errOut = c.run(t, "transition-status", "--output", "json")
	require.Equal(t, 0, code, errOut)
	var all []manage.Response
	require.NoError(t, json.Unmarshal([]byte(out), &all))
	require.Len(t, all, 2)
	assert.Equal(t, []string{"replicas", "solo"}, []string{all[0].Tier, all[1].Tier})
	assert.Equal(t, "admitting", all[0].Snapshot.State)

	for _, args := range [][]string{
		{"transition-status", "--member", "m01"},
		{"transition-status", "--tier", ""},
		{"transition-status", "--output", "yaml"},
	} {
		code, _, errOut = c.run(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, errOut)
	}
}

// TestMutatingVerbWithStdinFromDevNull: /dev/null (a character device) and a pipe are no terminal,
// so a mutating verb without --yes refuses with exit 2 before any prompt or transport.
func TestMutatingVerbWithStdinFromDevNull(t *testing.T) {
	e := startEphemeral(t)
	null, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer null.Close()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	for name, in := range map[string]*os.File{"/dev/null": null, "a pipe": r} {
		con := fileConsole(in)
		env := map[string]string{EnvRouterURL: e.url, config.EnvAdminToken: routerrig.AdminToken}
		con.lookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
		root := newRoot(con)
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs([]string{"quiesce", "--tier", "replicas"})
		err := root.Execute()
		assert.Equal(t, 2, exitCode(err), "%s: %v", name, err)
		assert.ErrorContains(t, err, "pass --yes", name)
		assert.NotContains(t, errOut.String(), "[y/N]", "%s: no prompt", name)
	}
	assert.Zero(t, e.calls.Load(), "nothing reached the router")
	assert.Equal(t, "admitting", e.snapshot(t).State)
}
