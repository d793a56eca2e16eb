package server_test

import (
	"bytes"
	"context"
	"log/slog"
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
