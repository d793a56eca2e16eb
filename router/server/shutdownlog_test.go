package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/server"
)

// signalLog is a log destination that closes seen once a line holding want is written.
type signalLog struct {
	lockedBuffer
	want string
	seen chan struct{}
	once sync.Once
}

func (l *signalLog) Write(p []byte) (int, error) {
	n, err := l.lockedBuffer.Write(p)
	if bytes.Contains(p, []byte(l.want)) {
		l.once.Do(func() { close(l.seen) })
	}
	return n, err
}

// logLine is the first JSON log line with message msg.
func logLine(t *testing.T, logs, msg string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(logs))
	for {
		var l map[string]any
		if err := dec.Decode(&l); err == io.EOF {
			t.Fatalf("no %q line in:\n%s", msg, logs)
		} else {
			require.NoError(t, err)
		}
		if l["msg"] == msg {
			return l
		}
	}
}

// TestShutdownLines: "shutdown started" says what is in flight per tier; "shutdown finished" what
// ended within the grace and what the grace's end cut.
func TestShutdownLines(t *testing.T) {
	ms := startMembers(t, 2)
	gates := []chan struct{}{make(chan struct{}), make(chan struct{})}
	for i, m := range ms {
		m.gate.Store(&gates[i])
	}
	logs := &signalLog{want: `"shutdown started"`, seen: make(chan struct{})}
	cfg, err := load.Parse([]byte(replicaYAML(ms, tierOpts{strategy: "round_robin", extra: "shutdown_grace: 1s\n"})), env)
	require.NoError(t, err)
	srv, err := server.New(cfg, server.Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()

	statuses := make(chan int, 2)
	send := func() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/v1/chat/completions", strings.NewReader(chatBody(4, false)))
		req.Header.Set("Authorization", "Bearer "+callerToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			statuses <- 0
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		statuses <- resp.StatusCode
	}
	go send()
	first := recvMember(t, ms)
	go send()
	recvMember(t, ms)

	stop() // SIGTERM with both requests held at their members
	select {
	case <-logs.seen:
	case err := <-served:
		close(gates[0])
		close(gates[1])
		t.Fatalf("Serve returned (%v) without logging \"shutdown started\"", err)
	}
	close(gates[first]) // one finishes within the grace; the other is cut when it ends
	// The cut request's member still holds it (its body unread, it never notices the router left):
	// let it go before the members close.
	t.Cleanup(func() { close(gates[1-first]) })
	require.NoError(t, <-served)
	got := []int{<-statuses, <-statuses}
	assert.ElementsMatch(t, []int{http.StatusOK, http.StatusServiceUnavailable}, got)

	started := logLine(t, logs.String(), "shutdown started")
	assert.EqualValues(t, 2, started["in_flight"])
	assert.EqualValues(t, 0, started["queued"])
	assert.EqualValues(t, 1000, started["grace_ms"])
	assert.Equal(t, map[string]any{"replicas": 2.0}, started["in_flight_by_tier"])
	finished := logLine(t, logs.String(), "shutdown finished")
	assert.EqualValues(t, 1, finished["finished"])
	assert.EqualValues(t, 1, finished["cut"])
	assert.Equal(t, map[string]any{"replicas": 1.0}, finished["finished_by_tier"])
	assert.Equal(t, map[string]any{"replicas": 1.0}, finished["cut_by_tier"])
	assert.Less(t, strings.Index(logs.String(), `"shutdown started"`), strings.Index(logs.String(), `"shutdown finished"`))
}

// recvMember waits for a generation request to reach one of ms and returns its index.
func recvMember(t *testing.T, ms []*member) int {
	t.Helper()
	select {
	case <-ms[0].entered:
		return 0
	case <-ms[1].entered:
		return 1
	case <-t.Context().Done():
		t.Fatal("no request reached a member")
	}
	return -1
}
