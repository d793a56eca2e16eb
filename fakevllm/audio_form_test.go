package fakevllm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAudioForm(t *testing.T) {
	parse := func(t *testing.T, ps ...part) (audioForm, error) {
		body, ct := form(t, ps...)
		return parseAudioForm(strings.NewReader(body), ct, 1<<20)
	}
	t.Run("fields", func(t *testing.T) {
		f, err := parse(t, field("model", "m"), field("prompt", "p"), field("response_format", "text"), field("stream", " YES "),
			field("stream_include_usage", "t"), field("stream_continuous_usage_stats", "0"), field("max_completion_tokens", " 12 "),
			field("temperature", "0.5"), field("timestamp_granularities[]", "word"), field("timestamp_granularities[]", "segment"),
			audioFile("dir/clip.wav", 3))
		require.NoError(t, err)
		want := audioForm{model: "m", modelSet: true, fileName: "clip.wav", fileBytes: 3, hasFile: true, prompt: "p",
			responseFormat: "text", stream: true, includeUsage: true, maxTokens: f.maxTokens}
		assert.Equal(t, want, f)
		require.NotNil(t, f.maxTokens)
		assert.Equal(t, int64(12), *f.maxTokens)
	})
	t.Run("defaults", func(t *testing.T) {
		f, err := parse(t, audioFile("a", 0))
		require.NoError(t, err)
		assert.Equal(t, audioForm{fileName: "a", hasFile: true, responseFormat: "json"}, f)
	})
	t.Run("a field past its bound", func(t *testing.T) {
		_, err := parse(t, field("prompt", strings.Repeat("p", maxFormFieldBytes+1)), audioFile("a", 1))
		assert.Equal(t, badRequest("prompt", "field prompt is longer than 65536 bytes"), err)
		_, err = parse(t, field("prompt", strings.Repeat("p", maxFormFieldBytes)), audioFile("a", 1))
		assert.NoError(t, err)
	})
	t.Run("an ignored field may be long", func(t *testing.T) {
		_, err := parse(t, field("vllm_xargs", strings.Repeat("x", 3*maxFormFieldBytes)), audioFile("a", 1))
		assert.NoError(t, err)
	})
}

func TestAudioName(t *testing.T) {
	tests := map[string]string{
		"clip.wav":                    "clip.wav",
		"my clip\t.wav":               "my_clip_.wav",
		"bad\xffname":                 "bad_name",
		"ünïcödé.mp3":                 "ünïcödé.mp3",
		strings.Repeat("é", 40):       strings.Repeat("é", 32),
		strings.Repeat("a", 70):       strings.Repeat("a", 64),
		"a" + strings.Repeat("€", 30): "a" + strings.Repeat("€", 21),
	}
	for in, want := range tests {
		got := audioName(in)
		assert.Equal(t, want, got, "%q", in)
		assert.LessOrEqual(t, len(got), maxAudioNameBytes)
		assert.True(t, utf8.ValidString(got))
	}
}

// FuzzTranscriptionForm drives the real transcription handler with any body
// and content type: it never panics, every refusal is a fixed OpenAI-style
// error that leaves the engine untouched, and only a form the parser accepts
// reaches the engine. The request context is already cancelled, so an
// accepted request leaves the engine at once (as an abort).
func FuzzTranscriptionForm(f *testing.F) {
	seed := func(ct string, body string) { f.Add(ct, []byte(body), false); f.Add(ct, []byte(body), true) }
	for _, ps := range [][]part{
		{audioFile("clip.wav", 100)},
		{field("model", testModel), field("stream", "true"), field("stream_include_usage", "true"), audioFile("a b.wav", 3000)},
		{field("model", "lora-a"), field("response_format", "text"), field("max_completion_tokens", "2"), audioFile("x", 1)},
		{field("response_format", "verbose_json"), audioFile("x", 1)},
		{field("model", "nope"), audioFile("x", 1)},
		{audioFile("x", 0)},
		{audioFile("x", 5000)},
		{field("file", "not a file")},
		{field("model", "a"), field("model", "b"), audioFile("x", 1)},
		{field("stream_continuous_usage_stats", "1"), audioFile("x", 1)},
		{field("padding", strings.Repeat("p", 9000)), audioFile("x", 1)},
	} {
		body, ct := form(f, ps...)
		seed(ct, body)
	}
	seed("multipart/form-data; boundary=zz", "--zz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nabc\r\n--zz--\r\n")
	seed("multipart/form-data; boundary=zz", "--zz\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nabc")
	seed("multipart/form-data; boundary=zz", "--zz\r\nContent-Transfer-Encoding: quoted-printable\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\n=41=4\r\n--zz--\r\n")
	seed("multipart/form-data", "")
	seed("application/json", `{"file":"x"}`)
	seed("", "")

	o := tinyOptions()
	o.MaxAudioBytes = 4096
	o.MaxBodyBytes = 4096
	o.LoRA = []string{"lora-a"}
	srv, err := NewServer(o)
	require.NoError(f, err)
	f.Cleanup(srv.Close)
	h := srv.Handler()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	f.Fuzz(func(t *testing.T, ct string, body []byte, translation bool) {
		form, perr := parseAudioForm(bytes.NewReader(body), ct, o.MaxAudioBytes)
		if perr != nil {
			var ae *apiError
			if !errors.As(perr, &ae) || (ae.Status != 400 && ae.Status != 422) || ae.Message == "" {
				t.Fatalf("parse error %v is not a 400 or 422 apiError", perr)
			}
		} else {
			if !form.hasFile || form.fileBytes > o.MaxAudioBytes || form.fileName == "" || len(form.fileName) > maxAudioNameBytes ||
				!utf8.ValidString(form.fileName) || strings.ContainsAny(form.fileName, " \t\r\n") {
				t.Fatalf("accepted form out of bounds: %+v", form)
			}
			if !strings.Contains(" json text srt verbose_json vtt ", " "+form.responseFormat+" ") {
				t.Fatalf("response format %q", form.responseFormat)
			}
		}

		path := "/v1/audio/transcriptions"
		if translation {
			path = "/v1/audio/translations"
		}
		before := srv.Metrics().Submitted
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", ct)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		after := srv.Metrics().Submitted
		if rec.Code == http.StatusOK {
			if perr != nil || after != before+1 {
				t.Fatalf("200 for a form the parser refused (%v), or not one submission (%d -> %d)", perr, before, after)
			}
			return
		}
		if after != before {
			t.Fatalf("refused with %d but the engine saw it", rec.Code)
		}
		var eb errorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Error.Code != rec.Code || eb.Error.Message == "" {
			t.Fatalf("refusal %d has no error body: %q", rec.Code, rec.Body.String())
		}
		switch rec.Code {
		case 400, 404, 413, 422:
		default:
			t.Fatalf("unexpected status %d: %s", rec.Code, rec.Body.String())
		}
	})
}

// FuzzDecodeSpeech: any body yields a speech request within the limits or a
// 400, never a panic.
func FuzzDecodeSpeech(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"Hello","voice":"alloy","response_format":"wav","speed":1.5}`,
		`{"input":"é","response_format":"pcm","speed":0.25,"instructions":"slowly"}`,
		`{"input":"` + strings.Repeat("a", 1300) + `"}`,
		`{"input":""}`, `{"input":5}`, `{"input":"x","speed":1e308}`, `{"input":"x","stream_format":"sse"}`, `[]`, `{`, `null`,
	} {
		f.Add([]byte(s))
	}
	lim := testLimits()
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeSpeech(body, lim)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Message == "" {
				t.Fatalf("error %v is not a 400 apiError", err)
			}
			return
		}
		g := req.g
		if req.tokens < 1 || g.stopAfter != req.tokens+1 || g.stopAfter > g.maxTokens || g.promptTokens < 1 ||
			g.promptTokens+g.maxTokens != lim.maxModelLen || !g.stream {
			t.Fatalf("out of limits: %+v", req)
		}
	})
}
