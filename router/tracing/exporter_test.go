package tracing

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/anvil-llm/anvil/router/config"
)

// received is what an in-process collector was sent: trace IDs and the resource's service name.
type received struct {
	mu       sync.Mutex
	traces   []string
	services []string
}

func (r *received) add(req *coltracepb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				r.services = append(r.services, kv.Value.GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.traces = append(r.traces, hex.EncodeToString(s.TraceId))
			}
		}
	}
}

type grpcCollector struct {
	coltracepb.UnimplementedTraceServiceServer
	got *received
}

func (g grpcCollector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.got.add(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// exportOne sends one request span of the caller's trace through the real OTLP exporter of cfg.
func exportOne(t *testing.T, cfg config.Tracing) {
	p, err := New(t.Context(), cfg, Options{Version: "test"})
	require.NoError(t, err)
	sp := p.Start(context.Background(), http.Header{"Traceparent": []string{tp}}, "POST", "/v1/chat/completions", time.Now())
	sp.span.End()
	require.NoError(t, p.Shutdown(t.Context()))
	assert.Zero(t, p.Dropped())
}

// Both protocols reach a real collector the way the endpoint's rule says: over HTTP the traces path
// is appended to the base URL, over gRPC only the host counts (http: no TLS).
func TestExportersReachTheCollector(t *testing.T) {
	t.Run("http/protobuf", func(t *testing.T) {
		got := &received{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/base/v1/traces" {
				http.NotFound(w, r)
				return
			}
			body, _ := io.ReadAll(r.Body)
			var req coltracepb.ExportTraceServiceRequest
			require.NoError(t, proto.Unmarshal(body, &req))
			got.add(&req)
			w.Header().Set("Content-Type", "application/x-protobuf")
		}))
		defer srv.Close()
		cfg := on()
		cfg.Endpoint, cfg.ServiceName = srv.URL+"/base/", "east"
		exportOne(t, cfg)
		assert.Equal(t, []string{tid}, got.traces)
		assert.Equal(t, []string{"east"}, got.services)
	})
	t.Run("grpc", func(t *testing.T) {
		got := &received{}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		gs := grpc.NewServer()
		coltracepb.RegisterTraceServiceServer(gs, grpcCollector{got: got})
		go func() { _ = gs.Serve(ln) }()
		defer gs.Stop()
		cfg := on()
		cfg.Endpoint, cfg.Protocol = "http://"+ln.Addr().String(), config.ProtocolGRPC
		exportOne(t, cfg)
		assert.Equal(t, []string{tid}, got.traces)
	})
}
