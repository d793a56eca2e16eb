// Package tracing is the router's OpenTelemetry shell: the tracer provider the tracing settings
// describe (an OTLP exporter behind a batch processor that never blocks a request), the W3C trace
// context a caller sends (read, checked and forwarded to the chosen member, whether tracing is on or
// not) and the one server span of a front-door request, built from its decision record.
//
// Nothing here is imported by the walk or the simulator (router/routing, router/admission,
// router/scheduler, sim): a trace is a shell concern, and the walk's cores stay free of it.
//
// Reading guide:
//
//   - w3c.go: Incoming and ParseTraceParent, the caller's traceparent and tracestate.
//   - provider.go: New, the provider, its dropped-span count and its bounded Shutdown.
//   - span.go: Start and Span, one request's server span and its admission and upstream children.
package tracing

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/anvil-llm/anvil/router/config"
)

// The batch processor's bounds, fixed here (not read from OTEL_BSP_*) because the drop count depends
// on them: at most QueueSpans spans wait for export; past that a finished span is dropped and counted.
const (
	QueueSpans = 2048
	BatchSpans = 512
	scopeName  = "github.com/anvil-llm/anvil/router"
	tracesPath = "/v1/traces"
)

// ErrExporter is returned by New when the exporter cannot be built; it names nothing of the settings.
var ErrExporter = errors.New("tracing: the OTLP exporter could not be built")

// Provider is the router's tracer provider. A nil *Provider is tracing off: the server checks for nil
// and does nothing else.
type Provider struct {
	sdk    *sdktrace.TracerProvider
	tracer trace.Tracer
	gate   *gate
}

// Options are New's dependencies beside the settings.
type Options struct {
	Version string // service.version; "" leaves it out
	// Exporter replaces the OTLP exporter the settings describe: for tests.
	Exporter sdktrace.SpanExporter
}

// New builds the provider cfg describes, or returns nil, nil when tracing is off. Building it makes no
// connection: the exporter dials on its first export.
func New(ctx context.Context, cfg config.Tracing, opts Options) (*Provider, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	exp := opts.Exporter
	if exp == nil {
		var err error
		if exp, err = newExporter(ctx, cfg); err != nil {
			return nil, ErrExporter
		}
	}
	g := &gate{limit: QueueSpans}
	g.next = sdktrace.NewBatchSpanProcessor(counted{exp, g}, sdktrace.WithMaxQueueSize(QueueSpans),
		sdktrace.WithMaxExportBatchSize(BatchSpans)) // never WithBlocking: a full queue drops
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(g), sdktrace.WithResource(newResource(cfg, opts.Version)),
		sdktrace.WithSampler(sampler(cfg)))
	return &Provider{sdk: sdk, tracer: sdk.Tracer(scopeName), gate: g}, nil
}

// newExporter is the OTLP exporter of cfg. The endpoint is a base URL, as OTEL_EXPORTER_OTLP_ENDPOINT
// is: over HTTP the traces path is appended; over gRPC only its host and scheme count (http means no
// TLS). Headers, timeout and certificates come from the exporter's own OTEL_EXPORTER_OTLP_* variables.
func newExporter(ctx context.Context, cfg config.Tracing) (sdktrace.SpanExporter, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	if cfg.Protocol == config.ProtocolGRPC {
		u.Path = ""
		return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(u.String()))
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + tracesPath
	return otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u.String()))
}

// newResource is the service: its name, version and the configured attributes. The SDK's own
// environment detectors are not used, so the resource is exactly what the settings say.
func newResource(cfg config.Tracing, version string) *resource.Resource {
	attrs := make([]attribute.KeyValue, 0, len(cfg.ResourceAttributes)+2)
	for _, a := range cfg.ResourceAttributes {
		if a.Key != string(semconv.ServiceNameKey) { // OTEL_SERVICE_NAME wins, as the specification says
			attrs = append(attrs, attribute.String(a.Key, a.Value))
		}
	}
	attrs = append(attrs, semconv.ServiceName(cfg.ServiceName))
	if version != "" {
		attrs = append(attrs, semconv.ServiceVersion(version))
	}
	return resource.NewWithAttributes(semconv.SchemaURL, attrs...)
}

// sampler maps the specification's sampler names.
func sampler(cfg config.Tracing) sdktrace.Sampler {
	ratio := sdktrace.TraceIDRatioBased(cfg.SamplerArg)
	switch cfg.Sampler {
	case "always_on":
		return sdktrace.AlwaysSample()
	case "always_off":
		return sdktrace.NeverSample()
	case "traceidratio":
		return ratio
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample())
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(ratio)
	}
	return sdktrace.ParentBased(sdktrace.AlwaysSample())
}

// Dropped is how many sampled spans were lost: refused by a full queue, refused by the collector (or
// never reaching it) and left unexported when Shutdown gave up.
func (p *Provider) Dropped() uint64 { return p.gate.dropped.Load() }

// ForceFlush exports every span ended so far, within ctx.
func (p *Provider) ForceFlush(ctx context.Context) error { return p.sdk.ForceFlush(ctx) }

// Shutdown exports what is queued within ctx and stops the provider; past ctx it gives up, and what
// was left counts as dropped.
func (p *Provider) Shutdown(ctx context.Context) error {
	err := p.sdk.Shutdown(ctx)
	p.gate.close()
	return err
}

// gate sits in front of the batch processor and counts what it drops. It admits a sampled span only
// while fewer than limit admitted spans are still unexported, so the processor's own queue (of the
// same size) never fills and never drops uncounted; the counted exporter marks spans done.
type gate struct {
	next    sdktrace.SpanProcessor
	limit   int64
	pending atomic.Int64
	dropped atomic.Uint64
	closed  atomic.Bool
}

func (g *gate) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) { g.next.OnStart(ctx, s) }

func (g *gate) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	if g.closed.Load() || g.pending.Add(1) > g.limit {
		if !g.closed.Load() {
			g.pending.Add(-1)
		}
		g.dropped.Add(1)
		return
	}
	g.next.OnEnd(s)
}

func (g *gate) Shutdown(ctx context.Context) error   { return g.next.Shutdown(ctx) }
func (g *gate) ForceFlush(ctx context.Context) error { return g.next.ForceFlush(ctx) }

// close counts the spans still unexported once the processor has stopped.
func (g *gate) close() {
	if g.closed.Swap(true) {
		return
	}
	if left := g.pending.Swap(0); left > 0 {
		g.dropped.Add(uint64(left))
	}
}

// done marks n admitted spans as exported or lost.
func (g *gate) done(n int, failed bool) {
	if g.closed.Load() {
		return // close already counted them
	}
	g.pending.Add(-int64(n))
	if failed {
		g.dropped.Add(uint64(n))
	}
}

// counted is the exporter behind the gate. It reports every export as a success to the processor:
// the failure is counted here, and the SDK's global error handler (which would print the
// exporter's text, the collector's address included) never sees it.
type counted struct {
	sdktrace.SpanExporter
	g *gate
}

func (c counted) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := c.SpanExporter.ExportSpans(ctx, spans)
	c.g.done(len(spans), err != nil)
	return nil
}
