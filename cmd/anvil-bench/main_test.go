package main

import (
	"bytes"
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

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/scenarios"
	"github.com/anvil-llm/anvil/sim"
)

// openAI is a minimal OpenAI-compatible server for CLI tests: every chat request gets a short
// stream, or a JSON answer when not streamed.
func openAI(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !bytes.Contains(body, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"object":"chat.completion","choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, f := range []string{
			`{"object":"chat.completion.chunk","choices":[{"delta":{"content":"h"}}]}`,
			`{"object":"chat.completion.chunk","choices":[{"delta":{"content":"i"}}]}`,
			`{"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}`,
			`[DONE]`,
		} {
			_, _ = io.WriteString(w, "data: "+f+"\n\n")
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// Bad flags and inputs are usage errors (exit 2) with a message, before anything is sent.
func TestUsageErrors(t *testing.T) {
	srv := openAI(t)
	dir := t.TempDir()
	badRaw := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(badRaw, []byte("{\"format\":\"nope\"}\n"), 0o600))
	base := []string{"run", "--url", srv.URL, "--model", "m"}
	cases := map[string][]string{
		"no url":                    {"run", "--model", "m", "--clients", "1", "--requests", "1"},
		"no model":                  {"run", "--url", srv.URL, "--clients", "1", "--requests", "1"},
		"no load":                   append(base, "--requests", "1"),
		"both loops":                append(base, "--clients", "1", "--rate", "1", "--requests", "1"),
		"no count or duration":      append(base, "--clients", "1"),
		"count and duration":        append(base, "--clients", "1", "--requests", "1", "--duration", "1s"),
		"zero requests":             append(base, "--clients", "1", "--requests", "0"),
		"scenario and clients":      append(base, "--scenario", "twenty-concurrent", "--clients", "3"),
		"unknown scenario":          append(base, "--scenario", "no-such-scenario"),
		"process in a closed loop":  append(base, "--clients", "1", "--requests", "1", "--process", "gamma"),
		"think in an open loop":     append(base, "--rate", "1", "--requests", "1", "--think", "1s"),
		"gamma without shape":       append(base, "--rate", "1", "--requests", "1", "--process", "gamma"),
		"bad rate":                  append(base, "--rate", "-1", "--requests", "1"),
		"bad clients":               append(base, "--clients", "0", "--requests", "1"),
		"bad distribution":          append(base, "--clients", "1", "--requests", "1", "--prompt-tokens", "uniform:min=5"),
		"distribution out of range": append(base, "--clients", "1", "--requests", "1", "--output-tokens", "0"),
		"bad streaming share":       append(base, "--clients", "1", "--requests", "1", "--streaming", "1.5"),
		"bad endpoint":              append(base, "--clients", "1", "--requests", "1", "--endpoint", "embeddings"),
		"bad goodput":               append(base, "--clients", "1", "--requests", "1", "--goodput", "ttft=5"),
		"unknown goodput metric":    append(base, "--clients", "1", "--requests", "1", "--goodput", "itl:5"),
		"bad label":                 append(base, "--clients", "1", "--requests", "1", "--label", "a b"),
		"bad plot format":           append(base, "--clients", "1", "--requests", "1", "--plot-format", "gif"),
		"missing output directory":  append(base, "--clients", "1", "--requests", "1", "--json", filepath.Join(dir, "no", "r.json")),
		"error rate without window": append(base, "--clients", "1", "--requests", "1", "--max-error-rate", "0.5"),
		"bad timeout":               append(base, "--clients", "1", "--requests", "1", "--timeout", "0s"),
		"missing token file":        append(base, "--clients", "1", "--requests", "1", "--token-file", filepath.Join(dir, "none")),
		"ftp url":                   {"run", "--url", "ftp://x", "--model", "m", "--clients", "1", "--requests", "1"},
		"url with credentials":      {"run", "--url", "http://u:p@x", "--model", "m", "--clients", "1", "--requests", "1"},
		"url with query":            {"run", "--url", "http://x/?a=1", "--model", "m", "--clients", "1", "--requests", "1"},
		"positional argument":       append(base, "--clients", "1", "--requests", "1", "extra"),
		"unknown flag":              append(base, "--bogus"),
		"compare without members":   {"compare", "--direct-model", "m", "--url", srv.URL, "--model", "a", "--clients", "1", "--requests", "1"},
		"compare without alias":     {"compare", "--member", srv.URL, "--direct-model", "m", "--url", srv.URL, "--clients", "1", "--requests", "1"},
		"compare zero rounds":       {"compare", "--member", srv.URL, "--direct-model", "m", "--url", srv.URL, "--model", "a", "--clients", "1", "--requests", "1", "--rounds", "0"},
		"report without file":       {"report"},
		"report of a missing file":  {"report", filepath.Join(dir, "none.jsonl")},
		"report of a bad file":      {"report", badRaw},
		"report with bad goodput":   {"report", badRaw, "--goodput", "x"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := runCLI(t, args...)
			assert.Equal(t, exitUsage, code, stderr)
			assert.True(t, strings.HasPrefix(stderr, "anvil-bench: "), stderr)
		})
	}
}

// run writes every output, and report rebuilds the same result from the raw file alone.
func TestRunOutputsAndReport(t *testing.T) {
	srv := openAI(t)
	dir := t.TempDir()
	t.Setenv("BENCH_TEST_TOKEN", "s3cret")
	out := func(name string) string { return filepath.Join(dir, name) }
	code, stdout, stderr := runCLI(t, "run", "--url", srv.URL, "--model", "m", "--token-env", "BENCH_TEST_TOKEN",
		"--rate", "200", "--process", "constant", "--requests", "40", "--streaming", "0.5", "--warmup", "3",
		"--goodput", "ttft:10000,e2el:10000", "--label", "capacity",
		"--json", out("r.json"), "--markdown", out("r.md"), "--raw", out("r.jsonl"), "--plots", out("plots"), "--plot-format", "svg")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "Successful requests")
	assert.NotContains(t, stdout+stderr, "s3cret")
	for _, f := range []string{"r.json", "r.md", "r.jsonl", "plots/capacity-latency-cdf.svg", "plots/capacity-token-cdf.svg"} {
		info, err := os.Stat(out(f))
		require.NoError(t, err, f)
		assert.Positive(t, info.Size(), f)
	}
	var r bench.Result
	require.NoError(t, jsonUnmarshalFile(out("r.json"), &r))
	assert.Equal(t, 40, r.Requests)
	assert.Equal(t, 40, r.Completed)
	assert.Equal(t, "capacity", r.Label)
	f, err := os.Open(out("r.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	_, recs, err := bench.ReadRaw(f)
	require.NoError(t, err)
	streamed := 0
	for _, rec := range recs {
		if rec.Stream && !rec.Warmup {
			streamed++
		}
	}
	assert.Equal(t, streamed, r.TTFT.N, "a TTFT for every streamed request, none for the others")
	assert.Positive(t, streamed)
	assert.Less(t, streamed, 40)
	assert.Equal(t, 3, sum(r.WarmupOutcomes))
	require.NotNil(t, r.RequestGoodput)

	code, _, stderr = runCLI(t, "report", out("r.jsonl"), "--json", out("again.json"))
	require.Equal(t, 0, code, stderr)
	assert.JSONEq(t, string(readFile(t, out("r.json"))), string(readFile(t, out("again.json"))))

	// Goodput recomputed under other SLOs: nothing meets a 1 ns E2EL.
	code, _, stderr = runCLI(t, "report", out("r.jsonl"), "--goodput", "e2el:0.000001", "--json", out("strict.json"))
	require.Equal(t, 0, code, stderr)
	require.NoError(t, jsonUnmarshalFile(out("strict.json"), &r))
	require.NotNil(t, r.RequestGoodput)
	assert.Zero(t, *r.RequestGoodput)
}

// --scenario takes the load, seed, SLOs and label from the scenario; --requests shortens it.
func TestRunScenario(t *testing.T) {
	srv := openAI(t)
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := runCLI(t, "run", "--scenario", "twenty-concurrent", "--requests", "30",
		"--url", srv.URL, "--model", "chat", "--json", out)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "closed loop: 20 clients")
	var r bench.Result
	require.NoError(t, jsonUnmarshalFile(out, &r))
	assert.Equal(t, "twenty-concurrent", r.Label)
	assert.Equal(t, "twenty-concurrent", r.Scenario)
	assert.Equal(t, uint64(20), r.Seed)
	assert.Equal(t, "closed", r.Mode)
	assert.Equal(t, 30, r.Requests)
	assert.Equal(t, 30, r.Completed)
}

// A run that stops early still writes its report, and exits 1.
func TestStoppedRunExitsOne(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, "run", "--url", srv.URL, "--model", "m", "--clients", "2", "--requests", "1000",
		"--backoff", "1ms", "--max-error-rate", "0.5", "--error-window", "10", "--json", filepath.Join(dir, "r.json"))
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "stopped early")
	assert.Contains(t, stdout, "stopped early")
	var r bench.Result
	require.NoError(t, jsonUnmarshalFile(filepath.Join(dir, "r.json"), &r))
	assert.Contains(t, r.Target.Stopped, "over-saturated")
	assert.Less(t, r.Requests, 1000)
}

// anvil-bench run --scenario sends the arrivals and shapes anvil-sim run simulates for the same
// scenario and seed: the same arrival times and, request by request, the same prompt lengths and
// streaming choices.
func TestScheduleMatchesSimulator(t *testing.T) {
	sc, err := scenarios.Lookup("heterogeneous")
	require.NoError(t, err)
	sc.Duration = 2 * 60e9 // two minutes of the ten keep the test short; the rule is the same
	res, err := sim.Run(sc, sim.Options{Strategy: scenarios.StrategyCapacity})
	require.NoError(t, err)
	p := bench.FromScenario(sc)
	require.NoError(t, p.Validate())
	arr := bench.NewArrivals(*p.Workload.Open, p.Seed, 0, p.Duration)
	shapes := bench.NewShapes(p.Workload, p.Seed)
	n := 0
	for at, ok := arr.Next(); ok; at, ok = arr.Next() {
		require.Less(t, n, len(res.Requests), "the bench schedules more arrivals than the simulator")
		q := res.Requests[n]
		sh := shapes.Next()
		require.Equal(t, q.Arrival, at, "arrival %d", n)
		require.Equal(t, int(q.Prompt), sh.Prompt, "prompt %d", n)
		require.Equal(t, q.Stream, sh.Stream, "stream %d", n)
		n++
	}
	assert.Equal(t, len(res.Requests), n)
	assert.Greater(t, n, 1000)
}

func jsonUnmarshalFile(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return jsonUnmarshal(data, v)
}

func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
