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
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/anvil-llm/anvil/router/config"
)

// The batch processor's settings, every one passed explicitly so no OTEL_BSP_* variable changes them:
// the drop count depends on the bounds (at most QueueSpans spans wait for export; past that a
// finished span is dropped and counted), and an export without its timeout (OTEL_BSP_EXPORT_TIMEOUT=0
// means none) would hold the one export goroutine on a stalled collector for good.
const (
	QueueSpans    = 2048
	BatchSpans    = 512
	ScheduleDelay = 5 * time.Second  // the specification's default
	ExportTimeout = 30 * time.Second // the specification's default
	scopeName     = "github.com/anvil-llm/anvil/router"
	tracesPath    = "/v1/traces"
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

// newProcessor is the batch processor in front of exp, with every setting explicit. Never
// WithBlocking: a full queue drops.
func newProcessor(exp sdktrace.SpanExporter) sdktrace.SpanProcessor {
	return sdktrace.NewBatchSpanProcessor(exp, sdktrace.WithMaxQueueSize(QueueSpans),
		sdktrace.WithMaxExportBatchSize(BatchSpans), sdktrace.WithBatchTimeout(ScheduleDelay),
		sdktrace.WithExportTimeout(ExportTimeout))
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
	res := newResource(cfg, opts.Version)
	g.next = newProcessor(counted{exp, g, res})
	// WithResource merges the SDK's environment detector (the process's OTEL_RESOURCE_ATTRIBUTES and
	// OTEL_SERVICE_NAME, read directly) under res; counted exports res alone, so only the settings'
	// lookup counts.
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(g), sdktrace.WithResource(res),
		sdktrace.WithSampler(sampler(cfg)))
	return &Provider{sdk: sdk, tracer: sdk.Tracer(scopeName), gate: g}, nil
}

// newExporter is the OTLP exporter of cfg, its endpoint and protocol passed explicitly (they win
// over the exporter's own reading of OTEL_EXPORTER_OTLP_*ENDPOINT and *PROTOCOL, which config
// already resolved). A base URL (OTEL_EXPORTER_OTLP_ENDPOINT, tracing.endpoint) gets the traces path
// appended over HTTP; a traces URL (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is used as-is, "/" when it
// has no path. Over gRPC only the host and scheme count (http means no TLS). Headers, timeout and
// certificates come from the exporter's own OTEL_EXPORTER_OTLP_* variables.
func newExporter(ctx context.Context, cfg config.Tracing) (sdktrace.SpanExporter, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	if cfg.Protocol == config.ProtocolGRPC {
		u.Path = ""
		return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(u.String()))
	}
	switch {
	case !cfg.TracesURL:
		u.Path = strings.TrimSuffix(u.Path, "/") + tracesPath
	case u.Path == "":
		u.Path = "/"
	}
	enc := otlptracehttp.EncodingProtobuf
	if cfg.Protocol == config.ProtocolHTTPJSON {
		enc = otlptracehttp.EncodingJSON
	}
	return otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u.String()), otlptracehttp.WithEncoding(enc))
}

// newResource is the service: its name, version and the configured attributes, built from the
// settings alone (no detector), so the resource is exactly what the settings say. cfg.ServiceName
// already follows the specification's order (config: OTEL_SERVICE_NAME, then service.name in the
// resource attributes, then the default).
func newResource(cfg config.Tracing, version string) *resource.Resource {
	attrs := make([]attribute.KeyValue, 0, len(cfg.ResourceAttributes)+2)
	for _, a := range cfg.ResourceAttributes {
		if a.Key != string(semconv.ServiceNameKey) { // the one service.name is cfg.ServiceName
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
// same size) never fills and never drops uncounted; the counted exporter marks spans done. state
// holds the unexported count and, in closedBit, whether close has counted them: every transition
// is one compare-and-swap, so a span is counted by done or by close, never both.
type gate struct {
	next    sdktrace.SpanProcessor
	limit   int64
	state   atomic.Int64
	dropped atomic.Uint64
}

const closedBit = int64(1) << 62

func (g *gate) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) { g.next.OnStart(ctx, s) }

func (g *gate) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	for {
		v := g.state.Load()
		if v&closedBit != 0 || v >= g.limit {
			g.dropped.Add(1)
			return
		}
		if g.state.CompareAndSwap(v, v+1) {
			break
		}
	}
	g.next.OnEnd(s)
}

func (g *gate) Shutdown(ctx context.Context) error   { return g.next.Shutdown(ctx) }
func (g *gate) ForceFlush(ctx context.Context) error { return g.next.ForceFlush(ctx) }

// close counts the spans still unexported once the processor has stopped.
func (g *gate) close() {
	for {
		v := g.state.Load()
		if v&closedBit != 0 {
			return
		}
		if g.state.CompareAndSwap(v, closedBit) {
			g.dropped.Add(uint64(v))
			return
		}
	}
}

// done marks n admitted spans as exported, lost of them lost.
func (g *gate) done(n, lost int) {
	for {
		v := g.state.Load()
		if v&closedBit != 0 {
			return // close already counted them
		}
		if g.state.CompareAndSwap(v, v-int64(n)) {
			g.dropped.Add(uint64(lost))
			return
		}
	}
}

// counted is the exporter behind the gate. It exports the spans with the settings' resource (not
// the SDK's environment-merged one) and reports every export as a success to the processor: the
// failure is counted here, and the SDK's global error handler (which would print the exporter's
// text, the collector's address included) never sees it.
type counted struct {
	sdktrace.SpanExporter
	g   *gate
	res *resource.Resource
}

func (c counted) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	wrapped, out := make([]resourced, len(spans)), make([]sdktrace.ReadOnlySpan, len(spans))
	for i, s := range spans {
		wrapped[i] = resourced{s, c.res}
		out[i] = &wrapped[i]
	}
	err := c.SpanExporter.ExportSpans(ctx, out)
	c.g.done(len(spans), lost(err, len(spans)))
	return nil
}

// resourced is a span with the settings' resource.
type resourced struct {
	sdktrace.ReadOnlySpan
	res *resource.Resource
}

func (r *resourced) Resource() *resource.Resource { return r.res }
