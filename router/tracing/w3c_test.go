package tracing

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

const (
	tid = "4bf92f3577b34da6a3ce929d0e0e4736"
	sid = "00f067aa0ba902b7"
	tp  = "00-" + tid + "-" + sid + "-01"
)

func TestParseTraceParent(t *testing.T) {
	cases := []struct {
		in, want string
	}{
		{tp, tp},
		{"00-" + tid + "-" + sid + "-00", "00-" + tid + "-" + sid + "-00"},
		{"01-" + tid + "-" + sid + "-01", tp},
		{"cc-" + tid + "-" + sid + "-01-future", tp},
		{"cc-" + tid + "-" + sid + "-01future", ""},
		{tp + "-", ""},
		{"ff-" + tid + "-" + sid + "-01", ""},
		{"00-" + strings.ToUpper(tid) + "-" + sid + "-01", ""},
		{"00-" + strings.Repeat("0", 32) + "-" + sid + "-01", ""},
		{"00-" + tid + "-" + strings.Repeat("0", 16) + "-01", ""},
		{"00-" + tid + "-" + sid + "-0g", ""},
		{"00_" + tid + "-" + sid + "-01", ""},
		{"", ""},
		{tp[:54], ""},
	}
	for _, c := range cases {
		got, ok := ParseTraceParent(c.in)
		assert.Equal(t, c.want, got, c.in)
		assert.Equal(t, c.want != "", ok, c.in)
	}
}

func TestIncoming(t *testing.T) {
	h := http.Header{}
	assert.False(t, Incoming(h).Valid())
	h["Traceparent"] = []string{tp}
	h["Tracestate"] = []string{"a=1", "b=2"}
	in := Incoming(h)
	assert.Equal(t, Parent{TraceParent: tp, TraceState: "a=1,b=2"}, in)
	assert.Equal(t, tid, in.TraceID())

	h["Tracestate"] = []string{"Not A Valid=State"}
	assert.Equal(t, Parent{TraceParent: tp}, Incoming(h), "a malformed tracestate goes alone")
	h["Tracestate"] = []string{"a=" + strings.Repeat("x", MaxTraceStateBytes)}
	assert.Equal(t, Parent{TraceParent: tp}, Incoming(h), "an oversized tracestate goes alone")
	h["Traceparent"] = []string{tp, tp}
	assert.False(t, Incoming(h).Valid(), "two traceparents are ambiguous")
}

// Reading a caller's valid traceparent costs no allocation: propagation is always on.
func TestIncomingAllocatesNothing(t *testing.T) {
	h := http.Header{"Traceparent": []string{tp}}
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = Incoming(h) }))
	empty := http.Header{}
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = Incoming(empty) }))
}

// FuzzParseTraceParent: whatever a caller sends, an accepted value is a version-00 traceparent that
// parses again to itself, with the input's trace ID.
func FuzzParseTraceParent(f *testing.F) {
	for _, s := range []string{tp, "01-" + tid + "-" + sid + "-01-x", "ff-" + tid + "-" + sid + "-01", "", "00-0-0-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := ParseTraceParent(s)
		if !ok {
			assert.Empty(t, got)
			return
		}
		assert.Len(t, got, 55)
		assert.True(t, strings.HasPrefix(got, "00-"))
		assert.Equal(t, s[3:35], got[3:35])
		again, ok := ParseTraceParent(got)
		assert.True(t, ok)
		assert.Equal(t, got, again)
	})
}
