package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/scheduler"
	"github.com/anvil-llm/anvil/router/server"
)

const benchReply = `{"id":"c","object":"chat.completion","created":1,"model":"test/llama","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`

// benchMetrics is an idle vLLM page, so the capacity benchmark runs on a warm cache of fresh pressure.
const benchMetrics = `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="test/llama"} 0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="test/llama"} 0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="test/llama"} 0.01
`

// zeroUpstream answers instantly, so the benchmark measures the router's own cost per request.
func zeroUpstream(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"test/llama"}]}`)
		case "/health":
		case "/metrics":
			_, _ = io.WriteString(w, benchMetrics)
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
				cfg, err := load.Parse([]byte(benchYAML(b, strategy, n)), env)
				if err != nil {
					b.Fatal(err)
				}
				srv, err := server.New(cfg, server.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer srv.Close()
				srv.ProbeNow(context.Background())
				front := httptest.NewServer(srv.Handler())
				defer front.Close()
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
				body := `{"model":"chat","messages":[{"role":"user","content":"hello"}],"max_tokens":4}`
				post := func() {
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
				if strategy == "capacity" {
					warm(b, srv, post)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					post()
				}
			})
		}
	}
}

// warm sends requests until every member's pressure is fresh in the cache.
func warm(b *testing.B, srv *server.Server, post func()) {
	for range 100000 {
		p, err := srv.Pressure("replicas")
		fresh := err == nil && len(p) > 0
		for _, v := range p {
			fresh = fresh && v.Freshness() == scheduler.FreshnessFresh
		}
		if fresh {
			return
		}
		post()
	}
	b.Fatal("the pressure cache never warmed")
}
