package server_test

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// When the grace period runs out, the remaining connections are closed, but Serve still waits for their
// handlers: every lease is released and every decision record reaches the sink before it is closed.
func TestShutdownAfterGraceKeepsEveryRecord(t *testing.T) {
	ms := startMembers(t, 2)
	slow(t, ms[0], 1000)
	slow(t, ms[1], 1000)
	sink := t.TempDir() + "/decisions.jsonl"
	sv := serveReal(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2,
		extra: "shutdown_grace: 0s\ndecision_log:\n  jsonl_path: " + sink + "\n"}))
	resp := postStream(t, sv.addr, 64)
	defer resp.Body.Close()
	_ = sv.stop() // the stream would take seconds; the grace is zero

	ta, _ := sv.srv.Admission().Tier("replicas")
	assertSettled(t, ta.Snapshot())
	assert.EqualValues(t, 1, ta.Snapshot().Acquired)
	data, err := readFile(sink)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(data, "\n"), "the cut request's record reached the sink")
	assert.Equal(t, uint64(0), sv.srv.Decisions().Stats().SinkAfterClose)
}
