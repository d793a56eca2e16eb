package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/server"
)

// discard is an exporter that drops every batch at once: the benchmark measures the router's side
// of tracing (spans built, queued and handed over), not a collector.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkTracingCost is BenchmarkRequestPath's round-robin request with tracing off (with and
// without a caller traceparent, which is forwarded either way), on with a sampler of 0 and on at 1:
//
//	go test -run '^$' -bench BenchmarkTracingCost -benchmem -count 5 ./router/server/
func BenchmarkTracingCost(b *testing.B) {
	variants := []struct{ name, yaml, parent string }{
		{"off", "", ""},
		{"off/traceparent", "", callerParent},
		{"on/sampler=0", "tracing:\n  endpoint: http://127.0.0.1:1\n  sampler: traceidratio\n  sampler_arg: 0\n", callerParent},
		{"on/sampler=1", "tracing:\n  endpoint: http://127.0.0.1:1\n  sampler: always_on\n", callerParent},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			cfg, err := load.Parse([]byte(benchYAML(b, "round_robin", 2)+v.yaml), env)
			if err != nil {
				b.Fatal(err)
			}
			srv, err := server.New(cfg, server.Options{SpanExporter: discard{}})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			srv.ProbeNow(context.Background())
			front := httptest.NewServer(srv.Handler())
			defer front.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			body := `{"model":"chat","messages":[{"role":"user","content":"hello"}],"max_tokens":4}`
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, front.URL+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+callerToken)
				if v.parent != "" {
					req.Header.Set("Traceparent", v.parent)
				}
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
