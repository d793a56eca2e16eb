package server_test

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

// The router relays SSE event by event: the caller holds the first content chunk while the member is
// still generating the rest. A buffering relay would deliver it only after the member finished.
func TestSSERelayedTokenByToken(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			ms := startMembers(t, 2)
			for _, m := range ms {
				slow(t, m, 20)
			}
			r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2}))
			resp := r.post(t, t.Context(), d.path, d.body(24, true))
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Contains(t, resp.Header.Get("Content-Type"), "text/event-stream")
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				line := sc.Text()
				if strings.Contains(line, `"content":"`) || strings.Contains(line, `"response.output_text.delta"`) {
					break
				}
			}
			running := 0
			for _, m := range ms {
				running += m.fake.Metrics().Running
			}
			assert.Equal(t, 1, running, "the first token reached the caller while the member was still generating")
			for sc.Scan() {
			}
			r.wait(t, 1)
			assertSettled(t, r.snapshot(t, "replicas"))
		})
	}
}

// Shutdown stops accepting, lets the in-flight stream finish, flushes the decision sink and returns.
func TestGracefulShutdownLetsInFlightFinish(t *testing.T) {
	ms := startMembers(t, 2)
	slow(t, ms[0], 20)
	slow(t, ms[1], 20)
	sink := t.TempDir() + "/decisions.jsonl"
	sv := serveReal(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2,
		extra: "decision_log:\n  jsonl_path: " + sink + "\n"}))

	resp := postStream(t, sv.addr, 16)
	served := make(chan error, 1)
	go func() { served <- sv.stop() }() // SIGTERM arrives while the stream is in flight
	events := readEvents(t, resp.Body)
	resp.Body.Close()
	require.NotEmpty(t, events)
	assert.Equal(t, "[DONE]", events[len(events)-1], "the in-flight stream completed")
	require.NoError(t, <-served)

	_, err := net.Dial("tcp", sv.addr)
	assert.Error(t, err, "the listener is closed after shutdown")
	ta, _ := sv.srv.Admission().Tier("replicas")
	assertSettled(t, ta.Snapshot())
	data, err := readFile(sink)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(data, "\n"), "the decision sink was flushed with the one record")
	assert.Contains(t, data, `"outcome":"success"`)
}

// When the grace period runs out, the requests still running are cut: each tells its caller (one
// in-band error event mid-stream), is recorded as outcome shutdown with the status the caller saw,
// releases its lease, and its record reaches the sink before it is closed.
func TestShutdownAfterGraceKeepsEveryRecord(t *testing.T) {
	ms := startMembers(t, 2)
	slow(t, ms[0], 1000)
	slow(t, ms[1], 1000)
	sink := t.TempDir() + "/decisions.jsonl"
	sv := serveReal(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2,
		extra: "shutdown_grace: 0s\ndecision_log:\n  jsonl_path: " + sink + "\n"}))
	resp := postStream(t, sv.addr, 64)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, sv.stop()) // the stream would take seconds; the grace is zero
	events := readEvents(t, resp.Body)
	require.NotEmpty(t, events)
	assert.Equal(t, `{"error":{"message":"the router is shutting down; retry shortly","type":"upstream_error","param":null,"code":"shutdown"}}`,
		events[len(events)-1], "the caller is told why its stream ended")

	ta, _ := sv.srv.Admission().Tier("replicas")
	assertSettled(t, ta.Snapshot())
	assert.EqualValues(t, 1, ta.Snapshot().Acquired)
	data, err := readFile(sink)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(data, "\n"), "the cut request's record reached the sink")
	assert.Contains(t, data, `"outcome":"shutdown","attempts":1,"status":200`)
	assert.Equal(t, uint64(0), sv.srv.Decisions().Stats().SinkAfterClose)
}

// A request cut before its first byte gets the fixed 503 and is recorded with it.
func TestShutdownCutBeforeTheFirstByte(t *testing.T) {
	ms := startMembers(t, 2)
	slow(t, ms[0], 1000)
	slow(t, ms[1], 1000)
	sv := serveReal(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2, extra: "shutdown_grace: 0s\n"}))
	answered := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+sv.addr+"/v1/chat/completions", strings.NewReader(chatBody(64, false)))
		req.Header.Set("Authorization", "Bearer "+callerToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			resp = nil
		}
		answered <- resp
	}()
	select {
	case <-ms[0].entered:
	case <-ms[1].entered:
	}
	require.NoError(t, sv.stop())
	resp := <-answered
	require.NotNil(t, resp, "the caller got an answer, not a reset")
	defer resp.Body.Close()
	var e openAIError
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Equal(t, "shutdown", e.Error.Code)
	rec := sv.srv.Decisions().Recent(1)[0]
	assert.Equal(t, decisionlog.OutcomeShutdown, rec.Outcome)
	assert.Equal(t, http.StatusServiceUnavailable, rec.Status)
	assert.Equal(t, 1, rec.Attempts)
	ta, _ := sv.srv.Admission().Tier("replicas")
	assertSettled(t, ta.Snapshot())
}
