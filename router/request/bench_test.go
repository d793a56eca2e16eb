package request

import (
	"fmt"
	"strings"
	"testing"
)

// benchBodies are the request shapes BenchmarkParseRequest measures: what callers send every day
// (a short chat turn, a long chat of 16 KiB, a Responses input list, completions token IDs) and
// the hostile body of issue 13 (about 90,000 small keys in 1 MiB for an unknown model).
func benchBodies() []struct {
	name string
	ep   Endpoint
	body []byte
} {
	long := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 16<<10/45)
	var turns strings.Builder
	for i := range 8 {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		fmt.Fprintf(&turns, `,{"role":%q,"content":%q}`, role, long[:len(long)/8])
	}
	var ids strings.Builder
	for i := range 512 {
		if i > 0 {
			ids.WriteByte(',')
		}
		fmt.Fprintf(&ids, "%d", 1000+i*37)
	}
	var keys strings.Builder
	keys.WriteString(`{"model":"nope","messages":[{"role":"user","content":"hi"}]`)
	for i := 0; keys.Len() < 1<<20-16; i++ {
		fmt.Fprintf(&keys, `,"k%d":0`, i)
	}
	keys.WriteString("}")
	return []struct {
		name string
		ep   Endpoint
		body []byte
	}{
		{"chat", ChatCompletions, []byte(`{"model":"chat","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"What is the capital of France? Answer in one word."}],"max_tokens":64,"temperature":0.2,"stream":true,"stream_options":{"include_usage":true}}`)},
		{"chat-long-16KiB", ChatCompletions, []byte(`{"model":"chat","messages":[{"role":"system","content":"You summarize."}` + turns.String() + `],"max_completion_tokens":512}`)},
		{"responses-items", Responses, []byte(`{"model":"chat","instructions":"Be brief.","input":[{"role":"user","content":[{"type":"input_text","text":"Describe this picture."},{"type":"input_image","image_url":"https://example.com/a.png"}]},{"type":"function_call_output","call_id":"c1","output":"{\"ok\":true}"}],"max_output_tokens":256,"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]}`)},
		{"completions-token-ids", Completions, []byte(`{"model":"chat","prompt":[[` + ids.String() + `]],"max_tokens":16}`)},
		{"hostile-90k-keys-1MiB", ChatCompletions, []byte(keys.String())},
	}
}

// BenchmarkParseRequest measures the one parse of a request body, per shape.
func BenchmarkParseRequest(b *testing.B) {
	for _, c := range benchBodies() {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Parse(c.ep, c.body)
			}
		})
	}
}
