package server_test

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/server"
)

// stalledCollector accepts connections and never answers; each accepted connection is sent on the
// channel (the test holds them open until it ends).
func stalledCollector(t *testing.T) (string, <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	conns := make(chan net.Conn, 16)
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		for len(conns) > 0 {
			held = append(held, <-conns)
		}
		for _, c := range held {
			_ = c.Close()
		}
	})
	return "http://" + ln.Addr().String(), conns
}

// A request that uses the whole grace and a collector that accepts and never answers: Serve returns
// within shutdown_grace + the trace flush cap (not a second grace), and the decision sink already
// holds the request's record when the flush reaches the collector (the log closes first).
func TestStalledCollectorFlushIsCappedAfterTheSink(t *testing.T) {
	url, conns := stalledCollector(t)
	ms := startMembers(t, 2)
	slow(t, ms[0], 1000)
	slow(t, ms[1], 1000)
	const grace, flushCap = 2 * time.Second, 200 * time.Millisecond
	sink := t.TempDir() + "/decisions.jsonl"
	sv := serveRealWith(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2,
		extra: "shutdown_grace: 2s\ndecision_log:\n  jsonl_path: " + sink + "\ntracing:\n  endpoint: " + url + "\n"}),
		server.Options{TraceFlushCap: flushCap})
	resp := postStream(t, sv.addr, 64)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	start := time.Now()
	served := make(chan error, 1)
	go func() { served <- sv.stop() }()
	var atFlush string
	select {
	case <-conns: // the flush reached the collector
		atFlush, _ = readFile(sink)
	case err := <-served:
		t.Fatalf("Serve returned (%v) before the flush reached the collector", err)
	}
	require.NoError(t, <-served)
	took := time.Since(start)

	assert.Less(t, took, grace+flushCap+time.Second, "stop is bounded by the grace and the cap, not a second grace")
	assert.GreaterOrEqual(t, took, grace, "the request used the grace")
	assert.Equal(t, 1, strings.Count(atFlush, "\n"), "the record reached the sink before the flush began")
	assert.Contains(t, atFlush, `"outcome":"shutdown"`)
	assert.Equal(t, 3.0, droppedSpans(t, sv), "the spans the collector never took")
}
