package tracing

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

// sampledRequest is one admitted request's span, as the server drives it.
func sampledRequest(p *Provider, h http.Header) {
	now := time.Now()
	sp := p.Start(context.Background(), h, "POST", "/v1/chat/completions", now)
	sp.Admitting(now)
	sp.Admitted(now)
	sp.Serving("served")
	sp.Upstream(now)
	sp.End(decisionlog.Record{Start: now, Duration: time.Millisecond, Status: 200, Attempts: 1,
		Outcome: decisionlog.OutcomeSuccess, RequestID: "r", Alias: "chat"}, End{Operation: "chat"})
}

// The children use the tracer the span keeps: no provider lookup, its mutex or its allocation per
// sampled request.
// BenchmarkSampledSpan is one sampled, admitted request's spans (server, admission, upstream).
func BenchmarkSampledSpan(b *testing.B) {
	p, _ := New(context.Background(), on(), Options{Exporter: &stalled{}})
	h := http.Header{"Traceparent": []string{tp}}
	b.ReportAllocs()
	for b.Loop() {
		sampledRequest(p, h)
	}
}
