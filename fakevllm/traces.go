package fakevllm

import (
	"net/http"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"
)

// What the member keeps of the W3C trace context its callers send (vLLM with --otlp-traces-endpoint
// joins the trace they name; the fake only remembers it), so tests and the demo can see a trace cross
// the router's hop: the last MaxTraces requests that carried a traceparent, on GET /admin/traces.
const (
	MaxTraces          = 64
	maxTraceValueBytes = 1024 // a longer value is kept as "" (it is nothing a tracer would send)
)

// Trace is one received trace context: the inference path and the headers exactly as they came.
type Trace struct {
	Path        string `json:"path"`
	TraceParent string `json:"traceparent"`
	TraceState  string `json:"tracestate,omitempty"`
	// Baggage reports whether the request carried a baggage header (its value is not kept).
	Baggage bool `json:"baggage,omitempty"`
}

// traceLog is the bounded list of received trace contexts, oldest first.
type traceLog struct {
	mu   sync.Mutex
	list []Trace
}

// record is the middleware of the inference routes.
func (l *traceLog) record(c *gin.Context) {
	h := c.Request.Header
	if tp := h.Get("Traceparent"); tp != "" {
		t := Trace{Path: c.Request.URL.Path, TraceParent: bounded(tp), TraceState: bounded(strings.Join(h.Values("Tracestate"), ",")),
			Baggage: len(h.Values("Baggage")) > 0}
		l.mu.Lock()
		if len(l.list) == MaxTraces {
			l.list = append(l.list[:0], l.list[1:]...)
		}
		l.list = append(l.list, t)
		l.mu.Unlock()
	}
	c.Next()
}

func bounded(v string) string {
	if len(v) > maxTraceValueBytes {
		return ""
	}
	return v
}

// Traces returns the trace contexts received so far (at most MaxTraces, oldest first).
func (s *Server) Traces() []Trace {
	s.traces.mu.Lock()
	defer s.traces.mu.Unlock()
	return append([]Trace{}, s.traces.list...)
}

// getTraces answers GET /admin/traces.
func (s *Server) getTraces(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"traces": s.Traces()})
}
