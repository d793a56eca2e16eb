package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/engine/profile"
	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/qualification"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/server"
)

const (
	testModel    = "qual/llama-3.1-8b"
	testCaller   = "cli-caller-token-0123456789"
	testAdmin    = "cli-admin-token-0123456789"
	testApproval = "cli-approval-token-0123456789"
)

// tripwire is a listener that fails the test on any connection: the address of a router and of
// members that must never be contacted.
func tripwire(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Errorf("a connection reached %s, which nothing may contact", ln.Addr())
			_ = c.Close()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	return "http://" + ln.Addr().String()
}

// qualFile writes a qualification file for a router and two members; digestToken, when set,
// records the approval digest made with it.
func qualFile(t *testing.T, routerURL string, members [2]string, output, digestToken string) string {
	t.Helper()
	body := fmt.Sprintf(`qualification: cli
output: %s
router:
  url: %s
  alias: chat
  admin_token_env: CLI_ADMIN
  caller_token_env: CLI_CALLER
tier:
  id: pool
  served_model: %s
  strategy: capacity
  provenance:
    statement: anvil-qualify CLI test, fake vLLM
    engine_version: %s
  members:
    - {id: m0, url: %s, max_concurrency: 2}
    - {id: m1, url: %s, max_concurrency: 2}
workload:
  closed: {clients: 4}
  prompt_tokens: {dist: constant, value: 16}
  output_tokens: {dist: uniform, min: 16, max: 48}
  streaming: 0.7
phases:
  matched: {requests: 40, warmup: 4}
  sustained: {duration: 1s}
  failure: {duration: 10m, hold: 200ms, drain_wait: 10m} # the load ends when the member is back; this only bounds it
  sample_every: 100ms
  restore_timeout: 10m
slo:
  min_success: 0.99 # no latency target: a verdict must not hang on this machine's speed (gate_test covers them)
`, output, routerURL, testModel, fakevllm.VLLMVersion, members[0], members[1])
	if digestToken != "" {
		p, err := qualification.Parse([]byte(body))
		require.NoError(t, err)
		d, err := qualification.Digest(digestToken, p.Fingerprint())
		require.NoError(t, err)
		body += "approval:\n  digest: " + d + "\n"
	}
	path := filepath.Join(t.TempDir(), "QUAL.yaml")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	return path
}

func envWith(vars map[string]string) env {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

var tokens = map[string]string{"CLI_ADMIN": testAdmin, "CLI_CALLER": testCaller}

func runCLI(t *testing.T, lookup env, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), args, &stdout, &stderr, lookup)
	return code, stdout.String(), stderr.String()
}

// plan is inert: it validates the file and prints the procedure, and contacts nothing, not even
// to check a token.
func TestPlanSendsNothing(t *testing.T) {
	addr := tripwire(t)
	out := t.TempDir()
	file := qualFile(t, addr, [2]string{addr + "/m0", addr + "/m1"}, out, "")
	code, stdout, stderr := runCLI(t, envWith(tokens), "plan", "-f", file)
	require.Equal(t, 0, code, stderr)
	for _, want := range []string{"# Qualification plan: cli", "Plan fingerprint: `sha256:", "Approval: **none recorded.**",
		"environment variable CLI_ADMIN (set)", "**quiesces** it", "Promotes nothing"} {
		assert.Contains(t, stdout, want)
	}
	assert.NotContains(t, stdout, testAdmin)
	code, stdout, _ = runCLI(t, envWith(nil), "plan", "-f", file, "--json")
	require.Equal(t, 0, code)
	var p map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &p))
	assert.Equal(t, qualification.PlanFormat, p["format"])
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.Empty(t, entries, "plan writes no run directory")
}

// run refuses, sending nothing and writing nothing, without --approve, without a token, with a
// malformed or wrong token, without a recorded digest, or when the plan changed after approval.
func TestRunWithoutApprovalSendsNothing(t *testing.T) {
	addr := tripwire(t)
	members := [2]string{addr + "/m0", addr + "/m1"}
	out := t.TempDir()
	approved := qualFile(t, addr, members, out, testApproval)
	unapproved := qualFile(t, addr, members, out, "")
	changed := filepath.Join(t.TempDir(), "changed.yaml")
	data, err := os.ReadFile(approved)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(changed, bytes.Replace(data, []byte("min_success: 0.99"), []byte("min_success: 0.5"), 1), 0o600))
	withToken := func(tok string) env {
		vars := map[string]string{qualification.ApprovalEnv: tok}
		for k, v := range tokens {
			vars[k] = v
		}
		return envWith(vars)
	}
	cases := []struct {
		name   string
		lookup env
		args   []string
		want   error
	}{
		{"no --approve", withToken(testApproval), []string{"run", "-f", approved}, qualification.ErrNotApproved},
		{"no token", envWith(tokens), []string{"run", "-f", approved, "--approve"}, qualification.ErrNoToken},
		{"wrong token", withToken("not-the-approval-token"), []string{"run", "-f", approved, "--approve"}, qualification.ErrDigestMismatch},
		{"wrong token by flag", envWith(tokens), []string{"run", "-f", approved, "--approve", "--approval-token", testApproval + "x"}, qualification.ErrDigestMismatch},
		{"malformed token", withToken("short"), []string{"run", "-f", approved, "--approve"}, qualification.ErrTokenForm},
		{"no digest recorded", withToken(testApproval), []string{"run", "-f", unapproved, "--approve"}, qualification.ErrNoDigest},
		{"plan changed after approval", withToken(testApproval), []string{"run", "-f", changed, "--approve"}, qualification.ErrDigestMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, c.lookup, c.args...)
			assert.Equal(t, exitUsage, code)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, c.want.Error())
			assert.NotContains(t, stderr, testApproval)
		})
	}
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.Empty(t, entries, "a refused run writes no run directory")
}

// digest prints the line to record, from the environment or the flag, and sends nothing.
func TestDigestSendsNothing(t *testing.T) {
	addr := tripwire(t)
	file := qualFile(t, addr, [2]string{addr + "/a", addr + "/b"}, t.TempDir(), "")
	code, fromEnv, stderr := runCLI(t, envWith(map[string]string{qualification.ApprovalEnv: testApproval}), "digest", "-f", file)
	require.Equal(t, 0, code, stderr)
	code, fromFlag, _ := runCLI(t, envWith(nil), "digest", "-f", file, "--approval-token", testApproval)
	require.Equal(t, 0, code)
	assert.Equal(t, fromEnv, fromFlag)
	assert.Contains(t, fromEnv, "approval:\n  digest: hmac-sha256:")
	assert.NotContains(t, fromEnv, testApproval)
	code, _, stderr = runCLI(t, envWith(nil), "digest", "-f", file)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, qualification.ErrNoToken.Error())
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("qualification: x\nsecret_token: hunter2\n"), 0o600))
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no file", []string{"plan"}, "-f QUAL.yaml is required"},
		{"missing file", []string{"plan", "-f", filepath.Join(dir, "none.yaml")}, "cannot read the qualification file"},
		{"a directory", []string{"plan", "-f", dir}, "is not a regular file"},
		{"unknown key", []string{"plan", "-f", bad}, "qualification: secret_token: unknown key"},
		{"positional argument", []string{"plan", "extra"}, "plan takes no arguments"},
		{"unknown flag", []string{"run", "--approved"}, "unknown flag"},
		{"verify without a directory", []string{"verify"}, "verify takes one run directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, envWith(nil), c.args...)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, stderr, c.want)
			assert.NotContains(t, stderr, "hunter2")
		})
	}
}

// The whole run against a real router in front of real fake-vLLM members: every phase completes,
// the member taken out comes back, the run is labelled synthetic everywhere, the verdict is not
// promotable, and the artifact set matches its manifest and carries no token.
func TestRunAgainstFakeMembers(t *testing.T) {
	routerURL, members, srv := startRouter(t)
	out := t.TempDir()
	file := qualFile(t, routerURL, members, out, testApproval)
	lookup := envWith(map[string]string{"CLI_ADMIN": testAdmin, "CLI_CALLER": testCaller, qualification.ApprovalEnv: testApproval})
	code, stdout, stderr := runCLI(t, lookup, "run", "-f", file, "--approve")
	// stdout lists the verdict's reasons, each failed check with its detail: a failure says why.
	why := "stdout:\n" + stdout + "\nstderr:\n" + stderr
	require.Equal(t, 0, code, why)
	assert.Contains(t, stdout, "evidence: synthetic\nverdict: pass (promotable: false)\nrouter restored: true\n", why)
	for _, p := range qualification.PhaseNames() {
		assert.Contains(t, stderr, p+": passed", why)
	}

	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	dir := filepath.Join(out, entries[0].Name())
	code, vout, _ := runCLI(t, envWith(nil), "verify", dir)
	require.Equal(t, 0, code)
	assert.Contains(t, vout, "evidence synthetic, verdict pass")
	m, err := qualification.Verify(dir)
	require.NoError(t, err)
	listed := map[string]bool{}
	for _, f := range m.Files {
		listed[f.Path] = true
		data, err := os.ReadFile(filepath.Join(dir, f.Path))
		require.NoError(t, err)
		for _, secret := range []string{testAdmin, testCaller, testApproval} {
			assert.NotContains(t, string(data), secret, "%s carries a token", f.Path)
		}
		if strings.HasSuffix(f.Path, ".json") && strings.HasPrefix(f.Path, "phases/") {
			var rep qualification.PhaseReport
			require.NoError(t, json.Unmarshal(data, &rep))
			assert.Equal(t, qualification.EvidenceSynthetic, rep.Evidence, f.Path)
			assert.Equal(t, qualification.StatusPassed, rep.Status, "%s: %+v", f.Path, rep.Checks)
		}
		if strings.HasSuffix(f.Path, ".md") && f.Path != "plan.md" { // the plan is written before any evidence
			assert.Contains(t, string(data), "SYNTHETIC", "%s says what kind of evidence it is", f.Path)
		}
	}
	for _, want := range []string{"plan.json", "plan.md", "verdict.json", "promotion-request.json", "promotion-request.md",
		"raw/baseline.jsonl", "raw/matched.jsonl", "raw/sustained.jsonl", "raw/failure.jsonl",
		"router/capacity-before.json", "router/capacity-after.json", "router/decisions-summary-before.json",
		"router/decisions-summary-after.json", "router/admission-before.json", "router/status-after.json",
		"plots/matched-latency-cdf.png", "phases/4-failure.md", "phases/6-gate.json"} {
		assert.True(t, listed[want], "the manifest lists %s", want)
	}
	var pr qualification.PromotionRequest
	require.NoError(t, json.Unmarshal(readFile(t, filepath.Join(dir, "promotion-request.json")), &pr))
	assert.Equal(t, qualification.PromotionNot, pr.Status)
	assert.Contains(t, string(readFile(t, filepath.Join(dir, "promotion-request.md"))), "NOT PROMOTABLE")

	// The failure phase took m0 (the default: the first member) out and put it back, through the
	// transition API.
	var fail qualification.PhaseReport
	require.NoError(t, json.Unmarshal(readFile(t, filepath.Join(dir, "phases", "4-failure.json")), &fail))
	var actions []string
	for _, a := range fail.Actions {
		actions = append(actions, a.Action+" "+a.Member+" "+a.Result)
	}
	assert.Equal(t, []string{"quiesce m0 changed", "drain m0 drained", "readmit m0 changed"}, actions)

	// The raw file is the bench's own format, with both halves of the matched pair; the routed
	// half is exactly what the router recorded.
	f, err := os.Open(filepath.Join(dir, "raw", "matched.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	h, recs, err := bench.ReadRaw(f)
	require.NoError(t, err)
	require.Len(t, h.Targets, 2)
	assert.Equal(t, []string{"direct", "routed"}, []string{h.Targets[0].Name, h.Targets[1].Name})
	assert.Len(t, recs, 2*(40+4))
	assert.NotEmpty(t, srv.Decisions().Recent(1))

	// A tampered artifact fails verification.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plan.md"), []byte("edited"), 0o600))
	code, _, stderr = runCLI(t, envWith(nil), "verify", dir)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "plan.md differs from its manifest entry")
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

// startRouter starts two fake-vLLM members and a real router in front of them (a capacity tier,
// ceilings 2 + 2, an admission queue so a closed loop at the ceiling waits rather than fails).
func startRouter(t *testing.T) (string, [2]string, *server.Server) {
	t.Helper()
	tiny, err := profile.Lookup("tiny")
	require.NoError(t, err)
	cluster, err := fakevllm.StartCluster(t.Context(), fakevllm.Options{Models: []string{testModel}, Profile: tiny, Seed: 3}, 2)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cluster.Close() })
	urls := cluster.URLs()
	yaml := fmt.Sprintf(`listen: 127.0.0.1:0
shutdown_grace: 5s
auth:
  caller_tokens: [%s]
  admin_token: %s
intent_file: %s
readiness: {interval: 30s, timeout: 30s} # probed before serving; no later probe may time out on a loaded machine
aliases:
  - {id: chat, tier: pool}
tiers:
  - id: pool
    kind: replica
    served_model: %s
    host: 127.0.0.1
    provenance: anvil-qualify CLI test, fake vLLM
    replica_strategy: capacity
    queue: {max_waiting: 64, timeout: 10m} # a waiting request is never refused for the machine's slowness
    gates: {max_context_tokens: 1024}
    members:
      - {id: m0, endpoint: %s, max_concurrency: 2}
      - {id: m1, endpoint: %s, max_concurrency: 2}
`, testCaller, testAdmin, filepath.Join(t.TempDir(), "intent.json"), testModel, urls[0], urls[1])
	cfg, err := load.Parse([]byte(yaml), func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	srv, err := server.New(cfg, server.Options{})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-served)
	})
	return "http://" + ln.Addr().String(), [2]string{urls[0], urls[1]}, srv
}
