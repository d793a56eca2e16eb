package fakevllm

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
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

const testBoundary = "fakevllm-test-boundary"

// part is one part of a multipart/form-data body: a file part when file is
// true (with fileName, which may be empty), a text field otherwise.
type part struct {
	name, value string
	file        bool
	fileName    string
}

func field(name, value string) part { return part{name: name, value: value} }

// audioFile is a file part of n bytes (a repeated byte: the fake never looks
// at the content).
func audioFile(name string, n int) part {
	return part{name: "file", value: strings.Repeat("Z", n), file: true, fileName: name}
}

// form builds a multipart/form-data body and its content type.
func form(t testing.TB, parts ...part) (string, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	require.NoError(t, w.SetBoundary(testBoundary))
	for _, p := range parts {
		var err error
		var pw io.Writer
		if p.file {
			pw, err = w.CreateFormFile(p.name, p.fileName)
		} else {
			pw, err = w.CreateFormField(p.name)
		}
		require.NoError(t, err)
		_, err = io.WriteString(pw, p.value)
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	return buf.String(), w.FormDataContentType()
}

// postBody sends body with the given content type.
func postBody(t *testing.T, ctx context.Context, client *http.Client, url string, body io.Reader, contentType string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentType)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	return resp
}

// postForm sends a multipart form built from parts.
func postForm(t *testing.T, client *http.Client, url string, parts ...part) *http.Response {
	t.Helper()
	body, ct := form(t, parts...)
	return postBody(t, context.Background(), client, url, strings.NewReader(body), ct)
}

func TestTranscriptionOrdinary(t *testing.T) {
	o := tinyOptions()
	o.LoRA = []string{"adapter-a"}
	m := startLoopback(t, o)
	// 25600 bytes: 10 audio tokens, 1 second, 5 + 2 words.
	const size = 25600
	tests := []struct {
		name, path string
		extra      []part
		body       string
		prompt     int
		generated  int
		reason     engine.FinishReason
	}{
		{name: "json", path: "/v1/audio/transcriptions", extra: []part{field("model", testModel)},
			body:   `{"text":"transcribed 25600 bytes of clip.wav the engine","usage":{"type":"duration","seconds":1}}`,
			prompt: 4 + 10, generated: 8, reason: engine.FinishStop},
		{name: "text is answered as json, as vLLM does", path: "/v1/audio/transcriptions", extra: []part{field("response_format", "text")},
			body:   `{"text":"transcribed 25600 bytes of clip.wav the engine","usage":{"type":"duration","seconds":1}}`,
			prompt: 4 + 10, generated: 8, reason: engine.FinishStop},
		{name: "prompt field adds prompt tokens", path: "/v1/audio/transcriptions", extra: []part{field("prompt", "twelve bytes")},
			body:   `{"text":"transcribed 25600 bytes of clip.wav the engine","usage":{"type":"duration","seconds":1}}`,
			prompt: 4 + 3 + 10, generated: 8, reason: engine.FinishStop},
		{name: "max_completion_tokens cuts the transcript", path: "/v1/audio/transcriptions", extra: []part{field("max_completion_tokens", "3")},
			body:   `{"text":"transcribed 25600 bytes","usage":{"type":"duration","seconds":1}}`,
			prompt: 4 + 10, generated: 3, reason: engine.FinishLength},
		{name: "adapter", path: "/v1/audio/transcriptions", extra: []part{field("model", "adapter-a"), field("language", "en"), field("temperature", "0.2"), field("ignored", "x")},
			body:   `{"text":"transcribed 25600 bytes of clip.wav the engine","usage":{"type":"duration","seconds":1}}`,
			prompt: 4 + 10, generated: 8, reason: engine.FinishStop},
		{name: "translation has no usage", path: "/v1/audio/translations", extra: []part{field("model", testModel)},
			body:   `{"text":"translated 25600 bytes of clip.wav the engine"}`,
			prompt: 4 + 10, generated: 8, reason: engine.FinishStop},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := m.srv.Metrics()
			resp := postForm(t, http.DefaultClient, m.url+tc.path, append(tc.extra, audioFile("clip.wav", size))...)
			body := readAll(t, resp)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			assert.JSONEq(t, tc.body, string(body))
			after := m.srv.Metrics()
			assert.Equal(t, before.Submitted+1, after.Submitted)
			assert.Equal(t, before.Success.Get(tc.reason)+1, after.Success.Get(tc.reason))
			assert.Equal(t, before.PromptTokens+uint64(tc.prompt), after.PromptTokens)
			assert.Equal(t, before.GenerationTokens+uint64(tc.generated), after.GenerationTokens)
		})
	}
}

func TestTranscriptWordsAndDuration(t *testing.T) {
	tests := []struct {
		bytes          int64
		words, seconds int64
	}{
		{1, 6, 1}, {12800, 6, 1}, {12801, 7, 1}, {32000, 8, 1}, {32001, 8, 2}, {25 << 20, 5 + 2048, 820},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.words, transcriptWords(tc.bytes), "words of %d bytes", tc.bytes)
		assert.Equal(t, tc.seconds, audioSeconds(tc.bytes), "seconds of %d bytes", tc.bytes)
	}
}

// TestTranscriptionStreamFraming: vLLM's transcription.chunk framing, one
// chunk per word as the engine produces it (no role chunk), the EOS finish
// chunk, the usage chunk and [DONE]; the first chunk arrives with the first
// token.
func TestTranscriptionStreamFraming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := startPipe(t, tinyOptions())
		defer p.stop()
		body, ct := form(t, field("stream", "true"), field("stream_include_usage", "true"),
			field("stream_continuous_usage_stats", "true"), audioFile("a b.wav", 30000))
		t0 := time.Now()
		resp := postBody(t, context.Background(), p.client, p.url+"/v1/audio/transcriptions", strings.NewReader(body), ct)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
		frames, errc := streamFrames(resp)
		synctest.Wait()
		assert.Empty(t, frames, "no chunk before the first token exists")
		got := drain(frames)
		require.NoError(t, <-errc)

		const prompt = 4 + 12 // ceil(30000/2560)
		words := []string{"transcribed", " 30000", " bytes", " of", " a_b.wav", " the", " engine", " schedules"}
		require.Len(t, got, len(words)+3, "one chunk per word, the finish chunk, usage, [DONE]")
		pr := engine.TinyProfile()
		at := t0.Add(prefillStep(pr, prompt))
		for k := range len(words) + 1 { // the words, then EOS with the finish
			if k > 0 {
				at = at.Add(decodeStep(pr, prompt, k))
			}
			assert.Equal(t, at, got[k].at, "chunk %d arrives at the end of its token's step", k)
		}
		id := decodeJSON(t, got[0].data)["id"].(string)
		assert.True(t, strings.HasPrefix(id, "transcribe-"), id)
		created := decodeJSON(t, got[0].data)["created"].(json.Number).String()
		head := `"id":"` + id + `","object":"transcription.chunk","created":` + created + `,"model":null`
		for i, w := range words {
			u := `{"prompt_tokens":16,"total_tokens":` + strconv.Itoa(prompt+i+1) + `,"completion_tokens":` + strconv.Itoa(i+1) + `}`
			assert.JSONEq(t, `{`+head+`,"choices":[{"delta":{"content":"`+w+`"}}],"usage":`+u+`}`, got[i].data, "chunk %d", i)
		}
		assert.JSONEq(t, `{`+head+`,"choices":[{"delta":{"content":""},"finish_reason":"stop","stop_reason":null}],"usage":{"prompt_tokens":16,"total_tokens":25,"completion_tokens":9}}`, got[8].data)
		// The usage chunk leaves out the model that was not sent.
		assert.JSONEq(t, `{"id":"`+id+`","object":"transcription.chunk","created":`+created+`,"choices":[],"usage":{"prompt_tokens":16,"total_tokens":25,"completion_tokens":9}}`, got[9].data)
		assert.Equal(t, "[DONE]", got[10].data)
	})
}

func TestTranslationStreamFraming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := tinyOptions()
		o.LoRA = []string{"lora-x"}
		p := startPipe(t, o)
		defer p.stop()
		body, ct := form(t, field("model", "lora-x"), field("stream", "1"), audioFile("c.mp3", 100))
		resp := postBody(t, context.Background(), p.client, p.url+"/v1/audio/translations", strings.NewReader(body), ct)
		frames, errc := streamFrames(resp)
		got := drain(frames)
		require.NoError(t, <-errc)
		require.Len(t, got, 6+2, "six words, the finish chunk, [DONE]; no usage chunk")
		var text string
		for i, f := range got[:7] {
			m := decodeJSON(t, f.data)
			assert.Equal(t, "translation.chunk", m["object"])
			assert.True(t, strings.HasPrefix(m["id"].(string), "translate-"))
			assert.Equal(t, "lora-x", m["model"], "chunks echo the model as sent")
			assert.NotContains(t, m, "usage")
			ch := m["choices"].([]any)[0].(map[string]any)
			text += ch["delta"].(map[string]any)["content"].(string)
			if i < 6 {
				assert.NotContains(t, ch, "finish_reason")
			} else {
				assert.Equal(t, "stop", ch["finish_reason"])
			}
		}
		assert.Equal(t, "translated 100 bytes of c.mp3 the", text)
		assert.Equal(t, "[DONE]", got[7].data)
	})
}

// TestAudioRefusals: every wrong upload gets its fixed status and body, and
// the engine never sees it.
func TestAudioRefusals(t *testing.T) {
	o := tinyOptions()
	o.MaxAudioBytes = 3 << 20
	o.MaxBodyBytes = 4096
	m := startLoopback(t, o)
	ok := audioFile("x.wav", 100)
	tests := []struct {
		name   string
		body   func(t *testing.T) (string, string)
		status int
		param  string
		msg    string
	}{
		{"json body", raw(`{"model":"m","file":"x"}`, "application/json"), 400, "",
			"request body must be multipart/form-data with a boundary and a file part"},
		{"no boundary", raw("--x--", "multipart/form-data"), 400, "",
			"request body must be multipart/form-data with a boundary and a file part"},
		{"no boundary in the body: a form without parts", raw("not a form at all", "multipart/form-data; boundary=zz"), 400, "file", "field required: file"},
		{"garbage after a boundary", raw("--zz\r\nnot a header line\r\n\r\n", "multipart/form-data; boundary=zz"), 400, "", "malformed multipart/form-data body"},
		{"cut mid-part", raw("--zz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nabc", "multipart/form-data; boundary=zz"), 400, "",
			"malformed multipart/form-data body"},
		{"no parts", raw("--zz--\r\n", "multipart/form-data; boundary=zz"), 400, "file", "field required: file"},
		{"missing file", parts(field("model", testModel)), 400, "file", "field required: file"},
		{"file without filename", parts(field("file", "abc")), 422, "", "Expected 'file' to be a file-like object, not 'str'."},
		{"file twice", parts(ok, ok), 400, "file", "field file appears more than once"},
		{"model twice", parts(field("model", testModel), field("model", "other"), ok), 400, "model", "field model appears more than once"},
		{"model as a file", parts(part{name: "model", value: testModel, file: true, fileName: "m"}, ok), 400, "model", "field model must be a text field, not a file"},
		{"unnamed part", raw("--zz\r\nContent-Disposition: form-data\r\n\r\nabc\r\n--zz--\r\n", "multipart/form-data; boundary=zz"), 400, "",
			"every part must be a form-data field with a name"},
		{"too many parts", func(t *testing.T) (string, string) {
			ps := []part{ok}
			for i := range maxFormParts {
				ps = append(ps, field("extra"+strconv.Itoa(i), "x"))
			}
			return form(t, ps...)
		}, 400, "", "form has more than 64 parts"},
		{"unknown model", parts(field("model", "other"), ok), 404, "model", "The model `other` does not exist."},
		{"bad response_format", parts(field("response_format", "xml"), ok), 400, "response_format",
			`response_format must be one of json, text, srt, verbose_json, vtt; got "xml"`},
		{"srt", parts(field("response_format", "srt"), ok), 400, "", "Currently only support response_format: `text`, `json` or `verbose_json`"},
		{"verbose_json", parts(field("model", testModel), field("response_format", "verbose_json"), ok), 400, "",
			"Currently do not support verbose_json for " + testModel},
		{"verbose_json without model", parts(field("response_format", "verbose_json"), ok), 400, "", "Currently do not support verbose_json for None"},
		{"empty file", parts(audioFile("x.wav", 0)), 400, "", "Invalid or unsupported audio file."},
		{"file past the limit", parts(audioFile("x.wav", 3<<20+1)), 400, "audio_filesize_mb",
			"Maximum file size exceeded (parameter=audio_filesize_mb): the limit is 3145728 bytes"},
		{"body past the limit", parts(field("padding", strings.Repeat("p", 3<<20+4096)), ok), 413, "",
			"request body exceeds " + strconv.Itoa(3<<20+4096) + " bytes"},
		{"audio longer than the context", parts(audioFile("x.wav", 1024*2560)), 400, "file",
			"This model's maximum context length is 1024 tokens. However, this audio and prompt take 1028 tokens. Please send a shorter file."},
		{"usage without stream", parts(field("stream_include_usage", "true"), ok), 400, "stream_include_usage",
			"Stream options can only be defined when `stream=True`."},
		{"continuous usage without stream", parts(field("stream", "false"), field("stream_continuous_usage_stats", "on"), ok), 400,
			"stream_continuous_usage_stats", "Stream options can only be defined when `stream=True`."},
		{"bad boolean", parts(field("stream", "maybe"), ok), 400, "stream", `field stream: expected a boolean, got "maybe"`},
		{"bad integer", parts(field("max_completion_tokens", "5.5"), ok), 400, "max_completion_tokens",
			`field max_completion_tokens: expected an integer, got "5.5"`},
		{"zero max_completion_tokens", parts(field("max_completion_tokens", "0"), ok), 400, "max_completion_tokens",
			"max_completion_tokens must be at least 1, got 0."},
		{"bad number", parts(field("temperature", "hot"), ok), 400, "temperature", `field temperature: expected a number, got "hot"`},
		{"invalid UTF-8", parts(field("prompt", "\xff\xfe"), ok), 400, "prompt", "field prompt is not valid UTF-8"},
	}
	for _, path := range []string{"/v1/audio/transcriptions", "/v1/audio/translations"} {
		for _, tc := range tests {
			t.Run(path+"/"+tc.name, func(t *testing.T) {
				body, ct := tc.body(t)
				resp := postBody(t, context.Background(), http.DefaultClient, m.url+path, strings.NewReader(body), ct)
				got := readAll(t, resp)
				assert.Equal(t, tc.status, resp.StatusCode)
				assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
				assert.JSONEq(t, errorJSON(tc.status, tc.param, tc.msg), string(got))
			})
		}
	}
	mt := m.srv.Metrics()
	assert.Zero(t, mt.Submitted, "no refused upload reached the engine")
	assert.Zero(t, mt.Steps)

	t.Run("a file of exactly the limit is accepted", func(t *testing.T) {
		o := tinyOptions()
		o.MaxAudioBytes = 4096
		m := startLoopback(t, o)
		resp := postForm(t, http.DefaultClient, m.url+"/v1/audio/transcriptions", audioFile("x.wav", 4096))
		assert.JSONEq(t, `{"text":"transcribed 4096 bytes of x.wav the","usage":{"type":"duration","seconds":1}}`, string(readAll(t, resp)))
		resp = postForm(t, http.DefaultClient, m.url+"/v1/audio/transcriptions", audioFile("x.wav", 4097))
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		readAll(t, resp)
	})
}

func raw(body, ct string) func(*testing.T) (string, string) {
	return func(*testing.T) (string, string) { return body, ct }
}

func parts(ps ...part) func(*testing.T) (string, string) {
	return func(t *testing.T) (string, string) { return form(t, ps...) }
}
