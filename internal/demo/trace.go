package demo

import (
	"fmt"
	"io"
	"strings"

	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/decisionlog"
)

// The driven demo sends every request with its own W3C traceparent, as a traced caller would, and
// shows it crossing the router's hop: the decision records carry its trace ID, and each member keeps
// the trace context it received (GET /admin/traces).

// demoTracePrefix marks the demo's trace IDs: the first 16 of their 32 hex digits.
const demoTracePrefix = "00000000000a7011"

// traceparent is driven request i's caller trace context (sampled).
func traceparent(i int) string {
	return fmt.Sprintf("00-%s%016x-%016x-01", demoTracePrefix, i+1, i+1)
}

// printTraces writes how many decision records joined the callers' traces and one request's
// traceparent as the caller sent it and as its member received it.
func printTraces(out io.Writer, members *Members, decisions []decisionlog.Record) {
	joined := 0
	for _, r := range decisions {
		if strings.HasPrefix(r.TraceID, demoTracePrefix) {
			joined++
		}
	}
	fmt.Fprintf(out, "\ntrace context: %d of %d decision records carry the caller's trace_id\n", joined, len(decisions))
	for i, m := range members.replicas.Members() {
		if seen, ok := lastDemoTrace(m); ok {
			fmt.Fprintf(out, "  demo-replicas/vllm-%d received traceparent %s (GET %s/admin/traces)\n", i, seen, m.URL())
		}
	}
}

// lastDemoTrace is the last demo traceparent member m received.
func lastDemoTrace(m *fakevllm.Member) (string, bool) {
	traces := m.Server().Traces()
	for i := len(traces) - 1; i >= 0; i-- {
		if tp := traces[i].TraceParent; strings.HasPrefix(tp, "00-"+demoTracePrefix) {
			return tp, true
		}
	}
	return "", false
}
