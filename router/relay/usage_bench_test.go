package relay

import (
	"strings"
	"testing"
)

// Benchmarks of bodies that carry the upstream's usage, as vLLM writes them: the relay reads the
// counts out of what it relays, so these measure that read's share.

// ordinaryUsage1KiB is a 1 KiB chat completion with its usage object at the end, as vLLM orders it.
func ordinaryUsage1KiB() []byte {
	head := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"`
	tail := `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"total_tokens":140,"completion_tokens":128}}`
	return []byte(head + strings.Repeat("x", 1024-len(head)-len(tail)) + tail)
}

// sse64Usage is sse64 with the include_usage chunk before [DONE].
func sse64Usage() []byte {
	var sb strings.Builder
	for k := range 64 {
		sb.WriteString("data: " + chunk(k) + "\n\n")
	}
	sb.WriteString(`data: {"id":"c1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":12,"total_tokens":76,"completion_tokens":64}}` + "\n\n")
	sb.WriteString("data: [DONE]\n\n")
	return []byte(sb.String())
}

// responses64 is a Responses stream: created, 64 text deltas, completed (with usage), no [DONE].
func responses64() []byte {
	var sb strings.Builder
	sb.WriteString("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[],\"usage\":null}}\n\n")
	for k := range 64 {
		sb.WriteString("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"t" + strings.Repeat("x", k%7) + "\"}\n\n")
	}
	sb.WriteString("event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":66,\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"output\":[{\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"" + strings.Repeat("t", 256) + "\"}]}],\"usage\":{\"input_tokens\":12,\"output_tokens\":64,\"total_tokens\":76}}}\n\n")
	return []byte(sb.String())
}

// BenchmarkOrdinaryUsage1KiB relays a 1 KiB chat completion that reports usage.
func BenchmarkOrdinaryUsage1KiB(b *testing.B) {
	benchRelay(b, ordinaryUsage1KiB(), "application/json", false)
}

// BenchmarkSSE64Usage relays a 64-event chat stream with its include_usage chunk.
func BenchmarkSSE64Usage(b *testing.B) {
	benchRelay(b, sse64Usage(), "text/event-stream", true)
}

// BenchmarkResponses64 relays a 64-delta Responses stream ending in response.completed.
func BenchmarkResponses64(b *testing.B) {
	benchRelay(b, responses64(), "text/event-stream", true)
}

// benchReadUsage is the usage read's own share of relaying payload: every event's data (or the
// whole body) read once, as the relay does.
func benchReadUsage(b *testing.B, payload []byte, events bool) {
	pieces := [][]byte{payload}
	if events {
		pieces = nil
		for _, ev := range strings.SplitAfter(string(payload), "\n\n") {
			if _, data, ok := strings.Cut(ev, "data: "); ok {
				pieces = append(pieces, []byte(strings.TrimSuffix(data, "\n\n")))
			}
		}
	}
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range pieces {
			_, _ = readUsage(p)
		}
	}
}

// BenchmarkReadUsageOrdinary1KiB is the read's share of BenchmarkOrdinaryUsage1KiB.
func BenchmarkReadUsageOrdinary1KiB(b *testing.B) { benchReadUsage(b, ordinaryUsage1KiB(), false) }

// BenchmarkReadUsageOrdinaryNone1KiB is its share of BenchmarkOrdinary1KiB (no usage in the body).
func BenchmarkReadUsageOrdinaryNone1KiB(b *testing.B) { benchReadUsage(b, ordinary1KiB(), false) }

// BenchmarkReadUsageSSE64 is its share of BenchmarkSSE64Usage.
func BenchmarkReadUsageSSE64(b *testing.B) { benchReadUsage(b, sse64Usage(), true) }

// BenchmarkReadUsageResponses64 is its share of BenchmarkResponses64.
func BenchmarkReadUsageResponses64(b *testing.B) { benchReadUsage(b, responses64(), true) }
