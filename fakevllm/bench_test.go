package fakevllm

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anvil-llm/anvil/engine"
)

// BenchmarkStreamTokens measures the HTTP layer's throughput: an engine with
// 1µs steps (so the shell, not the model, is the bottleneck), one 256-token
// chat stream per iteration over loopback. Tokens coalesce into fewer chunks
// when the handler falls behind the engine, as in vLLM: frames/op says how
// many went out.
func BenchmarkStreamTokens(b *testing.B) {
	p := engine.TinyProfile()
	p.StepBase, p.PrefillPerToken, p.DecodePerSeq, p.ContextPerToken = engine.MinStepBase, 0, 0, 0
	c, err := StartCluster(context.Background(), Options{Models: []string{testModel}, Profile: p}, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	url := c.URLs()[0] + "/v1/chat/completions"
	body := chatReq("benchmark", 256, `"stream":true,"ignore_eos":true`)
	frames := 0
	start := time.Now()
	b.ResetTimer()
	for b.Loop() {
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		all, err := newSSEReader(resp.Body).all()
		resp.Body.Close()
		if err != nil {
			b.Fatal(err)
		}
		frames += len(all)
	}
	b.ReportMetric(float64(256*b.N)/time.Since(start).Seconds(), "tokens/s")
	b.ReportMetric(float64(frames)/float64(b.N), "frames/op")
}

// BenchmarkDecodeChat measures request decoding and validation.
func BenchmarkDecodeChat(b *testing.B) {
	body := []byte(chatReq("a typical user message of moderate length for a chat model", 128,
		`"stream":true,"stream_options":{"include_usage":true}`))
	lim := limits{maxModelLen: 131072, naturalCap: 256, maxMessages: 4096, maxPromptIDs: 131072, maxTextFields: 16384}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeRequest(endpointChat, body, lim); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseAudioForm measures the multipart parser on a 4 MiB upload
// with a few fields: its throughput and its allocations, which stay those of
// the fixed read buffer and the fields whatever the file size.
func BenchmarkParseAudioForm(b *testing.B) {
	body, ct := form(b, field("model", testModel), field("stream", "true"), field("prompt", "a short prompt"),
		audioFile("clip.wav", 4<<20))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseAudioForm(strings.NewReader(body), ct, DefaultMaxAudioBytes); err != nil {
			b.Fatal(err)
		}
	}
}
