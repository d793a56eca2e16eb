package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/decisionlog"
)

// TestAudioRoutesThroughTheRouter: transcription (ordinary and streamed), translation and speech on a
// direct tier, through the real router in front of a real fake member: each is one attempt on the
// audio member (the alias rewritten to the served model, or the member would answer 404), one record,
// and the tier's lease released.
func TestAudioRoutesThroughTheRouter(t *testing.T) {
	rig := startAudioRig(t, "", nil)
	clip := bytes.Repeat([]byte{1, 2}, 3200) // 6400 bytes: 0.2 s of 16 kHz 16-bit audio
	cases := []struct {
		name  string
		path  string
		body  func() (string, []byte)
		check func(t *testing.T, resp *http.Response, body []byte)
	}{
		{"transcription", "/v1/audio/transcriptions", func() (string, []byte) {
			return audioForm(t, [][2]string{{"model", "whisper"}, {"language", "en"}}, "clip.wav", clip)
		}, func(t *testing.T, resp *http.Response, body []byte) {
			var got struct {
				Text  string `json:"text"`
				Usage struct {
					Seconds int `json:"seconds"`
				} `json:"usage"`
			}
			require.NoError(t, json.Unmarshal(body, &got), string(body))
			assert.True(t, strings.HasPrefix(got.Text, "transcribed 6400 bytes of clip.wav"), got.Text)
			assert.Equal(t, 1, got.Usage.Seconds)
		}},
		{"transcription streamed", "/v1/audio/transcriptions", func() (string, []byte) {
			return audioForm(t, [][2]string{{"model", "whisper"}, {"stream", "true"}, {"stream_include_usage", "true"}}, "clip.wav", clip)
		}, func(t *testing.T, resp *http.Response, body []byte) {
			assert.Equal(t, "text/event-stream", strings.Split(resp.Header.Get("Content-Type"), ";")[0])
			events := readEvents(t, bytes.NewReader(body))
			require.GreaterOrEqual(t, len(events), 3)
			assert.Contains(t, events[0], `"object":"transcription.chunk"`)
			assert.Contains(t, events[0], "transcribed")
			assert.Equal(t, "[DONE]", events[len(events)-1])
		}},
		{"translation", "/v1/audio/translations", func() (string, []byte) {
			return audioForm(t, [][2]string{{"model", "whisper"}}, "clip.wav", clip)
		}, func(t *testing.T, resp *http.Response, body []byte) {
			var got map[string]any
			require.NoError(t, json.Unmarshal(body, &got), string(body))
			assert.True(t, strings.HasPrefix(got["text"].(string), "translated 6400 bytes of clip.wav"), got["text"])
		}},
		{"speech", "/v1/audio/speech", func() (string, []byte) {
			return "application/json", []byte(`{"model":"whisper","input":"hello there","voice":"alloy"}`)
		}, func(t *testing.T, resp *http.Response, body []byte) {
			assert.Equal(t, "audio/wav", resp.Header.Get("Content-Type"))
			assert.Equal(t, strconv.Itoa(len(body)), resp.Header.Get("Content-Length"))
			require.Greater(t, len(body), 44)
			assert.Equal(t, "RIFF", string(body[:4]))
			assert.Equal(t, "WAVE", string(body[8:12]))
			assert.Equal(t, uint32(len(body)-44), binary.LittleEndian.Uint32(body[40:44]), "the data chunk is whole")
		}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ct, body := c.body()
			resp, got, err := rig.r.postRaw(t, context.Background(), c.path, ct, bytes.NewReader(body), true)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(got))
			c.check(t, resp, got)
			rec := rig.r.lastRecord(t)
			assert.Equal(t, decisionlog.OutcomeSuccess, rec.Outcome)
			assert.Equal(t, 1, rec.Attempts)
			assert.Equal(t, 200, rec.Status)
			assert.Equal(t, "whisper", rec.Alias)
			assert.Equal(t, "audio", rec.Tier)
			assert.Equal(t, decisionlog.RouteDirect, rec.Route)
			assert.Equal(t, int64(i+1), rig.audio.calls.Load(), "exactly one attempt per request, on the audio member")
			assert.Equal(t, int64(i+1), rig.upstreamCalls())
			assertSettled(t, rig.r.snapshot(t, "audio"))
		})
	}
}

// TestAudioRefusals: every refusal answers a fixed body, reserves nothing and is recorded once. Those
// decided on the form's head (and the gates) reach no member at all; those decided while the upload
// streams reach the audio member, which never gets a complete request (its engine never sees one),
// and are recorded as body_refused with their one attempt.
func TestAudioRefusals(t *testing.T) {
	rig := startAudioRig(t, "limits: {max_audio_bytes: 65536, max_body_bytes: 4096}\n", nil)
	clip := bytes.Repeat([]byte{7}, 4000)
	form := func(fields ...[2]string) (string, []byte) { return audioForm(t, fields, "clip.wav", clip) }
	raw := func(ct string, body string) (string, []byte) { return ct, []byte(body) }
	const b = "B0undary"
	part := func(name, value string) string {
		return "--" + b + "\r\nContent-Disposition: form-data; name=\"" + name + "\"\r\n\r\n" + value + "\r\n"
	}
	filePart := "--" + b + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n\r\n" + string(clip) + "\r\n"
	end := "--" + b + "--\r\n"
	mct := "multipart/form-data; boundary=" + b
	badForm := func(msg string) string { return errorJSONBody(msg, "invalid_request_error", "invalid_multipart") }
	tooLarge := errorJSONBody("audio upload is larger than the router accepts", "invalid_request_error", "request_too_large")

	cases := []struct {
		name    string
		path    string
		body    func() (string, []byte)
		chunked bool // send without a length
		auth    bool
		status  int
		want    string
		streams bool // refused while the upload streamed: the audio member was contacted
	}{
		{name: "no token", path: "/v1/audio/transcriptions", body: func() (string, []byte) { return form([2]string{"model", "whisper"}) },
			status: 401, want: errorJSONBody("missing or invalid bearer token", "authentication_error", "invalid_api_key")},
		{name: "not a form", path: "/v1/audio/transcriptions", body: func() (string, []byte) { return raw("application/json", `{"model":"whisper"}`) },
			auth: true, status: 400, want: badForm("request body must be multipart/form-data with a boundary")},
		{name: "no model", path: "/v1/audio/transcriptions", body: func() (string, []byte) { return raw(mct, part("language", "en")+end) },
			auth: true, status: 400, want: badForm("the form has no 'model' field")},
		{name: "two models", path: "/v1/audio/transcriptions", body: func() (string, []byte) {
			return form([2]string{"model", "whisper"}, [2]string{"model", "chat"})
		}, auth: true, status: 400, want: badForm("the form has more than one 'model' field")},
		{name: "file and no model", path: "/v1/audio/translations", body: func() (string, []byte) {
			return raw(mct, filePart+part("language", "en")+end)
		}, auth: true, status: 400, want: badForm("the form has no 'model' field")},
		{name: "file, then two models", path: "/v1/audio/translations", body: func() (string, []byte) {
			return raw(mct, filePart+part("model", "whisper")+part("model", "whisper")+end)
		}, auth: true, status: 400, want: badForm("the form has more than one 'model' field")},
		{name: "file, model, a second file", path: "/v1/audio/translations", body: func() (string, []byte) {
			return raw(mct, filePart+part("model", "whisper")+filePart+end)
		}, auth: true, status: 400, want: badForm("the form has more than one 'file' part")},
		{name: "malformed head", path: "/v1/audio/transcriptions", body: func() (string, []byte) { return raw(mct, "--"+b+"\r\nno header end") },
			auth: true, status: 400, want: badForm("request body is not a well-formed multipart/form-data form")},
		{name: "unknown alias", path: "/v1/audio/transcriptions", body: func() (string, []byte) { return form([2]string{"model", "nope"}) },
			auth: true, status: 404, want: errorJSONBody("the requested model does not exist", "invalid_request_error", "model_not_found")},
		{name: "replica tier", path: "/v1/audio/transcriptions", body: func() (string, []byte) { return form([2]string{"model", "chat"}) },
			auth: true, status: 400, want: errorJSONBody("this model does not serve this endpoint", "invalid_request_error", "endpoint_not_supported")},
		{name: "replica tier, speech", path: "/v1/audio/speech", body: func() (string, []byte) {
			return raw("application/json", `{"model":"chat","input":"hi"}`)
		}, auth: true, status: 400, want: errorJSONBody("this model does not serve this endpoint", "invalid_request_error", "endpoint_not_supported")},
		{name: "tier without media", path: "/v1/audio/translations", body: func() (string, []byte) { return form([2]string{"model", "text"}) },
			auth: true, status: 400, want: errorJSONBody("this model does not accept image, audio, video or file content", "invalid_request_error", "media_not_allowed")},
		{name: "speech without input", path: "/v1/audio/speech", body: func() (string, []byte) {
			return raw("application/json", `{"model":"whisper","voice":"alloy"}`)
		}, auth: true, status: 400, want: errorJSONBody("request has no prompt: 'messages', 'prompt' or 'input' is required", "invalid_request_error", "invalid_request")},
		{name: "speech over the body bound", path: "/v1/audio/speech", body: func() (string, []byte) {
			return raw("application/json", `{"model":"whisper","input":"`+strings.Repeat("a", 5000)+`"}`)
		}, auth: true, status: 413, want: errorJSONBody("request body is too large", "invalid_request_error", "request_too_large")},
		{name: "announced length over the bound", path: "/v1/audio/transcriptions", body: func() (string, []byte) {
			return audioForm(t, [][2]string{{"model", "whisper"}}, "big.wav", make([]byte, 70000))
		}, auth: true, status: 413, want: tooLarge},

		{name: "upload grows past the bound", path: "/v1/audio/transcriptions", body: func() (string, []byte) {
			return audioForm(t, [][2]string{{"model", "whisper"}}, "big.wav", make([]byte, 70000))
		}, chunked: true, auth: true, status: 413, want: tooLarge, streams: true},
		{name: "model again after the file", path: "/v1/audio/transcriptions", body: func() (string, []byte) {
			return raw(mct, part("model", "whisper")+filePart+part("model", "chat")+end)
		}, auth: true, status: 400, want: badForm("the form has more than one 'model' field"), streams: true},
		{name: "a second file", path: "/v1/audio/transcriptions", body: func() (string, []byte) {
			return raw(mct, part("model", "whisper")+filePart+filePart+end)
		}, auth: true, status: 400, want: badForm("the form has more than one 'file' part"), streams: true},
		{name: "form never closed", path: "/v1/audio/translations", body: func() (string, []byte) {
			return raw(mct, part("model", "whisper")+filePart)
		}, auth: true, status: 400, want: badForm("request body is not a well-formed multipart/form-data form"), streams: true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := "refusal-" + strconv.Itoa(i)
			before := rig.r.srv.Decisions().Recent(1 << 20)
			ct, body := c.body()
			var rd io.Reader = bytes.NewReader(body)
			if c.chunked {
				rd = io.MultiReader(rd) // no length: sent chunked
			}
			resp, got, err := rig.r.postID(t, context.Background(), c.path, ct, rd, c.auth, id)
			require.NoError(t, err)
			assert.Equal(t, c.status, resp.StatusCode)
			assert.JSONEq(t, c.want, string(got))
			rig.r.wait(t, 1)
			id = resp.Header.Get("X-Request-ID") // the router's: what a member would have received
			require.NotEmpty(t, id)
			after := rig.r.srv.Decisions().Recent(1 << 20)
			if !c.auth {
				assert.Len(t, after, len(before), "an unauthenticated caller is not routed, so not recorded")
			} else {
				require.Len(t, after, len(before)+1)
				rec := after[len(after)-1]
				assert.Equal(t, c.status, rec.Status)
				if c.streams {
					assert.Equal(t, decisionlog.OutcomeBodyRefused, rec.Outcome)
					assert.Equal(t, 1, rec.Attempts)
					assert.Equal(t, "audio", rec.Tier)
				} else {
					assert.Equal(t, decisionlog.OutcomeRefused, rec.Outcome)
					assert.Zero(t, rec.Attempts)
				}
			}
			if !c.streams {
				assert.False(t, rig.reached(id), "refused before any member was contacted")
			} // else the attempt had begun: the audio member may have seen the request's start, never its end
			for _, m := range append([]*member{rig.text}, rig.replicas...) {
				ok := m.received(id)
				assert.False(t, ok, "no other member is ever contacted")
			}
			assert.Zero(t, rig.audio.fake.Metrics().Submitted, "the audio member never had a complete request")
			for _, tier := range []string{"audio", "replicas", "text"} {
				assertSettled(t, rig.r.snapshot(t, tier))
			}
			assert.Zero(t, rig.r.snapshot(t, "replicas").Acquired, "nothing is ever reserved on a replica tier")
		})
	}
}

// TestSpeechCutIsVisible: a speech answer cut by the member mid-way reaches the caller broken (the
// router aborts the connection rather than ending a short audio body cleanly), recorded as truncated.
func TestSpeechCutIsVisible(t *testing.T) {
	rig := startAudioRig(t, "", func(o *fakevllm.Options) { o.Faults.Truncate = fakevllm.StreamFault{Chunk: 2} })
	resp, body, err := rig.r.postRaw(t, context.Background(), "/v1/audio/speech", "application/json",
		strings.NewReader(`{"model":"whisper","input":"a sentence long enough to take several audio tokens"}`), true)
	if err == nil {
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		t.Fatalf("the caller read a clean end of a cut body (%d bytes)", len(body))
	}
	rec := rig.r.lastRecord(t)
	assert.Equal(t, decisionlog.OutcomeStreamTruncated, rec.Outcome)
	assert.Equal(t, 200, rec.Status)
	assert.Equal(t, 1, rec.Attempts)
	assertSettled(t, rig.r.snapshot(t, "audio"))
}

// TestUploadCallerLeaves: a caller that goes away mid-upload ends the attempt as a cancellation; the
// lease is released once and the member never has a complete request.
func TestUploadCallerLeaves(t *testing.T) {
	rig := startAudioRig(t, "", nil)
	ct, body := audioForm(t, [][2]string{{"model", "whisper"}}, "clip.wav", make([]byte, 1<<20))
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, _ = pw.Write(body[:64<<10]) // the head and part of the file, then nothing more
	}()
	errc := make(chan error, 1)
	go func() {
		_, _, err := rig.r.postRaw(t, ctx, "/v1/audio/transcriptions", ct, pr, true)
		errc <- err
	}()
	<-rig.audio.entered // the attempt is under way
	cancel()
	_ = pw.CloseWithError(context.Canceled)
	assert.Error(t, <-errc)
	rec := rig.r.lastRecord(t)
	assert.Equal(t, decisionlog.OutcomeClientCanceled, rec.Outcome)
	assert.Equal(t, decisionlog.StatusClientClosed, rec.Status)
	assert.Equal(t, 1, rec.Attempts)
	assertSettled(t, rig.r.snapshot(t, "audio"))
	assert.Zero(t, rig.audio.fake.Metrics().Submitted)
}

// TestUpstreamRefusesMidUpload: a member that refuses an upload before it has all of it (its own
// file bound is lower than the router's) is answered through as it is, while the rest of the upload
// is still arriving: the caller gets the member's 400, recorded as the member's answer, one attempt.
func TestUpstreamRefusesMidUpload(t *testing.T) {
	rig := startAudioRig(t, "", func(o *fakevllm.Options) { o.MaxAudioBytes = 32 << 10 })
	ct, body := audioForm(t, [][2]string{{"model", "whisper"}}, "long.wav", make([]byte, 4<<20))
	resp, got, err := rig.r.postRaw(t, context.Background(), "/v1/audio/transcriptions", ct, io.MultiReader(bytes.NewReader(body)), true)
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(got), "audio_filesize_mb", "the member's own refusal")
	rec := rig.r.lastRecord(t)
	assert.Equal(t, decisionlog.OutcomeUpstreamHTTPError, rec.Outcome)
	assert.Equal(t, 400, rec.Status)
	assert.Equal(t, 1, rec.Attempts)
	assert.Equal(t, int64(1), rig.audio.calls.Load())
	assertSettled(t, rig.r.snapshot(t, "audio"))
}

// TestUploadsKeepTheConnection: uploads on one kept-alive connection, each with an epilogue after its
// closing boundary, are each answered by the member, and the connection stays reused: an upload the
// router read to its end leaves nothing on the connection that could spoil the next request (a cut
// read after the body's end once canceled the context of every later request on it).
func TestUploadsKeepTheConnection(t *testing.T) {
	rig := startAudioRig(t, "", nil)
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	t.Cleanup(client.CloseIdleConnections)
	ct, body := audioForm(t, [][2]string{{"model", "whisper"}}, "clip.wav", make([]byte, 8<<10))
	body = append(body, "epilogue\r\n"...)
	var reused int
	for i := range 30 {
		req, err := http.NewRequest(http.MethodPost, rig.r.http.URL+"/v1/audio/transcriptions", io.MultiReader(bytes.NewReader(body)))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+callerToken)
		req.Header.Set("Content-Type", ct)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(info httptrace.GotConnInfo) {
				if info.Reused {
					reused++
				}
			},
		}))
		resp, err := client.Do(req)
		require.NoError(t, err)
		got, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode, "upload %d: %s", i, got)
		require.Contains(t, string(got), `"text"`, "upload %d is the member's answer", i)
		assert.False(t, resp.Close, "upload %d keeps its connection", i)
		rig.r.wait(t, 1)
	}
	assert.Equal(t, 29, reused, "every upload after the first reuses the connection")
	assert.Equal(t, int64(30), rig.audio.calls.Load())
}

// TestEarlyAnswerClosesTheConnection: an answer that starts while the caller is still uploading
// closes the connection after it, since the router then cuts its read of the rest of the body.
func TestEarlyAnswerClosesTheConnection(t *testing.T) {
	early := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.CopyN(io.Discard, r.Body, 1<<10) // a first look, then a refusal
		w.Header().Set("Connection", "close")      // answer now: net/http reads no more of the body first
		w.Header().Set("Content-Type", "application/json")
		const refusal = `{"error":{"message":"no","type":"invalid_request_error"}}`
		w.Header().Set("Content-Length", strconv.Itoa(len(refusal))) // complete before the handler ends
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, refusal)
		_ = http.NewResponseController(w).Flush()
		_, _ = io.Copy(io.Discard, r.Body) // until the router stops sending: no reset under the answer
	}))
	t.Cleanup(early.Close)
	r := startRouter(t, "listen: 127.0.0.1:0\nshutdown_grace: 5s\naliases:\n  - {id: whisper, tier: audio}\ntiers:\n"+
		"  - id: audio\n    kind: direct\n    served_model: served/whisper\n    endpoint: "+early.URL+
		"\n    gates: {max_context_tokens: 4096, media_allowed: true}\n")
	ct, body := audioForm(t, [][2]string{{"model", "whisper"}}, "long.wav", make([]byte, 4<<20))
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(body[:64<<10]) // the rest waits for the answer
	}()
	resp, got, err := r.postRaw(t, context.Background(), "/v1/audio/transcriptions", ct, pr, true)
	_ = pw.CloseWithError(io.ErrUnexpectedEOF)
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, string(got))
	assert.True(t, resp.Close, "the connection of a cut upload is not reused")
	r.wait(t, 1)
	assertSettled(t, r.snapshot(t, "audio"))
}
