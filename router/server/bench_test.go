package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/server"
)

const benchReply = `{"id":"c","object":"chat.completion","created":1,"model":"test/llama","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`

// zeroUpstream answers instantly, so the benchmark measures the router's own cost per request.
func zeroUpstream(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"test/llama"}]}`)
		case "/health":
		default:
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, benchReply)
		}
	}))
	b.Cleanup(srv.Close)
	return srv
}

func benchYAML(b *testing.B, strategy string, n int) string {
	var sb strings.Builder
	sb.WriteString("listen: 127.0.0.1:0\naliases: [{id: chat, tier: replicas}]\ntiers:\n  - id: replicas\n    kind: replica\n")
	fmt.Fprintf(&sb, "    served_model: test/llama\n    host: 127.0.0.1\n    provenance: bench\n    replica_strategy: %s\n", strategy)
	sb.WriteString("    gates: {max_context_tokens: 8192}\n    members:\n")
	for i := range n {
		up := zeroUpstream(b)
		fmt.Fprintf(&sb, "      - id: m%02d\n        endpoint: %s\n        max_concurrency: 1000\n", i, up.URL)
	}
	return sb.String()
}

// BenchmarkRequestPath measures one full front-door request (auth, parse, gates, admission, relay,
// decision record) through a real router and real HTTP to zero-latency members.
func BenchmarkRequestPath(b *testing.B) {
	for _, strategy := range []string{"round_robin", "capacity"} {
		for _, n := range []int{2, 16} {
			b.Run(fmt.Sprintf("%s/%d", strategy, n), func(b *testing.B) {
				cfg, err := config.Parse([]byte(benchYAML(b, strategy, n)), env)
				if err != nil {
					b.Fatal(err)
				}
				srv, err := server.New(cfg, server.Options{})
				if err != nil {
					b.Fatal(err)
				}
				srv.ProbeNow(context.Background())
				front := httptest.NewServer(srv.Handler())
				defer front.Close()
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
				body := `{"model":"chat","messages":[{"role":"user","content":"hello"}],"max_tokens":4}`
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					req, _ := http.NewRequest(http.MethodPost, front.URL+"/v1/chat/completions", strings.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+callerToken)
					resp, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Fatalf("status %d", resp.StatusCode)
					}
				}
			})
		}
	}
}
