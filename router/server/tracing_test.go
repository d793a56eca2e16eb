package server_test

import (
	"encoding/hex"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

const (
	callerTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan   = "00f067aa0ba902b7"
	callerParent = "00-" + callerTrace + "-" + callerSpan + "-01"
	plantedWord  = "PLANTEDPROMPTSECRET"
)

// tracedRouter is a capacity tier of two fake members behind a router exporting to c.
func tracedRouter(t *testing.T, c *collector, sampler string) (*router, []*member) {
	ms := startMembers(t, 2)
	return startRouter(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 4, extra: c.tracingYAML(sampler)})), ms
}

func flush(t *testing.T, r *router) {
	t.Helper()
	require.NoError(t, r.srv.FlushTraces(t.Context()))
}

// A streamed chat with a caller's traceparent: the router's server span joins the caller's trace,
// with admission and upstream children and the record's bounded attributes; the member saw the
// same trace with the router's upstream span as its parent, the caller's tracestate and no baggage;
// the decision record carries the trace ID; and nothing exported holds a URL, token, prompt or answer.
func TestTraceCrossesTheHop(t *testing.T) {
	c := startCollector(t)
	r, ms := tracedRouter(t, c, "parentbased_always_on")
	body := `{"model":"chat","messages":[{"role":"user","content":"` + plantedWord + ` ` + callerToken + `"}],"max_tokens":12,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}`
	status, answer := tracedPost(t, r, "/v1/chat/completions", body, map[string]string{
		"Traceparent": callerParent, "Tracestate": "vendor=opaque", "Baggage": "user=" + plantedWord})
	require.Equal(t, http.StatusOK, status)
	r.wait(t, 1)
	flush(t, r)

	spans := c.spans(callerTrace)
	require.Len(t, spans, 3, "the server span, admission and upstream")
	srv := byName(t, spans, "POST /v1/chat/completions")
	adm, up := byName(t, spans, "anvil.admission"), byName(t, spans, "anvil.upstream")
	assert.Equal(t, callerSpan, hex.EncodeToString(srv.ParentSpanId), "the caller's span is the parent")
	assert.Equal(t, tracepb.Span_SPAN_KIND_SERVER, srv.Kind)
	assert.Equal(t, srv.SpanId, adm.ParentSpanId)
	assert.Equal(t, srv.SpanId, up.ParentSpanId, "the upstream attempt is the server span's child")
	assertServerSpan(t, srv)
	assertAdmissionSpan(t, adm)
	assertUpstreamSpan(t, up)
	assert.Equal(t, []string{"00-" + callerTrace + "-" + hex.EncodeToString(up.SpanId) + "-01"}, memberParents(t, ms),
		"the member's parent is the router's upstream span")

	recs := r.srv.Decisions().Recent(1)
	require.Len(t, recs, 1)
	assert.Equal(t, callerTrace, recs[0].TraceID)
	planted := []string{plantedWord, callerToken, adminToken, upstreamKey, "http://", "127.0.0.1", ms[0].URL(), ms[1].URL(), c.srv.URL}
	assertNothingPlanted(t, everyString(c.all(), c.res), planted, answerPhrases(t, answer))
}

func assertServerSpan(t *testing.T, srv *tracepb.Span) {
	t.Helper()
	a := attrs(srv)
	assert.Equal(t, "/v1/chat/completions", a["http.route"])
	assert.Equal(t, "POST", a["http.request.method"])
	assert.Equal(t, "200", a["http.response.status_code"])
	assert.Equal(t, "chat", a["gen_ai.request.model"], "the alias the caller named")
	assert.Equal(t, servedModel, a["gen_ai.response.model"])
	assert.Equal(t, "chat", a["gen_ai.operation.name"])
	assert.Equal(t, "openai", a["gen_ai.provider.name"])
	assert.Equal(t, "12", a["gen_ai.usage.output_tokens"])
	assert.NotEmpty(t, a["gen_ai.usage.input_tokens"])
	assert.Equal(t, "success", a["anvil.outcome"])
}

func assertAdmissionSpan(t *testing.T, adm *tracepb.Span) {
	t.Helper()
	d := attrs(adm)
	assert.Equal(t, "replicas", d["anvil.tier"])
	assert.Equal(t, "capacity", d["anvil.strategy"])
	assert.Equal(t, "2", d["anvil.decision.eligible_count"])
	assert.Equal(t, "selected", d["anvil.decision.reason"])
	assert.Equal(t, d["anvil.member"], d["anvil.decision.selected_member_id"])
	assert.Equal(t, "4", d["anvil.score.local_capacity"])
	assert.Contains(t, d, "anvil.score.freshness")
	assert.Contains(t, d, "anvil.score.rotating_rank")
}

func assertUpstreamSpan(t *testing.T, up *tracepb.Span) {
	t.Helper()
	assert.Equal(t, tracepb.Span_SPAN_KIND_CLIENT, up.Kind)
	assert.Equal(t, "success", attrs(up)["anvil.upstream.outcome"])
	require.Len(t, up.Events, 1)
	assert.Equal(t, "anvil.upstream.first_byte", up.Events[0].Name)
	assert.LessOrEqual(t, up.StartTimeUnixNano, up.Events[0].TimeUnixNano)
	assert.LessOrEqual(t, up.Events[0].TimeUnixNano, up.EndTimeUnixNano)
}

// memberParents is every traceparent the members received; each came with the caller's tracestate
// and without baggage.
func memberParents(t *testing.T, ms []*member) []string {
	t.Helper()
	var seen []string
	for _, m := range ms {
		for _, tr := range m.fake.Traces() {
			seen = append(seen, tr.TraceParent)
			assert.Equal(t, "vendor=opaque", tr.TraceState)
			assert.False(t, tr.Baggage, "baggage never crosses the hop")
		}
	}
	return seen
}

// assertNothingPlanted checks no exported string holds a planted value or a phrase of the answer.
func assertNothingPlanted(t *testing.T, exported, planted, phrases []string) {
	t.Helper()
	for _, s := range exported {
		for _, p := range planted {
			assert.NotContains(t, s, p)
		}
		for _, w := range phrases {
			assert.NotContains(t, s, w, "the answer's text is never exported")
		}
	}
}

// answerPhrases is the streamed answer's text and every pair of consecutive words in it (one word
// alone may well be an attribute's: the fake's vocabulary has "member" and "capacity").
func answerPhrases(t *testing.T, answer string) []string {
	var text strings.Builder
	for _, m := range regexp.MustCompile(`"content":"([^"]*)"`).FindAllStringSubmatch(answer, -1) {
		text.WriteString(m[1])
	}
	words := strings.Fields(text.String())
	require.GreaterOrEqual(t, len(words), 4, "the answer has text")
	out := []string{strings.TrimSpace(text.String())}
	for i := 1; i < len(words); i++ {
		out = append(out, words[i-1]+" "+words[i])
	}
	return out
}

// A refused request is one span with its refusal code, and no upstream call: refused by a gate, and
// not admitted by a quiesced tier.
func TestRefusalIsOneSpan(t *testing.T) {
	c := startCollector(t)
	r, ms := tracedRouter(t, c, "always_on")
	status, _ := tracedPost(t, r, "/v1/chat/completions", chatBody(4096, false), map[string]string{"Traceparent": callerParent})
	require.Equal(t, http.StatusBadRequest, status, "over the tier's output gate")
	r.wait(t, 1)
	st, _ := r.admin(t, `{"action":"quiesce","tier":"replicas","reason":"upgrade"}`)
	require.Equal(t, http.StatusOK, st)
	second := "00-" + strings.Repeat("ab", 16) + "-" + callerSpan + "-01"
	status, _ = tracedPost(t, r, "/v1/chat/completions", chatBody(4, false), map[string]string{"Traceparent": second})
	require.Equal(t, http.StatusServiceUnavailable, status, "the tier is quiesced")
	r.wait(t, 1)
	flush(t, r)

	for _, tc := range []struct {
		trace, outcome, status string
	}{{callerTrace, "refused", "400"}, {strings.Repeat("ab", 16), "not_admitted", "503"}} {
		spans := c.spans(tc.trace)
		require.Len(t, spans, 1, tc.outcome)
		a := attrs(spans[0])
		assert.Equal(t, tc.outcome, a["anvil.outcome"])
		assert.NotEmpty(t, a["anvil.refusal.code"])
		assert.Equal(t, "replicas", a["anvil.tier"])
		assert.Equal(t, tc.status, a["http.response.status_code"])
	}
	assert.Zero(t, totalCalls(ms), "no upstream call")
	for _, m := range ms {
		assert.Empty(t, m.fake.Traces())
	}
}

// Propagation is on with tracing off: a valid traceparent reaches the member unchanged, and the
// record carries its trace ID; a malformed one is dropped, never forwarded; baggage never is.
func TestPropagationWithTracingOff(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "round_robin"}))
	cases := []struct {
		name, parent, want string
	}{
		{"valid", callerParent, callerParent},
		{"later version", "01-" + callerTrace + "-" + callerSpan + "-01-extra", callerParent},
		{"uppercase", "00-" + strings.ToUpper(callerTrace) + "-" + callerSpan + "-01", ""},
		{"zero trace", "00-00000000000000000000000000000000-" + callerSpan + "-01", ""},
		{"version ff", "ff-" + callerTrace + "-" + callerSpan + "-01", ""},
		{"too long", callerParent + "-00", ""},
		{"planted", "00-" + callerTrace + "-" + callerSpan + "-01 " + plantedWord, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := map[*member]int{ms[0]: len(ms[0].fake.Traces()), ms[1]: len(ms[1].fake.Traces())}
			status, _ := tracedPost(t, r, "/v1/chat/completions", chatBody(2, false),
				map[string]string{"Traceparent": tc.parent, "Tracestate": "a=b", "Baggage": "k=" + plantedWord})
			require.Equal(t, http.StatusOK, status)
			r.wait(t, 1)
			var got []string
			for _, m := range ms {
				for _, tr := range m.fake.Traces()[before[m]:] {
					got = append(got, tr.TraceParent)
					assert.Equal(t, "a=b", tr.TraceState)
					assert.False(t, tr.Baggage)
				}
			}
			rec := r.srv.Decisions().Recent(1)[0]
			if tc.want == "" {
				assert.Empty(t, got, "a malformed traceparent is never forwarded")
				assert.Empty(t, rec.TraceID)
				return
			}
			assert.Equal(t, []string{tc.want}, got)
			assert.Equal(t, callerTrace, rec.TraceID)
		})
	}
}

// Shutdown exports the queued spans within the grace: no flush by hand, the collector has them once
// Serve returns.
func TestShutdownFlushesSpans(t *testing.T) {
	c := startCollector(t)
	ms := startMembers(t, 2)
	sv := serveReal(t, replicaYAML(ms, tierOpts{strategy: "round_robin", extra: c.tracingYAML("always_on")}))
	resp := postTraced(t, sv.addr)
	require.Equal(t, http.StatusOK, resp)
	require.NoError(t, sv.stop())
	assert.Len(t, c.spans(callerTrace), 3)
	assert.Equal(t, 0.0, droppedSpans(t, sv))
}

// A collector that never answers neither delays a request nor holds shutdown past its grace: the
// spans it never took count as dropped.
func TestStalledCollectorGivesUpAtTheGrace(t *testing.T) {
	c := startCollector(t)
	c.hold = make(chan struct{})
	t.Cleanup(func() { close(c.hold) })
	ms := startMembers(t, 2)
	sv := serveReal(t, replicaYAML(ms, tierOpts{strategy: "round_robin", extra: "shutdown_grace: 1s\n" + c.tracingYAML("always_on")}))
	require.Equal(t, http.StatusOK, postTraced(t, sv.addr), "the request is answered while the collector stalls")
	require.NoError(t, sv.stop(), "Serve returns: the flush gave up at the grace")
	assert.Empty(t, c.all())
	assert.Equal(t, 3.0, droppedSpans(t, sv), "the request's three spans")
}

func postTraced(t *testing.T, addr string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(chatBody(4, false)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+callerToken)
	req.Header.Set("Traceparent", callerParent)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// droppedSpans reads anvil_router_trace_spans_dropped_total from the server's registry.
func droppedSpans(t *testing.T, sv serving) float64 {
	t.Helper()
	mfs, err := sv.srv.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "anvil_router_trace_spans_dropped_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("no anvil_router_trace_spans_dropped_total")
	return 0
}
