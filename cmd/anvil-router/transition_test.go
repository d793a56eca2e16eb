package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/internal/routerrig"
	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/manage"
	"github.com/anvil-llm/anvil/router/server"
)

var update = flag.Bool("update", false, "rewrite "+manifestPath+" from the command tree")

// ephemeral is a real router over real fakes, in process, with a count of transition calls.
type ephemeral struct {
	srv   *server.Server
	url   string
	calls atomic.Int64
}

func startEphemeral(t *testing.T) *ephemeral {
	t.Helper()
	e := &ephemeral{}
	e.srv, e.url = routerrig.Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == manage.TransitionPath {
				e.calls.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	})
	return e
}

func (e *ephemeral) snapshot(t *testing.T) admission.Snapshot {
	t.Helper()
	tier, ok := e.srv.Admission().Tier("replicas")
	require.True(t, ok)
	return tier.Snapshot()
}

// cli runs the CLI in process against e with the given terminal and standard input.
type cli struct {
	e        *ephemeral
	terminal bool
	stdin    string
	env      map[string]string
}

func (c cli) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	env := map[string]string{EnvRouterURL: c.e.url, config.EnvAdminToken: routerrig.AdminToken}
	for k, v := range c.env {
		env[k] = v
	}
	root := newRoot(console{stdin: strings.NewReader(c.stdin), isTerminal: func() bool { return c.terminal },
		lookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok && v != "" }, doer: http.DefaultClient})
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	if err != nil {
		errOut.WriteString(err.Error())
	}
	return exitCode(err), out.String(), errOut.String()
}

func TestVerbsWithAndWithoutMember(t *testing.T) {
	e := startEphemeral(t)
	c := cli{e: e}
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"transition-status", "--tier", "replicas"}, "status replicas: status"},
		{[]string{"transition-status", "--tier", "replicas", "--member", "m01"}, "status replicas/m01: status"},
		{[]string{"quiesce", "--tier", "replicas", "--member", "m01", "--reason", "upgrade", "--yes"}, "quiesce replicas/m01: changed"},
		{[]string{"drain", "--tier", "replicas", "--member", "m01", "--yes", "--wait", "5s"}, "drain replicas/m01: drained"},
		{[]string{"quiesce", "--tier", "replicas", "--yes"}, "quiesce replicas: changed"},
		{[]string{"drain", "--tier", "replicas", "--yes"}, "drain replicas: drained"},
		{[]string{"readmit", "--tier", "replicas", "--yes"}, "readmit replicas: changed"},
		{[]string{"readmit", "--tier", "replicas", "--member", "m01", "--yes"}, "readmit replicas/m01: changed"},
	}
	for _, s := range steps {
		code, out, errOut := c.run(t, s.args...)
		require.Equal(t, 0, code, "%v: %s", s.args, errOut)
		assert.Contains(t, out, s.want)
		assert.Contains(t, out, "SCOPE")
		assert.Contains(t, out, "replicas/m00")
		assert.NotContains(t, out+errOut, e.url, "results never carry the router URL")
		assert.NotContains(t, out+errOut, routerrig.AdminToken)
	}
	snap := e.snapshot(t)
	assert.Equal(t, "admitting", snap.State)
	assert.Equal(t, "admitting", snap.Members[1].State)
}

func TestJSONOutput(t *testing.T) {
	e := startEphemeral(t)
	code, out, errOut := cli{e: e}.run(t, "quiesce", "--tier", "replicas", "--member", "m00", "--reason", "upgrade", "--yes", "--output", "json")
	require.Equal(t, 0, code, errOut)
	var resp manage.Response
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&resp))
	assert.Equal(t, manage.Response{Action: "quiesce", Tier: "replicas", MemberID: "m00", Result: "changed",
		Scope: manage.Scope{State: "quiesced", Reason: "upgrade"}, Snapshot: resp.Snapshot}, resp)
	assert.Equal(t, "quiesced", resp.Snapshot.Members[0].State)
}

// Every invalid request fails before transport with exit 2; every router refusal fails with exit 1
// and the fixed message, changing nothing.
func TestRefusals(t *testing.T) {
	e := startEphemeral(t)
	c := cli{e: e}
	before := e.snapshot(t)
	for _, args := range [][]string{
		{"quiesce", "--yes"},
		{"quiesce", "--tier", "", "--yes"},
		{"quiesce", "--tier", "replicas", "--member", "", "--yes"},
		{"quiesce", "--tier", "replicas", "--member", "../m00", "--yes"},
		{"quiesce", "--tier", "replicas", "--member", "10.0.0.5", "--yes"},
		{"quiesce", "--tier", "replicas", "--reason", "", "--yes"},
		{"quiesce", "--tier", "replicas", "--reason", "Not A Code", "--yes"},
		{"drain", "--tier", "replicas", "--wait", "1500ms", "--yes"},
		{"drain", "--tier", "replicas", "--wait", "2h", "--yes"},
		{"transition-status", "--tier", "replicas", "--output", "yaml"},
		{"transition-status", "--tier", "replicas", "extra-arg"},
		{"transition-status", "--member", "m00"},
		{"quiesce", "--tier", "replicas"}, // mutating without a terminal and without --yes
	} {
		code, _, errOut := c.run(t, args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, errOut)
	}
	assert.Zero(t, e.calls.Load(), "no invalid request reached the router")

	for _, cs := range []struct {
		args []string
		msg  string
	}{
		{[]string{"quiesce", "--tier", "nope", "--yes"}, "unknown tier [unknown_tier]"},
		{[]string{"quiesce", "--tier", "replicas", "--member", "m09", "--yes"}, "unknown member [unknown_member]"},
		{[]string{"quiesce", "--tier", "solo", "--member", "m00", "--yes"}, "members are addressable only on replica tiers [wrong_tier_kind]"},
		{[]string{"drain", "--tier", "replicas", "--yes"}, "drain requires its scope to be quiesced first [not_quiesced]"},
	} {
		code, _, errOut := c.run(t, cs.args...)
		assert.Equal(t, exitFailure, code, "%v", cs.args)
		assert.Contains(t, errOut, cs.msg)
	}
	assert.Equal(t, before, e.snapshot(t), "refusals change nothing")

	code, _, errOut := cli{e: e, env: map[string]string{config.EnvAdminToken: "wrong-token"}}.run(t, "transition-status", "--tier", "replicas")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "[invalid_admin_token]")
	assert.NotContains(t, errOut, "wrong-token")
	code, _, _ = cli{e: e, env: map[string]string{config.EnvAdminToken: ""}}.run(t, "transition-status", "--tier", "replicas")
	assert.Equal(t, exitUsage, code, "no token")
	code, _, _ = cli{e: e, env: map[string]string{EnvRouterURL: ""}}.run(t, "transition-status", "--tier", "replicas")
	assert.Equal(t, exitUsage, code, "no router")
}

// On a terminal a mutating verb shows the endpoint's dry run and asks; only y or yes applies it. A
// --dry-run never asks and never changes anything.
func TestConfirmationAndDryRun(t *testing.T) {
	e := startEphemeral(t)
	for _, answer := range []string{"", "n\n", "no\n", "maybe\n"} {
		code, out, errOut := cli{e: e, terminal: true, stdin: answer}.run(t, "quiesce", "--tier", "replicas", "--member", "m00")
		assert.Equal(t, exitFailure, code)
		assert.Empty(t, out)
		assert.Contains(t, errOut, "quiesce replicas/m00: would_change (dry run)")
		assert.Contains(t, errOut, "quiesce replicas/m00? [y/N]")
		assert.Contains(t, errOut, "not confirmed; nothing changed")
		assert.Equal(t, "admitting", e.snapshot(t).Members[0].State)
	}
	calls := e.calls.Load()
	code, out, errOut := cli{e: e, terminal: true}.run(t, "quiesce", "--tier", "replicas", "--member", "m00", "--dry-run")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "would_change (dry run)")
	assert.NotContains(t, errOut, "[y/N]", "a dry run asks nothing")
	assert.Equal(t, calls+1, e.calls.Load())
	assert.Equal(t, "admitting", e.snapshot(t).Members[0].State)

	code, out, errOut = cli{e: e, terminal: true, stdin: "y\n"}.run(t, "quiesce", "--tier", "replicas", "--member", "m00", "--reason", "upgrade")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "quiesce replicas/m00: changed")
	assert.Equal(t, "upgrade", e.snapshot(t).Members[0].Reason)
	assert.Equal(t, calls+3, e.calls.Load(), "one preview, one transition")
}

func TestAdminTokenFile(t *testing.T) {
	e := startEphemeral(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(good, []byte(routerrig.AdminToken+"\n"), 0o600))
	c := cli{e: e, env: map[string]string{config.EnvAdminToken: ""}}
	code, _, errOut := c.run(t, "transition-status", "--tier", "replicas", "--admin-token-file", good)
	assert.Equal(t, 0, code, errOut)
	code, _, _ = c.run(t, "transition-status", "--tier", "replicas", "--admin-token-file", filepath.Join(dir, "missing"))
	assert.Equal(t, exitUsage, code)
	big := filepath.Join(dir, "big")
	require.NoError(t, os.WriteFile(big, bytes.Repeat([]byte("x"), 5000), 0o600))
	code, _, _ = c.run(t, "transition-status", "--tier", "replicas", "--admin-token-file", big)
	assert.Equal(t, exitUsage, code)
}

// TestObserverToken: transition-status only reads, so an observer token (in --admin-token-file or
// ANVIL_ADMIN_TOKEN) shows it; a quiesce with one is refused by the router with 403
// insufficient_role, and nothing changes.
func TestObserverToken(t *testing.T) {
	e := startEphemeral(t)
	file := filepath.Join(t.TempDir(), "observer")
	require.NoError(t, os.WriteFile(file, []byte(routerrig.ObserverToken+"\n"), 0o600))
	c := cli{e: e, env: map[string]string{config.EnvAdminToken: ""}}
	code, out, errOut := c.run(t, "transition-status", "--tier", "replicas", "--admin-token-file", file)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "replicas")
	c.env[config.EnvAdminToken] = routerrig.ObserverToken
	code, _, errOut = c.run(t, "transition-status", "--tier", "replicas")
	require.Equal(t, 0, code, errOut)
	code, out, errOut = c.run(t, "transition-status") // every tier, without the admin-only config view
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "replicas")
	code, _, errOut = c.run(t, "quiesce", "--tier", "replicas", "--yes")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errOut, "[insufficient_role]")
	code, _, errOut = c.run(t, "reload")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errOut, "insufficient_role")
	assert.Equal(t, admission.StateAdmitting, e.snapshot(t).State, "the observer quiesced nothing")
	assert.NotContains(t, errOut, routerrig.ObserverToken)
}

// The manifest is generated from the command tree; the committed file must match it (go test
// ./cmd/anvil-router -run TestManifest -update, or make manifest, rewrites it).
func TestManifestMatchesTheCommandTree(t *testing.T) {
	got := manifest(newRoot(processConsole())).JSON()
	path := filepath.Join("..", "..", filepath.FromSlash(manifestPath))
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "the command manifest drifted: run make manifest")

	var m manage.Manifest
	require.NoError(t, json.Unmarshal(got, &m))
	paths := map[string]manage.Command{}
	for _, c := range m.Commands {
		paths[c.Path] = c
	}
	for _, verb := range []string{"transition-status", "quiesce", "drain", "readmit"} {
		c, ok := paths["anvil-router "+verb]
		require.True(t, ok, verb)
		var names []string
		for _, f := range c.Flags {
			names = append(names, f.Name)
		}
		assert.Subset(t, names, []string{"tier", "member", "router", "admin-token-file", "output"})
	}
	assert.Contains(t, paths, "anvil-router mcp")
	assert.NotContains(t, paths, "anvil-router manifest", "hidden commands stay out")
	_, helpListed := paths["anvil-router help"]
	assert.False(t, helpListed)
}

// The manifest command prints the same bytes the test compares.
func TestManifestCommand(t *testing.T) {
	code, out, err := runCmd(t, "manifest")
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Equal(t, string(manifest(newRoot(processConsole())).JSON()), out)
}

// Every positional-argument refusal exits 2, like a flag refusal.
func TestArgumentErrorsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"config", "check"}, {"decisions", "summarize"}, {"version", "x"}, {"serve", "x"}, {"nope"}} {
		code, _, err := runCmd(t, args...)
		require.Error(t, err)
		assert.Equal(t, exitUsage, code, "%v", args)
		var ue usageError
		if args[0] != "nope" {
			assert.True(t, errors.As(err, &ue))
		}
	}
}
