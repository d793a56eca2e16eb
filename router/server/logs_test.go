package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/server"
)

// lockedBuffer is a goroutine-safe log destination.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Logs, decision records and error bodies carry IDs, enums and numbers: never credentials, prompts,
// response bodies or member addresses, on success or on any failure.
func TestNothingSensitiveReachesLogsOrRecords(t *testing.T) {
	const prompt = "PROMPT-MARKER-7f3a"
	ms := startMembers(t, 2)
	cfg, err := load.Parse([]byte(replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2})), env)
	require.NoError(t, err)
	logs := &lockedBuffer{}
	srv, err := server.New(cfg, server.Options{Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	srv.ProbeNow(context.Background())
	front := httptest.NewServer(srv.Handler())
	defer front.Close()

	send := func(auth, body string) string {
		req, _ := http.NewRequest(http.MethodPost, front.URL+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return b.String()
	}
	body := `{"model":"chat","messages":[{"role":"user","content":"` + prompt + `"}],"max_tokens":4,"ignore_eos":true}`
	var replies []string
	replies = append(replies, send("Bearer "+callerToken, body))                                                                // success
	replies = append(replies, send("Bearer wrong-"+callerToken, body))                                                          // 401
	replies = append(replies, send("Bearer "+callerToken, `{"model":"chat","messages":[{"content":"`+prompt+`"}],"tools":{}}`)) // 400
	for _, m := range ms {
		fault(t, m, fakevllm.Faults{HTTPErrors: []fakevllm.HTTPErrorFault{{Status: 500, Rate: 1}}})
	}
	replies = append(replies, send("Bearer "+callerToken, body)) // upstream 500
	for _, m := range ms {
		m.srv.CloseClientConnections()
		m.srv.Close()
	}
	replies = append(replies, send("Bearer "+callerToken, body)) // upstream gone: 502

	var records strings.Builder
	for _, r := range srv.Decisions().Recent(100) {
		records.WriteString(r.Line())
	}
	surfaces := map[string]string{"logs": logs.String(), "records": records.String(), "replies": strings.Join(replies, "\n")}
	require.Contains(t, surfaces["logs"], `"msg":"request"`, "the access log is written")
	for name, text := range surfaces {
		assert.NotContains(t, text, callerToken, name)
		assert.NotContains(t, text, adminToken, name)
		assert.NotContains(t, text, prompt, name)
		for _, m := range ms {
			assert.NotContains(t, text, strings.TrimPrefix(m.URL(), "http://"), name)
		}
	}
}

// TestPassiveHealthLogsEachTransition: one warn line per ejection with tier, member, reason, streak
// and the ejection's length, and one info line when the member recovers (here through the readiness
// prober's next pass once the ejection ended: a 100 ms base ejection).
func TestPassiveHealthLogsEachTransition(t *testing.T) {
	ms := startMembers(t, 2)
	cfg, err := load.Parse([]byte(replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 4,
		extra: "readiness:\n  interval: 100ms\n  timeout: 100ms\n"})+
		"    passive_health: {consecutive_failures: 2, base_ejection: 100ms, max_ejection: 1s}\n"), env)
	require.NoError(t, err)
	logs := &lockedBuffer{}
	srv, err := server.New(cfg, server.Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() { stop(); require.NoError(t, <-served) }()

	fault(t, ms[0], fakevllm.Faults{HTTPErrors: []fakevllm.HTTPErrorFault{{Status: 503, Rate: 1}}})
	recovered := "member recovered from passive health ejection"
	for !strings.Contains(logs.String(), recovered) {
		// Route requests until m00 (always picked first while idle) has failed twice, been ejected,
		// and a probe after the 100 ms ejection has made it healthy again. Each round trip paces the
		// loop; the test's own timeout bounds it.
		req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/v1/chat/completions",
			strings.NewReader(chatBody(1, false)))
		req.Header.Set("Authorization", "Bearer "+callerToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
	}
	var ejected, recoveredLine map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		switch m["msg"] {
		case "member ejected by passive health":
			if ejected == nil {
				ejected = m
			}
		case recovered:
			recoveredLine = m
		}
	}
	require.NotNil(t, ejected)
	assert.Equal(t, "WARN", ejected["level"])
	assert.Equal(t, "replicas", ejected["tier"])
	assert.Equal(t, "m00", ejected["member"])
	assert.Equal(t, "consecutive_failures", ejected["reason"])
	assert.Equal(t, 2.0, ejected["streak"])
	assert.Equal(t, 0.1, ejected["ejection_s"])
	require.NotNil(t, recoveredLine)
	assert.Equal(t, "m00", recoveredLine["member"])
	assert.Equal(t, "probe_passed", recoveredLine["reason"])
}
