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
