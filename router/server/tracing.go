package server

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/relay"
	"github.com/anvil-llm/anvil/router/request"
	"github.com/anvil-llm/anvil/router/routing"
	"github.com/anvil-llm/anvil/router/tracing"
)

// Tracing in the server: s.tracer is nil when tracing is off, and then every hook below is that nil
// check and nothing more. Propagation does not depend on it: a caller's valid traceparent (and
// tracestate) reaches the member either way, with the router's span as the parent when tracing is
// on, unchanged when it is off (tracing.Incoming decides what is valid; everything else is dropped).

const ctxSpan = "anvil.span"

// startSpan is the middleware, registered only with tracing on, that begins a front-door request's
// server span after authentication; finish ends it from the request's decision record.
func (s *Server) startSpan(c *gin.Context) {
	route := c.FullPath()
	if !frontDoor(route) {
		c.Next()
		return
	}
	c.Set(ctxSpan, s.tracer.Start(context.Background(), c.Request.Header, c.Request.Method, route, s.now()))
	c.Next()
}

// frontDoor reports the routes whose requests walk to a member and leave a decision record.
func frontDoor(route string) bool {
	for ep := request.ChatCompletions; ep <= request.AudioSpeech; ep++ {
		if route == ep.Path() {
			return true
		}
	}
	return false
}

// span is the request's span; nil with tracing off (or on a route without one).
func (s *Server) span(c *gin.Context) *tracing.Span {
	if s.tracer == nil {
		return nil
	}
	v, _ := c.Get(ctxSpan)
	sp, _ := v.(*tracing.Span)
	return sp
}

// admitting and admitted mark admission's start and end on the span.
func (s *Server) admitting(c *gin.Context) {
	if sp := s.span(c); sp != nil {
		sp.Admitting(s.now())
	}
}

func (s *Server) admitted(c *gin.Context) {
	if sp := s.span(c); sp != nil {
		sp.Admitted(s.now())
	}
}

// serving keeps the served model of the tier the request was admitted to on its span.
func (s *Server) serving(c *gin.Context, tier config.Tier) {
	if sp := s.span(c); sp != nil {
		sp.Serving(tier.ServedModel)
	}
}

// propagate sets the trace context the upstream attempt carries, and marks the attempt's start.
func (s *Server) propagate(c *gin.Context, up *relay.Upstream) {
	if sp := s.span(c); sp != nil {
		up.TraceParent, up.TraceState = sp.Upstream(s.now())
		return
	}
	in := tracing.Incoming(c.Request.Header)
	up.TraceParent, up.TraceState = in.TraceParent, in.TraceState
}

// traced joins the attempt's record to the request's trace, before it is finished. A trace ID the
// caller chose is outside input like its X-Request-ID: one that is or holds a configured credential
// stays out of the record (the secret filter of callerid.go).
func (s *Server) traced(c *gin.Context, at *routing.Attempt) {
	var tid string
	if sp := s.span(c); sp != nil {
		tid = sp.TraceID()
	} else {
		tid = tracing.Incoming(c.Request.Header).TraceID()
	}
	if tid != "" && s.genOf(c).ids.contains(tid) {
		return
	}
	at.Traced(tid)
}

// endSpan ends the request's span with its finished record.
func (s *Server) endSpan(c *gin.Context, rec decisionlog.Record) {
	sp := s.span(c)
	if sp == nil {
		return
	}
	sp.End(rec, tracing.End{Operation: operation(c.FullPath())})
}

// refusedSpan keeps the refusal code a request was answered with on its span, if it has one. abort
// has no server to ask whether tracing is on (and the house rules keep process-wide state out), so
// this is one key lookup, on the refusal path only: a request that is answered normally never
// comes here.
func refusedSpan(c *gin.Context, code string) {
	if v, ok := c.Get(ctxSpan); ok {
		v.(*tracing.Span).Refused(code)
	}
}

// operation is gen_ai.operation.name of a front-door route ("" for the audio routes, which the
// semantic conventions do not name).
func operation(route string) string {
	switch route {
	case request.ChatCompletions.Path(), request.Responses.Path():
		return "chat"
	case request.Completions.Path():
		return "text_completion"
	case request.Embeddings.Path():
		return "embeddings"
	}
	return ""
}

// DefaultTraceFlushCap is the most the trace flush at shutdown takes (Options.TraceFlushCap): a
// collector that accepts and never answers holds Provider.Shutdown for its whole context, and the
// process managers' margins past shutdown_grace (systemd's TimeoutStopSec, the pods' ExitMargin) are
// seconds, not another grace.
const DefaultTraceFlushCap = 3 * time.Second

func (s *Server) traceFlushCap() time.Duration {
	if s.opts.TraceFlushCap > 0 {
		return s.opts.TraceFlushCap
	}
	return DefaultTraceFlushCap
}

// fixTraceDeadline fixes, at SIGTERM (the grace's start), when the trace flush must end: the grace
// plus the cap. Cut requests and their drain eat into it; the flush never extends it.
func (s *Server) fixTraceDeadline(now time.Time) {
	s.stopBy.CompareAndSwap(0, now.Add(s.current().cfg.ShutdownGrace()+s.traceFlushCap()).UnixNano())
}

// traceFlushBound is how long the flush may take now: what is left of the deadline fixed at
// SIGTERM, at most the cap (the cap alone when Close comes without a shutdown, for embedders).
func (s *Server) traceFlushBound(now time.Time) time.Duration {
	bound := s.traceFlushCap()
	if by := s.stopBy.Load(); by != 0 {
		bound = min(bound, max(0, time.Unix(0, by).Sub(now)))
	}
	return bound
}

// shutdownTracer exports the spans still queued within traceFlushBound and then gives up (what is
// left counts as dropped). Close calls it last, after the last handler and the decision log's close,
// so every request's span is queued and no record waits on a collector.
func (s *Server) shutdownTracer() {
	if s.tracer == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.traceFlushBound(time.Now()))
	defer cancel()
	if err := s.tracer.Shutdown(ctx); err != nil {
		s.log.Warn("trace export did not finish within the trace flush bound", "dropped_spans", s.tracer.Dropped())
	}
}
