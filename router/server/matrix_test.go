package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/decisionlog"
)

// The terminal-path matrix (spec T007): for both strategies and for chat completions and Responses,
// ordinary and SSE, every way a request can end releases the selected lease exactly once, leaves tier
// and member counts reconciled, and invokes exactly one member once. Nothing is faked on the router side:
// real admission counts every release, and real fake-vLLM members on loopback produce every failure.

type dialect struct {
	name string
	path string
	body func(maxTokens int, stream bool) string
	end  string // the last SSE data payload of a complete stream
}

var dialects = []dialect{
	{"chat", "/v1/chat/completions", chatBody, "[DONE]"},
	{"responses", "/v1/responses", responsesBody, ""},
}

type matrixCase struct {
	name    string
	stream  bool
	faults  fakevllm.Faults
	extra   string // router YAML
	cancel  cancelPoint
	status  int // expected client status (0 = not checked: the client left)
	outcome decisionlog.Outcome
	code    string // the router's fixed error code in the body, when the router wrote the error
	tokens  int    // max_tokens of the request (0 = 16)
}

type cancelPoint int

const (
	noCancel cancelPoint = iota
	cancelBeforeFirstByte
	cancelAfterFirstEvent
	resetBeforeFirstByte // the member drops the connection once it has the request
)

func matrixCases() []matrixCase {
	slowStart := "upstream:\n  connect_timeout: 500ms\n  first_byte_timeout: 1s\n"
	return []matrixCase{
		{name: "success ordinary", status: 200, outcome: decisionlog.OutcomeSuccess},
		{name: "success stream (normal end)", stream: true, status: 200, outcome: decisionlog.OutcomeSuccess},
		{name: "upstream 500 eager ordinary", faults: fakevllm.Faults{HTTPErrors: []fakevllm.HTTPErrorFault{{Status: 500, Rate: 1}}},
			status: 500, outcome: decisionlog.OutcomeUpstreamHTTPError},
		{name: "upstream 429 eager stream", stream: true, faults: fakevllm.Faults{HTTPErrors: []fakevllm.HTTPErrorFault{{Status: 429, Rate: 1}}},
			status: 429, outcome: decisionlog.OutcomeUpstreamHTTPError},
		{name: "upstream dies mid-stream", stream: true, faults: fakevllm.Faults{Truncate: fakevllm.StreamFault{Chunk: 2}},
			status: 200, outcome: decisionlog.OutcomeStreamTruncated},
		{name: "malformed SSE", stream: true, faults: fakevllm.Faults{Malformed: fakevllm.StreamFault{Chunk: 2}},
			status: 200, outcome: decisionlog.OutcomeMalformedStream},
		// vLLM's own ending of a stream whose generator raised: its error event, then data: [DONE].
		{name: "upstream error event then [DONE]", stream: true, faults: fakevllm.Faults{ErrorEvent: fakevllm.StreamFault{Chunk: 2}},
			status: 200, outcome: decisionlog.OutcomeUpstreamHTTPError},
		{name: "timeout before first byte", extra: slowStart, faults: fakevllm.Faults{StepTimeMultiplier: 1000},
			status: 504, outcome: decisionlog.OutcomeUpstreamTimeout, code: "upstream_timeout"},
		{name: "client cancels before first byte", stream: true, faults: fakevllm.Faults{StepTimeMultiplier: 1000},
			cancel: cancelBeforeFirstByte, outcome: decisionlog.OutcomeClientCanceled},
		// 500 tokens at 115 ms a step: the stream cannot finish before the disconnect reaches the relay,
		// however loaded the machine.
		{name: "client disconnects mid-stream", stream: true, faults: fakevllm.Faults{StepTimeMultiplier: 20},
			cancel: cancelAfterFirstEvent, outcome: decisionlog.OutcomeClientCanceled, tokens: 500},
		{name: "engine dead answers 503", faults: fakevllm.Faults{EngineDead: true},
			status: 503, outcome: decisionlog.OutcomeUpstreamHTTPError},
		{name: "upstream closes before first byte", faults: fakevllm.Faults{StepTimeMultiplier: 1000},
			cancel: resetBeforeFirstByte, status: 502, outcome: decisionlog.OutcomeUpstreamTransportError, code: "upstream_transport_error"},
	}
}

func TestTerminalPathMatrix(t *testing.T) {
	for _, strategy := range []string{"round_robin", "capacity"} {
		for _, d := range dialects {
			for _, c := range matrixCases() {
				t.Run(strategy+"/"+d.name+"/"+c.name, func(t *testing.T) {
					runMatrixCase(t, strategy, d, c)
				})
			}
		}
	}
}

func runMatrixCase(t *testing.T, strategy string, d dialect, c matrixCase) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{strategy: strategy, memberCeiling: 4, extra: c.extra}))
	// Faults go in after the readiness probe: the members were ready when selected, then fail.
	for _, m := range ms {
		fault(t, m, c.faults)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	tokens := c.tokens
	if tokens == 0 {
		tokens = 16
	}
	resp, err := postRaw(ctx, r, d.path, d.body(tokens, c.stream), c.cancel, ms, cancel)
	switch c.cancel {
	case cancelBeforeFirstByte:
		// Before the first token. A Responses stream commits its headers at once (vLLM sends
		// response.created before generating), so the cancel may land after the headers: then the
		// body read fails instead of the round trip.
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		require.Error(t, err, "the client gave up before the first token")
	case cancelAfterFirstEvent:
		require.NoError(t, err)
		br := resp.Body
		first := make([]byte, 1)
		_, rerr := br.Read(first)
		require.NoError(t, rerr, "the first event arrives while the member still generates")
		cancel()
		_, _ = io.Copy(io.Discard, br)
		br.Close()
	default:
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, c.status, resp.StatusCode, string(body))
		if c.outcome == decisionlog.OutcomeSuccess && c.stream {
			events := readEvents(t, strings.NewReader(string(body)))
			require.NotEmpty(t, events)
			if d.end != "" {
				assert.Equal(t, d.end, events[len(events)-1])
			} else {
				assert.Contains(t, events[len(events)-1], "response.completed")
			}
		}
		if c.stream && c.outcome != decisionlog.OutcomeSuccess {
			assert.NotContains(t, string(body), "data: [DONE]", "[DONE] means a complete stream")
		}
		assertNoLeak(t, string(body), ms)
		if c.code != "" {
			assert.Contains(t, string(body), `"code":"`+c.code+`"`)
		}
	}
	r.wait(t, 1)

	assert.EqualValues(t, 1, totalCalls(ms), "exactly one member, exactly once")
	s := r.snapshot(t, "replicas")
	assertSettled(t, s)
	assert.EqualValues(t, 1, s.Acquired)
	recs := r.srv.Decisions().Recent(1)
	require.Len(t, recs, 1)
	assert.Equal(t, c.outcome, recs[0].Outcome)
	assert.Equal(t, 1, recs[0].Attempts, "every case reached exactly one member attempt")
	assert.NotEmpty(t, recs[0].Member)
	if strategy == "capacity" {
		require.NotNil(t, recs[0].ReplicaScheduler, "the captured selection survives every terminal path")
	} else {
		assert.Nil(t, recs[0].ReplicaScheduler)
	}
}

// postRaw sends the request; for cancelBeforeFirstByte it cancels as soon as a member has the request.
func postRaw(ctx context.Context, r *router, path, body string, cp cancelPoint, ms []*member, cancel func()) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.http.URL+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+callerToken)
	if cp == cancelBeforeFirstByte || cp == resetBeforeFirstByte {
		go func() {
			var m *member
			select {
			case <-ms[0].entered:
				m = ms[0]
			case <-ms[1].entered:
				m = ms[1]
			case <-ctx.Done():
				return
			}
			if cp == cancelBeforeFirstByte {
				cancel()
			} else {
				m.srv.CloseClientConnections()
			}
		}()
	}
	return http.DefaultClient.Do(req)
}

// assertNoLeak checks that nothing the router wrote names a member address.
func assertNoLeak(t *testing.T, body string, ms []*member) {
	t.Helper()
	for _, m := range ms {
		host := strings.TrimPrefix(m.URL(), "http://")
		assert.NotContains(t, body, host)
	}
}
