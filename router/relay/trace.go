package relay

import "net/http"

// setTrace adds the W3C trace context to the upstream request: the caller's, checked by the server
// (router/tracing), or the router's own span as the parent. Only these two headers cross the hop: the
// request is built from scratch, so baggage and every other caller header stay behind. A value that
// is not a safe header value is not sent.
func setTrace(h http.Header, up Upstream) {
	if up.TraceParent == "" || !validTraceValue(up.TraceParent) {
		return
	}
	h["Traceparent"] = []string{up.TraceParent}
	if up.TraceState != "" && validTraceValue(up.TraceState) {
		h["Tracestate"] = []string{up.TraceState}
	}
}

// maxTraceValue bounds either header: a traceparent is 55 bytes, a tracestate the server forwards at
// most 512.
const maxTraceValue = 1024

// validTraceValue accepts visible ASCII and spaces, at most maxTraceValue bytes.
func validTraceValue(s string) bool {
	if len(s) > maxTraceValue {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}
