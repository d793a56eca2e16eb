package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config"
)

// A caller's trace ID is outside input: one that is a configured credential (an observer token of
// 32 lowercase hex digits here) stays out of the decision record, with tracing off or on, while an
// ordinary one is kept.
func TestSecretTraceIDStaysOutOfTheRecord(t *testing.T) {
	const secret = "0af7651916cd43dd8448eb211c80319c"
	lookup := func(k string) (string, bool) {
		if k == config.EnvObserverTokens {
			return secret, true
		}
		return env(k)
	}
	for _, tc := range []struct{ name, extra string }{{"off", ""}, {"on", "on"}} {
		t.Run(tc.name, func(t *testing.T) {
			ms := startMembers(t, 2)
			extra := ""
			if tc.extra != "" {
				extra = startCollector(t).tracingYAML("always_on")
			}
			r := startRouterWith(t, replicaYAML(ms, tierOpts{strategy: "round_robin", extra: extra}), routerOptions{env: lookup})
			status, _ := tracedPost(t, r, "/v1/chat/completions", chatBody(2, false),
				map[string]string{"Traceparent": "00-" + secret + "-" + callerSpan + "-01"})
			require.Equal(t, http.StatusOK, status)
			r.wait(t, 1)
			assert.Empty(t, r.srv.Decisions().Recent(1)[0].TraceID, "a credential never enters a record")
			status, _ = tracedPost(t, r, "/v1/chat/completions", chatBody(2, false), map[string]string{"Traceparent": callerParent})
			require.Equal(t, http.StatusOK, status)
			r.wait(t, 1)
			assert.Equal(t, callerTrace, r.srv.Decisions().Recent(1)[0].TraceID)
		})
	}
}
