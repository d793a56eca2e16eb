package tracing

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/anvil-llm/anvil/router/config"
)

// httpCollector records each export's path and content type and answers with reply (nil: empty).
type httpCollector struct {
	mu    sync.Mutex
	paths []string
	types []string
	spans int
}

func startHTTPCollector(t *testing.T, reply *coltracepb.ExportTraceServiceResponse) (*httptest.Server, *httpCollector) {
	c := &httpCollector{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		c.mu.Lock()
		c.paths, c.types = append(c.paths, r.URL.Path), append(c.types, r.Header.Get("Content-Type"))
		if proto.Unmarshal(body, &req) == nil {
			for _, rs := range req.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					c.spans += len(ss.Spans)
				}
			}
		}
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		if reply != nil {
			out, _ := proto.Marshal(reply)
			_, _ = w.Write(out)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, c
}

// The settings' endpoint and protocol win over the exporter's own reading of the per-signal
// variables (config resolved them already); http/json sends JSON; a traces URL is used as-is.
func TestExporterTakesTheSettingsOnly(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:1/elsewhere")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json")
	srv, got := startHTTPCollector(t, nil)
	cfg := on()
	cfg.Endpoint = srv.URL + "/base"
	exportOne(t, cfg)
	assert.Equal(t, []string{"/base/v1/traces"}, got.paths)
	assert.Equal(t, []string{"application/x-protobuf"}, got.types, "the variable does not switch the encoding")

	srv, got = startHTTPCollector(t, nil)
	cfg.Endpoint, cfg.TracesURL, cfg.Protocol = srv.URL+"/custom", true, config.ProtocolHTTPJSON
	exportOne(t, cfg)
	assert.Equal(t, []string{"/custom"}, got.paths, "a traces URL gets no /v1/traces")
	assert.Equal(t, []string{"application/json"}, got.types)
}

// A partial success counts only the spans the collector rejected: none for a warning alone.
func TestPartialSuccessCountsOnlyRejected(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rejected int64
		want     uint64
	}{{"warning only", 0, 0}, {"two rejected", 2, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			srv, got := startHTTPCollector(t, &coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{
				RejectedSpans: tc.rejected, ErrorMessage: "some spans were odd"}})
			cfg := on()
			cfg.Endpoint = srv.URL
			p, err := New(t.Context(), cfg, Options{})
			require.NoError(t, err)
			endSpans(p, 5)
			require.NoError(t, p.Shutdown(t.Context()))
			assert.Equal(t, 5, got.spans)
			assert.Equal(t, tc.want, p.Dropped())
		})
	}
}

// recorder keeps what each export saw: the spans' resource keys and the export context's deadline.
type recorder struct {
	mu       sync.Mutex
	keys     []string
	deadline []bool
}

func (r *recorder) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := ctx.Deadline()
	r.deadline = append(r.deadline, ok)
	for _, s := range spans {
		for _, kv := range s.Resource().Attributes() {
			r.keys = append(r.keys, string(kv.Key))
		}
	}
	return nil
}

func (*recorder) Shutdown(context.Context) error { return nil }

// The resource is the settings' alone: the process's OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME
// (which the SDK's environment detector reads directly) add nothing. And OTEL_BSP_EXPORT_TIMEOUT=0
// (no timeout) does not remove the per-export timeout.
func TestNoProcessEnvironmentLeaks(t *testing.T) {
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "planted.key=1")
	t.Setenv("OTEL_SERVICE_NAME", "planted-service")
	t.Setenv("OTEL_BSP_EXPORT_TIMEOUT", "0")
	rec := &recorder{}
	cfg := on()
	cfg.ResourceAttributes = []config.Attribute{{Key: "a", Value: "1"}}
	p, err := New(t.Context(), cfg, Options{Exporter: rec})
	require.NoError(t, err)
	endSpans(p, 1)
	require.NoError(t, p.ForceFlush(t.Context()))
	assert.ElementsMatch(t, []string{"a", "service.name"}, rec.keys)
	assert.Equal(t, []bool{true}, rec.deadline, "every export has its timeout")
	require.NoError(t, p.Shutdown(t.Context()))
}

// done and close race at a shutdown that gave up: each span is counted once, by one or the other.
func TestDoneAndCloseCountOnce(t *testing.T) {
	const spans = 64
	for range 200 {
		g := &gate{limit: QueueSpans, next: sdktrace.NewSimpleSpanProcessor(&stalled{})}
		g.state.Store(spans)
		var wg sync.WaitGroup
		for range spans / 8 {
			wg.Go(func() { g.done(8, 8) })
		}
		wg.Go(g.close)
		wg.Wait()
		require.Equal(t, uint64(spans), g.dropped.Load())
	}
}
