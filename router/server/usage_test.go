package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/decisionlog"
)

// usageRequest is one request of the mixed run: an endpoint, a body, and whether it streams.
type usageRequest struct {
	name, path, body string
	stream           bool
}

func mixedRun() []usageRequest {
	return []usageRequest{
		{"chat", "/v1/chat/completions", `{"model":"chat","messages":[{"role":"user","content":"count these words please"}],"max_tokens":5,"ignore_eos":true}`, false},
		{"chat stream", "/v1/chat/completions", `{"model":"chat","messages":[{"role":"user","content":"and these"}],"max_tokens":7,"stream":true,"stream_options":{"include_usage":true}}`, true},
		{"completion", "/v1/completions", `{"model":"chat","prompt":"one two three four","max_tokens":3,"ignore_eos":true}`, false},
		{"completion stream", "/v1/completions", `{"model":"chat","prompt":"five six","max_tokens":4,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`, true},
		{"responses", "/v1/responses", `{"model":"chat","input":"a question of some length","max_output_tokens":6}`, false},
		{"responses stream", "/v1/responses", `{"model":"chat","input":"another question","max_output_tokens":8,"stream":true}`, true},
	}
}

// clientUsage is the usage the caller received in an answer, the last report of a stream (Responses'
// input/output tokens read as prompt/completion); ok is false when the answer reported none.
func clientUsage(t *testing.T, body string, stream bool) (u decisionlog.Usage) {
	t.Helper()
	docs := []string{body}
	if stream {
		docs = nil
		sc := bufio.NewScanner(strings.NewReader(body))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				docs = append(docs, d)
			}
		}
	}
	for _, d := range docs {
		var doc struct {
			Usage    json.RawMessage `json:"usage"`
			Response struct {
				Usage json.RawMessage `json:"usage"`
			} `json:"response"`
		}
		if json.Unmarshal([]byte(d), &doc) != nil {
			continue // [DONE]
		}
		raw := doc.Usage
		if len(doc.Response.Usage) > 0 {
			raw = doc.Response.Usage
		}
		var c struct {
			Prompt     *int64 `json:"prompt_tokens"`
			Completion int64  `json:"completion_tokens"`
			Input      *int64 `json:"input_tokens"`
			Output     int64  `json:"output_tokens"`
		}
		if len(raw) == 0 || string(raw) == "null" || json.Unmarshal(raw, &c) != nil {
			continue
		}
		if c.Prompt != nil {
			u = decisionlog.Usage{Prompt: *c.Prompt, Completion: c.Completion, Reported: true}
		} else if c.Input != nil {
			u = decisionlog.Usage{Prompt: *c.Input, Completion: c.Output, Reported: true}
		}
	}
	return u
}

// usageValue is a usage family's value for exactly these labels (name -> value), -1 when absent.
func usageValue(mfs map[string]*dto.MetricFamily, family string, labels map[string]string) float64 {
	for _, m := range mfs[family].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if assert.ObjectsAreEqual(labels, got) {
			return m.GetCounter().GetValue()
		}
	}
	return -1
}

func usageFamilies(t *testing.T, r *router) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := r.srv.Registry().Gather()
	require.NoError(t, err)
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	require.NoError(t, err)
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "anvil_router_usage") {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
	return out
}

// TestUsageMatchesTheMembersOwnCounts is the acceptance run: ordinary, streaming and Responses
// requests through a real router to real fake members; the router's usage counters, its decision
// records and their summary equal, exactly, what the members reported to the caller and what their
// engines counted. Then a stream without include_usage and a member that reports none are counted
// unknown, and add no token.
func TestUsageMatchesTheMembersOwnCounts(t *testing.T) {
	ms := startMembers(t, 2)
	var logs lockedBuffer
	r := startRouterWith(t, replicaYAML(ms, tierOpts{strategy: "round_robin"}),
		routerOptions{logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	var sent decisionlog.Usage
	n := 0
	for range 3 {
		for _, q := range mixedRun() {
			code, body, _ := r.do(t, q.path, q.body)
			require.Equal(t, http.StatusOK, code, "%s: %s", q.name, body)
			u := clientUsage(t, body, q.stream)
			require.True(t, u.Reported, "%s reports usage", q.name)
			sent.Prompt += u.Prompt
			sent.Completion += u.Completion
			n++
		}
	}
	r.wait(t, n)

	mfs := usageFamilies(t, r)
	var counted decisionlog.Usage
	for i, m := range ms {
		own := m.fake.Metrics()
		labels := map[string]string{"tier": "replicas", "member": memberID(i), "caller": "caller-1"}
		prompt := usageValue(mfs, "anvil_router_usage_tokens_total", with(labels, "type", "prompt"))
		completion := usageValue(mfs, "anvil_router_usage_tokens_total", with(labels, "type", "completion"))
		assert.Equal(t, float64(own.PromptTokens), prompt, "%s: the router's prompt count is the member's own", memberID(i))
		assert.Equal(t, float64(own.GenerationTokens), completion, "%s: completion", memberID(i))
		assert.Zero(t, usageValue(mfs, "anvil_router_usage_unknown_total", labels), "seeded, never counted")
		counted.Prompt += int64(prompt)
		counted.Completion += int64(completion)
	}
	assert.Equal(t, sent.Prompt, counted.Prompt, "what the callers were told is what the router counted")
	assert.Equal(t, sent.Completion, counted.Completion)
	sum := decisionlog.Summarize(r.srv.Decisions().Recent(n))
	assert.Equal(t, decisionlog.UsageSummary{PromptTokens: sent.Prompt, CompletionTokens: sent.Completion, Reported: n}, sum.Usage)
	assertAccessLogTokens(t, logs.String(), r.srv.Decisions().Recent(n))

	// Unknown: a stream that did not ask for usage, and a member that reports none.
	code, _, _ := r.do(t, "/v1/chat/completions", `{"model":"chat","messages":[{"role":"user","content":"x"}],"max_tokens":3,"stream":true}`)
	require.Equal(t, http.StatusOK, code)
	for _, m := range ms {
		fault(t, m, fakevllm.Faults{NoUsage: true})
	}
	code, body, _ := r.do(t, "/v1/chat/completions", mixedRun()[0].body)
	require.Equal(t, http.StatusOK, code)
	require.False(t, clientUsage(t, body, false).Reported)
	r.wait(t, 2)
	after := usageFamilies(t, r)
	unknown := 0.0
	for i := range ms {
		labels := map[string]string{"tier": "replicas", "member": memberID(i), "caller": "caller-1"}
		unknown += usageValue(after, "anvil_router_usage_unknown_total", labels)
		for _, typ := range []string{"prompt", "completion"} {
			assert.Equal(t, usageValue(mfs, "anvil_router_usage_tokens_total", with(labels, "type", typ)),
				usageValue(after, "anvil_router_usage_tokens_total", with(labels, "type", typ)), "never estimated")
		}
	}
	assert.Equal(t, 2.0, unknown)
	last := decisionlog.Summarize(r.srv.Decisions().Recent(2)).Usage
	assert.Equal(t, decisionlog.UsageSummary{Unknown: 2}, last)
}

func memberID(i int) string { return "m0" + string(rune('0'+i)) }

func with(labels map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for lk, lv := range labels {
		out[lk] = lv
	}
	return out
}

// accessLine is the part of the "request" line the usage tests read.
type accessLine struct {
	Msg        string `json:"msg"`
	RequestID  string `json:"request_id"`
	Method     string `json:"method"`
	Path       string `json:"path"`
	Status     int    `json:"status"`
	Caller     string `json:"caller"`
	Client     string `json:"client"`
	FirstByte  *int64 `json:"first_byte_ms"`
	Duration   *int64 `json:"duration_ms"`
	Prompt     *int64 `json:"prompt_tokens"`
	Completion *int64 `json:"completion_tokens"`
}

// accessLines reads every "request" line of a JSON log.
func accessLines(t *testing.T, logs string) map[string]accessLine {
	t.Helper()
	out := map[string]accessLine{}
	dec := json.NewDecoder(strings.NewReader(logs))
	for {
		var l accessLine
		if err := dec.Decode(&l); err == io.EOF {
			return out
		} else {
			require.NoError(t, err)
		}
		if l.Msg == "request" {
			out[l.RequestID] = l
		}
	}
}

// assertAccessLogTokens: every record's access-log line carries its method, caller, client, first
// byte and the member's token counts.
func assertAccessLogTokens(t *testing.T, logs string, recs []decisionlog.Record) {
	t.Helper()
	lines := accessLines(t, logs)
	for _, rec := range recs {
		l, ok := lines[rec.RequestID]
		require.True(t, ok, "a request line for %s", rec.RequestID)
		assert.Equal(t, "POST", l.Method)
		assert.Equal(t, "caller-1", l.Caller)
		assert.Equal(t, "127.0.0.1", l.Client)
		require.NotNil(t, l.FirstByte)
		assert.Equal(t, rec.FirstByte.Milliseconds(), *l.FirstByte)
		require.NotNil(t, l.Prompt)
		require.NotNil(t, l.Completion)
		assert.Equal(t, rec.Usage.Prompt, *l.Prompt)
		assert.Equal(t, rec.Usage.Completion, *l.Completion)
	}
}

// TestAccessLogLine: the request line names the method, path, status, caller label, the
// connection's peer as the client (never a forwarded address the caller claims), time to first
// byte, duration and request ID; token counts only when the member reported them.
func TestAccessLogLine(t *testing.T) {
	ms := startMembers(t, 2)
	var logs lockedBuffer
	r := startRouterWith(t, replicaYAML(ms, tierOpts{strategy: "round_robin"}),
		routerOptions{logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, r.http.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"chat","messages":[{"role":"user","content":"x"}],"max_tokens":2}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+callerToken)
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	req.Header.Set("X-Real-Ip", "203.0.113.10")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	code, _, _ := r.do(t, "/v1/chat/completions", `{"model":"chat","messages":[{"role":"user","content":"x"}],"max_tokens":2,"stream":true}`)
	require.Equal(t, http.StatusOK, code)
	code, _, _ = r.do(t, "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`)
	require.Equal(t, http.StatusNotFound, code)
	r.wait(t, 3)

	assert.NotContains(t, logs.String(), "203.0.113", "a forwarded address is never trusted")
	recs := r.srv.Decisions().Recent(3)
	lines := accessLines(t, logs.String())
	require.Len(t, lines, 3)
	for i, rec := range recs {
		l := lines[rec.RequestID]
		assert.Equal(t, "POST", l.Method)
		assert.Equal(t, "/v1/chat/completions", l.Path)
		assert.Equal(t, rec.Status, l.Status)
		assert.Equal(t, "caller-1", l.Caller)
		assert.Equal(t, "127.0.0.1", l.Client)
		require.NotNil(t, l.FirstByte)
		require.NotNil(t, l.Duration)
		assert.Equal(t, i == 0, l.Prompt != nil, "tokens only when reported: the ordinary answer")
		assert.Equal(t, i == 0, l.Completion != nil)
	}
	assert.Positive(t, *lines[recs[0].RequestID].Completion)
}
