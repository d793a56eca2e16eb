package tracing

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// The W3C Trace Context headers (https://www.w3.org/TR/trace-context/), as net/http canonicalizes
// them. baggage is deliberately absent: it may carry the caller's data, and nothing forwards it.
const (
	HeaderTraceParent = "Traceparent"
	HeaderTraceState  = "Tracestate"
)

// MaxTraceStateBytes bounds a forwarded tracestate: the W3C recommendation's 512 characters. A longer
// one is dropped whole, the traceparent still forwarded.
const MaxTraceStateBytes = 512

// Parent is a caller's trace context that passed the W3C grammar: TraceParent in version-00 form,
// TraceState "" when the caller sent none or one that failed its grammar or bound.
type Parent struct {
	TraceParent string
	TraceState  string
}

// Valid reports whether the caller sent a usable traceparent.
func (p Parent) Valid() bool { return p.TraceParent != "" }

// TraceID is the parent's 32 lowercase hex digits; "" when not Valid.
func (p Parent) TraceID() string {
	if !p.Valid() {
		return ""
	}
	return p.TraceParent[3:35]
}

// Incoming reads the caller's trace context from h. Exactly one traceparent header is accepted
// (two are ambiguous); tracestate headers are joined as one list. It allocates nothing when the
// caller sent no traceparent, or a version-00 one without tracestate.
func Incoming(h http.Header) Parent {
	tp := h[HeaderTraceParent]
	if len(tp) != 1 {
		return Parent{}
	}
	parent, ok := ParseTraceParent(tp[0])
	if !ok {
		return Parent{}
	}
	return Parent{TraceParent: parent, TraceState: parseTraceState(h[HeaderTraceState])}
}

// ParseTraceParent checks one traceparent value against the W3C grammar: version (two lowercase hex
// digits, not ff), a 32-digit trace ID and a 16-digit parent ID (lowercase hex, not all zeros) and
// two flag digits, separated by '-'. Version 00 is exactly that long; a later version may carry more
// after a further '-', which a version-00 reader ignores. It returns the value in version-00 form
// (the value itself for version 00: no allocation) and whether it passed.
func ParseTraceParent(v string) (string, bool) {
	if len(v) < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-' {
		return "", false
	}
	version := v[0:2]
	if !lowerHex(version) || version == "ff" || !lowerHex(v[53:55]) {
		return "", false
	}
	if !nonZeroHex(v[3:35]) || !nonZeroHex(v[36:52]) {
		return "", false
	}
	if version == "00" {
		if len(v) != 55 {
			return "", false
		}
		return v, true
	}
	if len(v) > 55 && v[55] != '-' {
		return "", false
	}
	return "00" + v[2:55], true
}

// parseTraceState joins the tracestate headers and keeps the list when it passes the W3C grammar
// (OpenTelemetry's parser: at most 32 members, keys and values in their grammars) and the bound.
func parseTraceState(vals []string) string {
	if len(vals) == 0 {
		return ""
	}
	joined := vals[0]
	if len(vals) > 1 {
		joined = strings.Join(vals, ",")
	}
	if len(joined) > MaxTraceStateBytes {
		return ""
	}
	ts, err := trace.ParseTraceState(joined)
	if err != nil {
		return ""
	}
	return ts.String()
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func nonZeroHex(s string) bool {
	return lowerHex(s) && strings.Trim(s, "0") != ""
}
