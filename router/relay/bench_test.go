package relay

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

// discardWriter is a flushable ResponseWriter that keeps nothing, so the benchmarks measure the relay and
// the upstream hop, not a recorder.
type discardWriter struct {
	header http.Header
	n      int
}

func (d *discardWriter) Header() http.Header         { return d.header }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Write(b []byte) (int, error) { d.n += len(b); return len(b), nil }
func (d *discardWriter) Flush()                      {}

func benchRelay(b *testing.B, payload []byte, contentType string, stream bool) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
		_, _ = w.Write(payload)
	}))
	defer srv.Close()
	rl := New(nil, Options{})
	up := Upstream{BaseURL: srv.URL, Path: "/v1/chat/completions", Body: []byte(`{"model":"m"}`), Stream: stream, RequestID: "req-1"}
	w := &discardWriter{header: http.Header{}}
	ctx := context.Background()
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		clear(w.header)
		if res := rl.Do(ctx, w, up); res.Outcome != decisionlog.OutcomeSuccess {
			b.Fatalf("outcome %s", res.Outcome)
		}
	}
}

// BenchmarkOrdinary1KiB relays a 1 KiB JSON body from a zero-latency loopback upstream.
func BenchmarkOrdinary1KiB(b *testing.B) {
	benchRelay(b, []byte(`{"pad":"`+strings.Repeat("x", 1024-10)+`"}`), "application/json", false)
}

// BenchmarkSSE64 relays a 64-event chat stream plus [DONE] from a zero-latency loopback upstream.
func BenchmarkSSE64(b *testing.B) {
	var sb strings.Builder
	for k := range 64 {
		sb.WriteString("data: " + chunk(k) + "\n\n")
	}
	sb.WriteString("data: [DONE]\n\n")
	benchRelay(b, []byte(sb.String()), "text/event-stream", true)
}
