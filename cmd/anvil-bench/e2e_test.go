package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/bench"
	"github.com/anvil-llm/anvil/engine/profile"
	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/server"
)

const (
	e2eModel = "bench/llama-3.1-8b"
	e2eToken = "bench-e2e-caller-token"
)

// e2eConfig is a capacity tier over two members whose ceilings (2 + 3, tier 4) are below the
// bench's eight clients, so the routed run meets refusals too.
const e2eConfig = `listen: 127.0.0.1:0
auth:
  caller_tokens: [` + e2eToken + `]
decision_log:
  ring_size: 100000
aliases:
  - id: chat
    tier: pool
tiers:
  - id: pool
    kind: replica
    served_model: ` + e2eModel + `
    host: 127.0.0.1
    provenance: anvil-bench end-to-end test
    replica_strategy: capacity
    max_concurrency: 4
    gates:
      max_context_tokens: 1024
    members:
      - id: vllm-0
        endpoint: %s
        max_concurrency: 2
      - id: vllm-1
        endpoint: %s
        max_concurrency: 3
`

// The item-4 plumbing check: a short compare against real fake-vLLM members and a real router,
// where the bench's counts must equal the router's decision log and the members' own metrics.
// Nothing here looks at a latency.
func TestCompareCountsMatchRouterAndMembers(t *testing.T) {
	ctx := t.Context()
	tiny, err := profile.Lookup("tiny")
	require.NoError(t, err)
	members, err := fakevllm.StartCluster(ctx, fakevllm.Options{Models: []string{e2eModel}, Profile: tiny, Seed: 7}, 2)
	require.NoError(t, err)
	defer members.Close()
	urls := members.URLs()

	cfg, err := load.Parse([]byte(fmt.Sprintf(e2eConfig, urls[0], urls[1])), func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	srv, err := server.New(cfg, server.Options{})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	serveCtx, stopServe := context.WithCancel(ctx)
	go func() { served <- srv.Serve(serveCtx, ln) }()
	defer func() {
		stopServe()
		require.NoError(t, <-served)
	}()

	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(e2eToken+"\n"), 0o600))
	jsonFile, rawFile := filepath.Join(dir, "compare.json"), filepath.Join(dir, "raw.jsonl")
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"compare",
		"--member", urls[0], "--member", urls[1], "--direct-model", e2eModel,
		"--url", "http://" + ln.Addr().String(), "--model", "chat", "--token-file", tokenFile,
		"--clients", "8", "--requests", "150", "--warmup", "8", "--seed", "3",
		"--prompt-tokens", "uniform:min=8,max=96", "--output-tokens", "uniform:min=2,max=24", "--streaming", "0.7",
		"--endpoint", "chat", "--json", jsonFile, "--raw", rawFile, "--no-progress",
	}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr: %s", stderr.String())
	assert.NotContains(t, stdout.String()+stderr.String(), e2eToken, "the token is never printed")

	var cmp bench.Comparison
	require.NoError(t, json.Unmarshal(readFile(t, jsonFile), &cmp))
	f, err := os.Open(rawFile)
	require.NoError(t, err)
	defer f.Close()
	_, recs, err := bench.ReadRaw(f)
	require.NoError(t, err)

	direct, routed := cmp.Direct, cmp.Routed
	for _, r := range []bench.Result{direct, routed} {
		assert.Equal(t, 150, r.Requests)
		assert.Equal(t, r.Requests, r.Completed+r.Failed)
		assert.Equal(t, 8, sum(r.WarmupOutcomes))
		assert.Empty(t, r.Target.Stopped)
	}
	// The members serve everything the bench sends them directly.
	assert.Equal(t, 150, direct.Completed, "direct outcomes: %v", direct.Outcomes)
	assert.Equal(t, 150, count(direct.Outcomes, "ok"))

	// Routed: every request the bench sent has exactly one decision record, of the same class.
	decisions := srv.Decisions().Recent(1 << 30)
	byOutcome := map[decisionlog.Outcome]int{}
	for _, d := range decisions {
		byOutcome[d.Outcome]++
	}
	routedSent := routed.Requests + sum(routed.WarmupOutcomes)
	assert.Len(t, decisions, routedSent)
	assert.Equal(t, routed.Completed+count(routed.WarmupOutcomes, "ok"), byOutcome[decisionlog.OutcomeSuccess])
	assert.Equal(t, count(routed.Outcomes, "http_503")+count(routed.WarmupOutcomes, "http_503"), byOutcome[decisionlog.OutcomeNotAdmitted])
	assert.Equal(t, routedSent, byOutcome[decisionlog.OutcomeSuccess]+byOutcome[decisionlog.OutcomeNotAdmitted], "no other outcome: %v", byOutcome)
	assert.Positive(t, count(routed.Outcomes, "http_503"), "eight clients against a ceiling of four meet refusals")
	// The router answers its refusals with Retry-After: 1, and the closed loop honoured each one.
	assert.Equal(t, count(routed.Outcomes, "http_503"), routed.RetryAfter)

	// Each member's own success counter equals what the bench sent it directly (warm-ups
	// included) plus what the router's decisions sent it; nothing is left running.
	directOK := make([]int, 2)
	for _, r := range recs {
		if r.Target == "direct" && r.Outcome == bench.OK {
			directOK[r.URL]++
		}
	}
	for i, m := range members.Members() {
		routedOK := 0
		for _, d := range decisions {
			if d.Outcome == decisionlog.OutcomeSuccess && d.Member == fmt.Sprintf("vllm-%d", i) {
				routedOK++
			}
		}
		fams := scrape(t, m.URL())
		assert.Equal(t, float64(directOK[i]+routedOK), metricSum(fams, "vllm:request_success_total"), "member %d", i)
		assert.Equal(t, 0.0, metricSum(fams, "vllm:num_requests_running"), "member %d", i)
		assert.Equal(t, 0.0, metricSum(fams, "vllm:num_requests_waiting"), "member %d", i)
	}
	assert.Equal(t, 150+8, directOK[0]+directOK[1])

	// The report command rebuilds the same comparison from the raw file.
	jsonAgain := filepath.Join(dir, "again.json")
	stdout.Reset()
	require.Equal(t, 0, run(ctx, []string{"report", rawFile, "--json", jsonAgain}, &stdout, &stderr), stderr.String())
	assert.JSONEq(t, string(readFile(t, jsonFile)), string(readFile(t, jsonAgain)))
	assert.Contains(t, stdout.String(), "Direct vs routed")
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

func sum(cs []bench.Count) int {
	n := 0
	for _, c := range cs {
		n += c.N
	}
	return n
}

func count(cs []bench.Count, key string) int {
	for _, c := range cs {
		if c.Key == key {
			return c.N
		}
	}
	return 0
}

// scrape reads a member's /metrics over HTTP, as the router and vLLM's own tools do.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// metricSum adds a counter's or gauge's samples over all label values.
func metricSum(fams map[string]*dto.MetricFamily, name string) float64 {
	fam, ok := fams[name]
	if !ok {
		return -1
	}
	total := 0.0
	for _, m := range fam.GetMetric() {
		switch {
		case m.GetCounter() != nil:
			total += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			total += m.GetGauge().GetValue()
		}
	}
	return total
}
