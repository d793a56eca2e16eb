package tracing

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// Span is one front-door request's server span and the moments its children need, marked by the
// server as the walk passes them. Its attributes are the decision record's bounded metadata: IDs,
// enums and numbers, never a URL, an address, a credential, a prompt or a response.
type Span struct {
	span                 trace.Span
	tracer               trace.Tracer // the provider's, kept: no provider lookup (and its mutex) per child
	up                   trace.Span   // the upstream attempt's child, live from its start; nil before
	admitStart, admitEnd time.Time
	upStart              time.Time
	refusal              string
	served               string // the served model of the tier the request was admitted to
}

// Start begins the server span of a request that arrived at now, the child of the caller's trace
// context when h carries a valid one (Incoming), else the root of a new trace.
func (p *Provider) Start(ctx context.Context, h http.Header, method, route string, now time.Time) *Span {
	if in := Incoming(h); in.Valid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, remote(in))
	}
	_, span := p.tracer.Start(ctx, method+" "+route, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(now),
		trace.WithAttributes(semconv.HTTPRequestMethodKey.String(method), semconv.HTTPRoute(route)))
	return &Span{span: span, tracer: p.tracer}
}

// remote is the caller's span context; the parser already checked every digit.
func remote(in Parent) trace.SpanContext {
	tid, _ := trace.TraceIDFromHex(in.TraceParent[3:35])
	sid, _ := trace.SpanIDFromHex(in.TraceParent[36:52])
	flags, _ := strconv.ParseUint(in.TraceParent[53:55], 16, 8)
	ts, _ := trace.ParseTraceState(in.TraceState)
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags),
		TraceState: ts, Remote: true})
}

// Admitting marks the start of admission (the queue wait included); Admitted its end, either way.
func (s *Span) Admitting(now time.Time) {
	if s.admitStart.IsZero() {
		s.admitStart = now
	}
}

// Admitted marks the end of admission.
func (s *Span) Admitted(now time.Time) { s.admitEnd = now }

// Refused keeps the refusal code the caller was answered with.
func (s *Span) Refused(code string) { s.refusal = code }

// Serving keeps the served model of the tier the request was admitted to (after a reload raced its
// admission, the admitting generation's, not the arrival's): gen_ai.response.model.
func (s *Span) Serving(model string) { s.served = model }

// Upstream starts the upstream attempt's child span at now, live, and returns the trace context to
// send the member: that child as its parent (so the member's spans nest under the attempt), the
// caller's tracestate kept. An unsampled request starts no child: nothing of it is exported, and the
// member gets the server span's context with its flags.
func (s *Span) Upstream(now time.Time) (traceparent, tracestate string) {
	sc := s.span.SpanContext()
	if s.span.IsRecording() {
		if s.up == nil {
			s.upStart = now
			ctx := trace.ContextWithSpan(context.Background(), s.span)
			_, s.up = s.tracer.Start(ctx, "anvil.upstream", trace.WithTimestamp(now), trace.WithSpanKind(trace.SpanKindClient))
		}
		sc = s.up.SpanContext()
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String(), sc.TraceState().String()
}

// TraceID is the span's trace ID in hex, for the decision record.
func (s *Span) TraceID() string { return s.span.SpanContext().TraceID().String() }

// End is what the record alone cannot say about a request.
type End struct {
	Operation string // gen_ai.operation.name; "" when the endpoint has none
}

// ProviderName is gen_ai.provider.name on a span with a gen_ai.operation.name: the telemetry flavour
// of the API the router serves (OpenAI's), whatever engine the member runs.
const ProviderName = "openai"

// End ends the span at the record's end, with the record's attributes and, for an admitted request,
// the admission and upstream children. A refusal is the one span, with its refusal code.
func (s *Span) End(rec decisionlog.Record, e End) {
	if !s.span.IsRecording() { // not sampled: nothing is exported, so nothing is built
		s.span.End()
		return
	}
	end := rec.Start.Add(rec.Duration)
	attrs := requestAttributes(rec, e, s.served)
	admitted := rec.Outcome.Admitted() && !s.admitEnd.IsZero()
	if !admitted {
		attrs = append(attrs, admissionAttributes(rec)...)
		if s.refusal != "" {
			attrs = append(attrs, attribute.String("anvil.refusal.code", s.refusal))
		}
	}
	s.span.SetAttributes(attrs...)
	if rec.Status >= 500 {
		s.span.SetStatus(codes.Error, "")
	}
	if admitted {
		s.admission(rec)
	}
	if s.up != nil { // started live: the member's spans name it as their parent, so it always ends
		s.upstream(rec, end)
	}
	s.span.End(trace.WithTimestamp(end))
}

func requestAttributes(rec decisionlog.Record, e End, served string) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 20)
	attrs = append(attrs, semconv.HTTPResponseStatusCode(rec.Status), attribute.String("anvil.request_id", rec.RequestID),
		attribute.String("anvil.outcome", string(rec.Outcome)))
	if e.Operation != "" {
		attrs = append(attrs, semconv.GenAIOperationNameKey.String(e.Operation), semconv.GenAIProviderNameKey.String(ProviderName))
	}
	if rec.Alias != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(rec.Alias))
	}
	if rec.Attempts == 1 && served != "" {
		attrs = append(attrs, semconv.GenAIResponseModel(served))
	}
	if rec.Usage.Reported {
		attrs = append(attrs, semconv.GenAIUsageInputTokens(int(rec.Usage.Prompt)), semconv.GenAIUsageOutputTokens(int(rec.Usage.Completion)))
	}
	return attrs
}

// admissionAttributes are the decision record's admission evidence: the tier, how it routes, the
// member chosen, the queue wait and, for a capacity tier, the decision and the winning score row.
func admissionAttributes(rec decisionlog.Record) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 16)
	if rec.Tier != "" {
		attrs = append(attrs, attribute.String("anvil.tier", rec.Tier), attribute.String("anvil.route", string(rec.Route)))
	}
	if rec.Strategy != "" {
		attrs = append(attrs, attribute.String("anvil.strategy", string(rec.Strategy)))
	}
	if rec.Member != "" {
		attrs = append(attrs, attribute.String("anvil.member", rec.Member))
	}
	if rec.Queued > 0 {
		attrs = append(attrs, attribute.Int64("anvil.admission.queued_ns", int64(rec.Queued)))
	}
	if rec.EjectedMembers > 0 {
		attrs = append(attrs, attribute.Int("anvil.admission.ejected_members", rec.EjectedMembers))
	}
	if d := rec.ReplicaScheduler; d != nil {
		attrs = append(attrs, decisionAttributes(*d)...)
	}
	return attrs
}

// decisionAttributes are the decision's reason, eligible count and selected member's score row.
func decisionAttributes(d scheduler.Decision) []attribute.KeyValue {
	sel, _ := d.SelectedMemberID()
	attrs := []attribute.KeyValue{attribute.String("anvil.decision.selected_member_id", sel),
		attribute.String("anvil.decision.reason", d.Reason().String()),
		attribute.Int("anvil.decision.eligible_count", d.EligibleCount())}
	for i := range d.EligibleCount() {
		sc := d.Score(i)
		if sc.MemberID() != sel {
			continue
		}
		attrs = append(attrs, attribute.Int64("anvil.score.local_active", sc.LocalActive()),
			attribute.Int64("anvil.score.local_capacity", sc.LocalCapacity()),
			attribute.Bool("anvil.score.upstream_unknown", sc.UpstreamUnknown()),
			attribute.String("anvil.score.freshness", sc.Freshness().String()),
			attribute.Int("anvil.score.rotating_rank", sc.RotatingRank()))
		if ppm, ok := sc.UpstreamPressurePPM(); ok {
			attrs = append(attrs, attribute.Int64("anvil.score.upstream_pressure_ppm", ppm))
		}
	}
	return attrs
}

// admission is the child span of the admission, its queue wait an event.
func (s *Span) admission(rec decisionlog.Record) {
	ctx := trace.ContextWithSpan(context.Background(), s.span)
	_, child := s.tracer.Start(ctx, "anvil.admission", trace.WithTimestamp(s.admitStart),
		trace.WithAttributes(admissionAttributes(rec)...))
	if rec.Queued > 0 {
		child.AddEvent("anvil.admission.queued", trace.WithTimestamp(s.admitEnd.Add(-rec.Queued)))
	}
	child.End(trace.WithTimestamp(s.admitEnd))
}

// upstream ends the upstream attempt's child, started live by Upstream: its first byte an event, its
// outcome and status attributes.
func (s *Span) upstream(rec decisionlog.Record, end time.Time) {
	child := s.up
	child.SetAttributes(attribute.String("anvil.member", rec.Member),
		attribute.String("anvil.upstream.outcome", string(rec.Outcome)), semconv.HTTPResponseStatusCode(rec.Status))
	if rec.FirstByte > 0 {
		child.AddEvent("anvil.upstream.first_byte", trace.WithTimestamp(s.upStart.Add(rec.FirstByte)))
	}
	if rec.Outcome != decisionlog.OutcomeSuccess {
		child.SetStatus(codes.Error, "")
	}
	child.End(trace.WithTimestamp(end))
}
