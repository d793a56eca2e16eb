package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/ident"
)

// runCmd runs the CLI in-process and returns its exit code and standard output.
func runCmd(t *testing.T, args ...string) (int, string, error) {
	t.Helper()
	root := newRoot(console{stdin: strings.NewReader(""), isTerminal: func() bool { return false },
		lookupEnv: func(string) (string, bool) { return "", false }, doer: http.DefaultClient})
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return exitCode(err), out.String(), err
}

// The README's first Quick start command: the demo drives a routed workload end to end and exits 0.
func TestDemoDrivesAWorkload(t *testing.T) {
	code, out, err := runCmd(t, "serve", "--demo", "--drive", "20")
	require.NoError(t, err, out)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "drove 20 requests (20 ok)")
	assert.Contains(t, out, "demo-replicas/vllm-0")
	assert.Contains(t, out, "demo-replicas/vllm-1")
	assert.Regexp(t, `/v1/audio/transcriptions +[1-9]\d* ok`, out, "the demo transcribes through the direct audio tier")
	assert.Regexp(t, `/v1/audio/speech +[1-9]\d* ok`, out, "and speaks through it")
	assert.Contains(t, out, "tier demo-audio records=")
	assert.Contains(t, out, "replica_scheduler decisions=")
	assert.Contains(t, out, "attempts=20")
	assert.Contains(t, out, "trace context: 20 of 20 decision records carry the caller's trace_id",
		"every driven request's traceparent crosses the hop (issue 29)")
	assert.Regexp(t, `demo-replicas/vllm-\d received traceparent 00-00000000000a7011[0-9a-f]{16}-[0-9a-f]{16}-01 \(GET http://`, out)
	assert.Contains(t, out, "/admin/v1/capacity -H 'Authorization: Bearer ", "the banner points at the capacity JSON")
	assert.Contains(t, out, "/metrics -H 'Authorization: Bearer ", "and at the metrics")
	assert.Regexp(t, `status page: http://127\.0\.0\.1:\d+/admin/ui/ \(sign in with the admin token above\)`, out, "and at the status page")
	assert.Contains(t, out, "`anvil-router serve --demo` stays up for the page")
}

func TestServeFlagErrors(t *testing.T) {
	cases := [][]string{
		{"serve"},
		{"serve", "--demo", "--config", "x.yaml"},
		{"serve", "--config", "x.yaml", "--drive", "3"},
		{"serve", "--demo", "--drive", "-1"},
		{"serve", "--bogus"},
		{"serve", "--config", filepath.Join(t.TempDir(), "missing.yaml")},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, _, err := runCmd(t, args...)
			assert.Error(t, err)
			assert.Equal(t, exitUsage, code)
		})
	}
}

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	require.NoError(t, os.WriteFile(good, []byte(`listen: 127.0.0.1:8080
auth:
  caller_tokens: [super-secret-caller-token]
aliases: [{id: chat, tier: t}]
tiers:
  - id: t
    kind: direct
    served_model: m
    endpoint: http://127.0.0.1:9000
    gates: {max_context_tokens: 1024}
`), 0o600))
	code, out, err := runCmd(t, "config", "check", good)
	require.NoError(t, err, out)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "served_model: m")
	assert.NotContains(t, out, "super-secret-caller-token", "secrets are redacted")

	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("listen: 127.0.0.1:8080\nbogus: 1\n"), 0o600))
	code, _, err = runCmd(t, "config", "check", bad)
	require.Error(t, err)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, err.Error(), "bogus")
}

func TestDecisionsSummarize(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "d.jsonl")
	require.NoError(t, os.WriteFile(path, []byte("{\"not\":\"a record\"}\n"), 0o600))
	code, _, err := runCmd(t, "decisions", "summarize", path)
	require.Error(t, err, "strict ingestion refuses unknown fields")
	assert.Equal(t, exitUsage, code)

	require.NoError(t, os.WriteFile(path, nil, 0o600))
	code, out, err := runCmd(t, "decisions", "summarize", path)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "records=0")
}

// A capture cut short (a crash mid-line) or holding a foreign line is refused whole by default and
// summarized around the bad lines with --skip-invalid.
func TestDecisionsSummarizeSkipInvalid(t *testing.T) {
	var capture bytes.Buffer
	log, err := decisionlog.New(16, &capture)
	require.NoError(t, err)
	for i := range 3 {
		require.NoError(t, log.Add(decisionlog.Record{
			RequestID: fmt.Sprintf("req-%d", i), Alias: "chat", Tier: "solo", Route: decisionlog.RouteDirect,
			Outcome: decisionlog.OutcomeSuccess, Attempts: 1, Status: 200, Start: time.Unix(1_800_000_000, 0),
			Duration: time.Millisecond, Caller: "team-a",
		}))
	}
	lines := strings.SplitAfter(capture.String(), "\n")
	require.GreaterOrEqual(t, len(lines), 3)
	long := strings.Repeat("x", ident.MaxLineBytes+100) + "\n"
	broken := lines[0] + "{\"not\":\"a record\"}\n" + long + lines[1] + lines[2][:10] // the last line is cut short
	path := filepath.Join(t.TempDir(), "broken.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(broken), 0o600))

	code, _, err := runCmd(t, "decisions", "summarize", path)
	require.Error(t, err)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, err.Error(), "line 2")

	code, out, err := runCmd(t, "decisions", "summarize", "--skip-invalid", path)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "records=2")
	assert.Contains(t, out, "skipped 3 invalid lines; first: decisionlog: line 2")
	assert.Contains(t, out, "records=2 skipped=3 ", "the summary counts the lines stderr says were skipped")
	assert.Contains(t, out, "caller team-a records=2 attempts=2 success=2\n", "per caller label (issue 27)")

	root := newRoot(console{stdin: strings.NewReader(""), isTerminal: func() bool { return false },
		lookupEnv: func(string) (string, bool) { return "", false }, doer: http.DefaultClient})
	var stdout, stderr bytes.Buffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetArgs([]string{"decisions", "summarize", "--skip-invalid", "--json", path})
	require.NoError(t, root.Execute())
	var s decisionlog.Summary
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &s), stdout.String())
	assert.Equal(t, 2, s.Records)
	assert.Equal(t, 3, s.Skipped, "--json carries the count too")
	require.Len(t, s.Callers, 1)
	assert.Equal(t, "team-a", s.Callers[0].Caller)
	assert.Contains(t, stderr.String(), "skipped 3 invalid lines")
}
