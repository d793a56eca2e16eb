package tracing

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/anvil-llm/anvil/router/config"
)

// stalled is a collector that never answers until released: every export waits.
type stalled struct {
	release chan struct{}
	mu      sync.Mutex
	got     int
	fail    bool
}

func (s *stalled) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if s.release != nil {
		select {
		case <-s.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got += len(spans)
	if s.fail {
		return errors.New("collector at http://10.1.2.3:4318 refused")
	}
	return nil
}

func (*stalled) Shutdown(context.Context) error { return nil }

func on() config.Tracing {
	return config.Tracing{Endpoint: "http://127.0.0.1:1", Protocol: config.ProtocolHTTP, ServiceName: "t",
		Sampler: "always_on", SamplerArg: 1}
}

func newTest(t *testing.T, exp sdktrace.SpanExporter) *Provider {
	p, err := New(t.Context(), on(), Options{Exporter: exp})
	require.NoError(t, err)
	require.NotNil(t, p)
	return p
}

// endSpans ends n request spans as the server does, each on its own.
func endSpans(p *Provider, n int) {
	for range n {
		sp := p.Start(context.Background(), http.Header{}, "POST", "/v1/chat/completions", time.Now())
		sp.span.End()
	}
}

func TestOffIsNil(t *testing.T) {
	p, err := New(t.Context(), config.Tracing{}, Options{})
	require.NoError(t, err)
	assert.Nil(t, p)
}

// A collector that never answers costs requests nothing: ending spans never waits, the queue's
// overflow is dropped and counted, and shutdown gives up at its deadline, counting what it left.
func TestStalledCollectorDropsAndNeverBlocks(t *testing.T) {
	exp := &stalled{release: make(chan struct{})}
	defer close(exp.release)
	p := newTest(t, exp)
	endSpans(p, QueueSpans+10) // returns: a blocking OnEnd would hang here
	assert.Equal(t, uint64(10), p.Dropped(), "exactly the spans past the queue")

	ctx, cancel := context.WithCancel(t.Context())
	cancel() // the grace is over
	require.Error(t, p.Shutdown(ctx))
	assert.Equal(t, uint64(QueueSpans+10), p.Dropped(), "every span never exported is counted")
}

// A collector that refuses a batch: its spans count as dropped, and the exporter's text (which names
// the collector) never reaches the SDK's global error handler.
func TestRefusedExportCounts(t *testing.T) {
	var handled []error
	var mu sync.Mutex
	prev := otel.GetErrorHandler()
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, err)
	}))
	t.Cleanup(func() { otel.SetErrorHandler(prev) })
	exp := &stalled{fail: true}
	p := newTest(t, exp)
	endSpans(p, 5)
	require.NoError(t, p.ForceFlush(t.Context()))
	assert.Equal(t, uint64(5), p.Dropped())
	require.NoError(t, p.Shutdown(t.Context()))
	assert.Equal(t, uint64(5), p.Dropped())
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, handled, "the exporter's text never reaches the global error handler")
}

// Unsampled spans are neither queued nor counted, and still carry a traceparent to forward.
func TestUnsampledCostsNoQueue(t *testing.T) {
	cfg := on()
	cfg.Sampler = "traceidratio"
	cfg.SamplerArg = 0
	exp := &stalled{}
	p, err := New(t.Context(), cfg, Options{Exporter: exp})
	require.NoError(t, err)
	sp := p.Start(context.Background(), http.Header{"Traceparent": []string{tp}}, "POST", "/v1/completions", time.Now())
	parent, _ := sp.Upstream(time.Now())
	got, ok := ParseTraceParent(parent)
	require.True(t, ok)
	assert.Equal(t, tid, got[3:35], "the caller's trace")
	assert.True(t, got[53:55] == "00", "not sampled")
	require.NoError(t, p.Shutdown(t.Context()))
	assert.Zero(t, exp.got)
	assert.Zero(t, p.Dropped())
}
