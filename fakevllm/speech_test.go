package fakevllm

import (
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
)

// wavInfo is what a test reads back from a RIFF/WAVE PCM file.
type wavInfo struct {
	format, channels, blockAlign, bits uint16
	rate, byteRate                     uint32
	samples                            []int16
}

// parseWAV reads a canonical PCM WAV file strictly: every size must agree
// with the bytes present.
func parseWAV(t *testing.T, b []byte) wavInfo {
	t.Helper()
	le := binary.LittleEndian
	require.GreaterOrEqual(t, len(b), 44)
	require.Equal(t, "RIFF", string(b[0:4]))
	require.Equal(t, uint32(len(b)-8), le.Uint32(b[4:]), "RIFF size")
	require.Equal(t, "WAVE", string(b[8:12]))
	require.Equal(t, "fmt ", string(b[12:16]))
	require.Equal(t, uint32(16), le.Uint32(b[16:]))
	w := wavInfo{format: le.Uint16(b[20:]), channels: le.Uint16(b[22:]), rate: le.Uint32(b[24:]),
		byteRate: le.Uint32(b[28:]), blockAlign: le.Uint16(b[32:]), bits: le.Uint16(b[34:])}
	require.Equal(t, "data", string(b[36:40]))
	data := b[44:]
	require.Equal(t, uint32(len(data)), le.Uint32(b[40:]), "data size")
	require.Zero(t, len(data)%2)
	for i := 0; i < len(data); i += 2 {
		w.samples = append(w.samples, int16(le.Uint16(data[i:])))
	}
	return w
}

func TestSpeech(t *testing.T) {
	o := tinyOptions()
	o.ExtraModels = []string{"other/base"}
	m := startLoopback(t, o)
	const input = "Hello there, world!" // 19 characters
	tests := []struct {
		name, body, contentType string
		tokens                  int
		prompt                  int
	}{
		{"wav by default", `{"model":"` + testModel + `","input":"` + input + `","voice":"alloy"}`, "audio/wav", 16, 4 + 5},
		{"speed 2 halves it", `{"input":"` + input + `","speed":2,"response_format":"wav"}`, "audio/wav", 8, 4 + 5},
		{"speed 0.25", `{"input":"` + input + `","speed":0.25}`, "audio/wav", 64, 4 + 5},
		{"one character", `{"input":"é","instructions":"whisper it","stream_format":"audio"}`, "audio/wav", 1, 4 + 1 + 3},
		{"extra model", `{"model":"other/base","input":"` + input + `","unknown":{"fields":"ignored"}}`, "audio/wav", 16, 4 + 5},
		{"pcm", `{"input":"` + input + `","response_format":"pcm"}`, "audio/pcm", 16, 4 + 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := m.srv.Metrics()
			resp := post(t, context.Background(), http.DefaultClient, m.url+"/v1/audio/speech", tc.body)
			body := readAll(t, resp)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			assert.Equal(t, tc.contentType, resp.Header.Get("Content-Type"))
			assert.Equal(t, strconv.Itoa(len(body)), resp.Header.Get("Content-Length"))
			var samples []int16
			if tc.contentType == "audio/wav" {
				w := parseWAV(t, body)
				assert.Equal(t, wavInfo{format: 1, channels: 1, rate: 24000, byteRate: 48000, blockAlign: 2, bits: 16}, wavInfo{
					format: w.format, channels: w.channels, rate: w.rate, byteRate: w.byteRate, blockAlign: w.blockAlign, bits: w.bits})
				samples = w.samples
			} else {
				for i := 0; i+1 < len(body); i += 2 {
					samples = append(samples, int16(binary.LittleEndian.Uint16(body[i:])))
				}
			}
			require.Len(t, samples, tc.tokens*1920, "1920 samples (80 ms) per audio token")
			for _, n := range []int{0, 7, 1919, len(samples) - 1} {
				assert.Equal(t, speechSample(int64(n)), samples[n], "sample %d", n)
			}
			assert.NotZero(t, samples[7], "the voice is not silence")
			after := m.srv.Metrics()
			assert.Equal(t, before.Success.Stop+1, after.Success.Stop)
			assert.Equal(t, before.PromptTokens+uint64(tc.prompt), after.PromptTokens)
			assert.Equal(t, before.GenerationTokens+uint64(tc.tokens+1), after.GenerationTokens, "the audio tokens and EOS")
		})
	}
}

// TestSpeechIsRelayedAsProduced: the headers and the WAV header come at once,
// each token's audio at the end of its step, and the last token's audio with
// the finish.
func TestSpeechIsRelayedAsProduced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := startPipe(t, tinyOptions())
		defer p.stop()
		pr := engine.TinyProfile()
		const prompt, tokens = 4 + 2, 5 // "12345": 2 prompt tokens; 5 characters, ceil(25/6) audio tokens
		t0 := time.Now()
		resp := post(t, context.Background(), p.client, p.url+"/v1/audio/speech", `{"input":"12345"}`)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, strconv.Itoa(44+tokens*3840), resp.Header.Get("Content-Length"))
		defer resp.Body.Close()
		read := func(n int) time.Time {
			t.Helper()
			_, err := io.ReadFull(resp.Body, make([]byte, n))
			require.NoError(t, err)
			return time.Now()
		}
		assert.Equal(t, t0, read(44), "the WAV header is sent at once")
		at := t0.Add(prefillStep(pr, prompt))
		for k := range tokens - 1 {
			if k > 0 {
				at = at.Add(decodeStep(pr, prompt, k))
			}
			assert.Equal(t, at, read(3840), "token %d's audio at the end of its step", k)
		}
		at = at.Add(decodeStep(pr, prompt, tokens-1)).Add(decodeStep(pr, prompt, tokens))
		assert.Equal(t, at, read(3840), "the last audio comes with EOS")
		n, err := resp.Body.Read(make([]byte, 1))
		assert.Zero(t, n)
		assert.ErrorIs(t, err, io.EOF)
		assert.Equal(t, uint64(1), p.srv.Metrics().Success.Stop)
	})
}

func TestSpeechRefusals(t *testing.T) {
	o := tinyOptions()
	o.MaxBodyBytes = 32 << 10
	m := startLoopback(t, o)
	long := strings.Repeat("é", 4097)
	tests := []struct {
		name, body string
		status     int
		param, msg string
	}{
		{"empty body", ``, 400, "", "request body is empty; expected a JSON object"},
		{"not an object", `["x"]`, 400, "", "request body must be a JSON object"},
		{"malformed", `{"input":`, 400, "", "request body is not valid JSON"},
		{"input wrong type", `{"input":5}`, 400, "input", "field input: expected a string, got JSON number"},
		{"voice object", `{"input":"x","voice":{"id":"v1"}}`, 400, "voice", "field voice: expected a string, got JSON object"},
		{"speed wrong type", `{"input":"x","speed":"fast"}`, 400, "speed", "field speed: expected a number, got JSON string"},
		{"missing input", `{"model":"` + testModel + `"}`, 400, "input", "field required: input"},
		{"empty input", `{"input":""}`, 400, "input", "input must not be empty"},
		{"input too long", `{"input":"` + long + `"}`, 400, "input", "input is longer than 4096 characters"},
		{"mp3", `{"input":"x","response_format":"mp3"}`, 400, "response_format", "response_format mp3 is not supported by this server; use wav or pcm"},
		{"unknown format", `{"input":"x","response_format":"ogg"}`, 400, "response_format", `response_format must be one of mp3, opus, aac, flac, wav, pcm; got "ogg"`},
		{"speed too high", `{"input":"x","speed":4.5}`, 400, "speed", "speed must be between 0.25 and 4.0, got 4.5"},
		{"speed zero", `{"input":"x","speed":0}`, 400, "speed", "speed must be between 0.25 and 4.0, got 0"},
		{"sse", `{"input":"x","stream_format":"sse"}`, 400, "stream_format", "stream_format must be audio; sse is not supported by this server"},
		{"unknown model", `{"model":"nope","input":"x"}`, 404, "model", "The model `nope` does not exist."},
		{"speech longer than the context", `{"input":"` + strings.Repeat("a", 1300) + `"}`, 400, "input",
			"This model's maximum context length is 1024 tokens. However, this input takes 329 tokens and its speech 1085 more. Please shorten the input."},
		{"body too large", `{"input":"` + strings.Repeat("a", 40<<10) + `"}`, 413, "", "request body exceeds 32768 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, context.Background(), http.DefaultClient, m.url+"/v1/audio/speech", tc.body)
			got := readAll(t, resp)
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			assert.JSONEq(t, errorJSON(tc.status, tc.param, tc.msg), string(got))
		})
	}
	assert.Zero(t, m.srv.Metrics().Submitted, "no refused speech request reached the engine")
}
