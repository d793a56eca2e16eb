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

// benchKey is a realistic upstream key: the relay scans what a keyed upstream sends for it.
const benchKey = "sk-proj-Q7vLm2Xa9RtBk4WzHn3pE8sYd5Uc1Jf6Gi0Ko"

func benchRelay(b *testing.B, payload []byte, contentType string, stream bool) {
	benchUpstream(b, payload, contentType, Upstream{Stream: stream})
}

// benchUpstream relays payload, served with contentType, for the attempt up (whose URL, path, body and
// request ID it fills in).
func benchUpstream(b *testing.B, payload []byte, contentType string, up Upstream) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
		_, _ = w.Write(payload)
	}))
	defer srv.Close()
	rl := New(nil, Options{})
	up.BaseURL, up.Path, up.Body, up.RequestID = srv.URL, "/v1/chat/completions", []byte(`{"model":"m"}`), "req-1"
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

func ordinary1KiB() []byte { return []byte(`{"pad":"` + strings.Repeat("x", 1024-10) + `"}`) }

func sse64() []byte {
	var sb strings.Builder
	for k := range 64 {
		sb.WriteString("data: " + chunk(k) + "\n\n")
	}
	sb.WriteString("data: [DONE]\n\n")
	return []byte(sb.String())
}

// BenchmarkOrdinary1KiB relays a 1 KiB JSON body from a zero-latency loopback upstream.
func BenchmarkOrdinary1KiB(b *testing.B) {
	benchRelay(b, ordinary1KiB(), "application/json", false)
}

// BenchmarkOrdinary1KiBKeyed is BenchmarkOrdinary1KiB for a keyed upstream.
func BenchmarkOrdinary1KiBKeyed(b *testing.B) {
	benchUpstream(b, ordinary1KiB(), "application/json", Upstream{APIKey: benchKey})
}

// BenchmarkSSE64 relays a 64-event chat stream plus [DONE] from a zero-latency loopback upstream.
func BenchmarkSSE64(b *testing.B) {
	benchRelay(b, sse64(), "text/event-stream", true)
}

// BenchmarkSSE64Keyed is BenchmarkSSE64 for a keyed upstream.
func BenchmarkSSE64Keyed(b *testing.B) {
	benchUpstream(b, sse64(), "text/event-stream", Upstream{Stream: true, APIKey: benchKey})
}

// audio64KiB is 64 KiB of bytes that look like PCM audio: every byte value, in a fixed order.
func audio64KiB() []byte {
	out := make([]byte, 64<<10)
	for i := range out {
		out[i] = byte(i*131 + i>>8)
	}
	return out
}

// BenchmarkPassThrough64KiB relays a 64 KiB audio body read by read.
func BenchmarkPassThrough64KiB(b *testing.B) {
	benchUpstream(b, audio64KiB(), "audio/wav", Upstream{PassThrough: true})
}

// BenchmarkPassThrough64KiBKeyed is BenchmarkPassThrough64KiB for a keyed upstream.
func BenchmarkPassThrough64KiBKeyed(b *testing.B) {
	benchUpstream(b, audio64KiB(), "audio/wav", Upstream{PassThrough: true, APIKey: benchKey})
}
