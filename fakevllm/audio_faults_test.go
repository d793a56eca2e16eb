package fakevllm

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
)

// audioRoute is one audio route with a valid request for it.
type audioRoute struct {
	path string
	body func(t testing.TB, stream bool) (string, string) // body, content type
}

func audioRoutes() []audioRoute {
	upload := func(t testing.TB, stream bool) (string, string) {
		return form(t, field("stream", map[bool]string{true: "true", false: "false"}[stream]), audioFile("long.wav", 200_000))
	}
	return []audioRoute{
		{"/v1/audio/transcriptions", upload},
		{"/v1/audio/translations", upload},
		{"/v1/audio/speech", func(testing.TB, bool) (string, string) {
			return `{"input":"` + strings.Repeat("speak ", 20) + `"}`, "application/json"
		}},
	}
}

func TestAudioHTTPErrorFaults(t *testing.T) {
	t.Run("rate", func(t *testing.T) {
		o := tinyOptions()
		o.Faults = Faults{HTTPErrors: []HTTPErrorFault{{Status: 503, Rate: 1}}}
		m := startLoopback(t, o)
		for _, r := range audioRoutes() {
			body, ct := r.body(t, false)
			resp := postBody(t, context.Background(), http.DefaultClient, m.url+r.path, strings.NewReader(body), ct)
			assert.JSONEq(t, errorJSON(503, "", "injected fault: HTTP 503"), string(readAll(t, resp)), r.path)
			assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, r.path)
		}
		assert.Zero(t, m.srv.Metrics().Submitted)
	})
	t.Run("header", func(t *testing.T) {
		m := startLoopback(t, tinyOptions())
		for _, r := range audioRoutes() {
			body, ct := r.body(t, false)
			resp := postBody(t, context.Background(), http.DefaultClient, m.url+r.path, strings.NewReader(body), ct, ErrorHeader, "429")
			assert.JSONEq(t, errorJSON(429, "", "injected fault: HTTP 429"), string(readAll(t, resp)), r.path)
		}
		assert.Zero(t, m.srv.Metrics().Submitted)
	})
	t.Run("slow start", func(t *testing.T) {
		o := tinyOptions()
		o.Faults = Faults{SlowStart: Duration(time.Hour)}
		m := startLoopback(t, o)
		for _, r := range audioRoutes() {
			body, ct := r.body(t, false)
			resp := postBody(t, context.Background(), http.DefaultClient, m.url+r.path, strings.NewReader(body), ct)
			assert.JSONEq(t, errorJSON(503, "", "model is still loading"), string(readAll(t, resp)), r.path)
		}
	})
}

// TestAudioEngineDeath: open audio streams are cut, an ordinary transcription
// in flight fails with 500, new audio requests get 503.
func TestAudioEngineDeath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := startPipe(t, tinyOptions())
		defer p.stop()
		ctx := context.Background()
		routes := audioRoutes()
		body, ct := routes[0].body(t, true)
		stream := postBody(t, ctx, p.client, p.url+routes[0].path, strings.NewReader(body), ct)
		frames, errc := streamFrames(stream)
		body, ct = routes[2].body(t, true)
		speech := postBody(t, ctx, p.client, p.url+routes[2].path, strings.NewReader(body), ct)
		require.Equal(t, http.StatusOK, speech.StatusCode)
		ordinary := make(chan int, 1)
		go func() {
			body, ct := routes[1].body(t, false)
			r := postBody(t, ctx, p.client, p.url+routes[1].path, strings.NewReader(body), ct)
			readAll(t, r)
			ordinary <- r.StatusCode
		}()
		<-frames // the stream is producing
		synctest.Wait()
		require.Equal(t, 3, p.srv.Metrics().Running)

		require.NoError(t, p.srv.SetFaults(Faults{EngineDead: true}))
		drain(frames)
		assert.ErrorIs(t, <-errc, io.ErrUnexpectedEOF, "the transcription stream is cut")
		_, err := io.ReadAll(speech.Body)
		speech.Body.Close()
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "the speech body is cut short of its Content-Length")
		assert.Equal(t, http.StatusInternalServerError, <-ordinary)
		for _, r := range routes {
			body, ct := r.body(t, false)
			resp := postBody(t, ctx, p.client, p.url+r.path, strings.NewReader(body), ct)
			assert.JSONEq(t, errorJSON(503, "", "engine is dead"), string(readAll(t, resp)), r.path)
		}
	})
}

func TestAudioStepSlowdownAndTruncation(t *testing.T) {
	t.Run("slowdown", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			o := tinyOptions()
			o.Faults = Faults{StepTimeMultiplier: 3}
			p := startPipe(t, o)
			defer p.stop()
			body, ct := form(t, field("stream", "true"), audioFile("a.wav", 100))
			t0 := time.Now()
			resp := postBody(t, context.Background(), p.client, p.url+"/v1/audio/transcriptions", strings.NewReader(body), ct)
			frames, errc := streamFrames(resp)
			got := drain(frames)
			require.NoError(t, <-errc)
			assert.Equal(t, 3*prefillStep(engine.TinyProfile(), 4+1), got[0].at.Sub(t0), "every step takes 3x as long")
		})
	})
	t.Run("truncate", func(t *testing.T) {
		o := tinyOptions()
		o.Faults = Faults{Truncate: StreamFault{Chunk: 2}}
		m := startLoopback(t, o)
		body, ct := form(t, field("stream", "true"), audioFile("a.wav", 100))
		resp := postBody(t, context.Background(), http.DefaultClient, m.url+"/v1/audio/transcriptions", strings.NewReader(body), ct)
		frames, err := newSSEReader(resp.Body).all()
		resp.Body.Close()
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
		assert.Len(t, frames, 2, "cut right after chunk 2")

		resp = post(t, context.Background(), http.DefaultClient, m.url+"/v1/audio/speech", `{"input":"`+strings.Repeat("x", 30)+`"}`)
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
		assert.Len(t, got, 44+2*3840, "cut right after the second token's audio")
	})
}

// TestAudioMetrics: audio requests are engine requests, visible on /metrics
// as vLLM shows them: running while in flight, then counted by finish reason
// with their prompt and generation tokens.
func TestAudioMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := startPipe(t, tinyOptions())
		defer p.stop()
		body, ct := form(t, field("stream", "true"), audioFile("a.wav", 25600))
		resp := postBody(t, context.Background(), p.client, p.url+"/v1/audio/transcriptions", strings.NewReader(body), ct)
		frames, errc := streamFrames(resp)
		<-frames
		speech := post(t, context.Background(), p.client, p.url+"/v1/audio/speech", `{"input":"123456"}`)
		synctest.Wait()
		fams := scrapeWith(t, p.client, p.url)
		// The speech arrived during the transcription's step: it waits for
		// the next step boundary, as a vLLM request does.
		assert.Equal(t, 1.0, gaugeValue(fams, MetricRunning, "", ""))
		assert.Equal(t, 1.0, gaugeValue(fams, MetricWaiting, "", ""))
		assert.Positive(t, gaugeValue(fams, MetricKVUsage, "", ""))

		drain(frames)
		require.NoError(t, <-errc)
		readAll(t, speech)
		body, ct = form(t, field("max_completion_tokens", "2"), audioFile("b.wav", 100))
		readAll(t, postBody(t, context.Background(), p.client, p.url+"/v1/audio/translations", strings.NewReader(body), ct))
		synctest.Wait()
		fams = scrapeWith(t, p.client, p.url)
		assert.Equal(t, 0.0, gaugeValue(fams, MetricRunning, "", ""))
		assert.Equal(t, 2.0, gaugeValue(fams, MetricRequestSuccess, "finished_reason", "stop"))
		assert.Equal(t, 1.0, gaugeValue(fams, MetricRequestSuccess, "finished_reason", "length"))
		// 4+10 and 8 for the transcription, 4+2 and 5+1 for the speech, 4+1 and 2 for the translation
		assert.Equal(t, float64(14+6+5), gaugeValue(fams, MetricPromptTokens, "", ""))
		assert.Equal(t, float64(8+6+2), gaugeValue(fams, MetricGenerationTokens, "", ""))
		assert.Equal(t, uint64(3), fams[MetricE2E].GetMetric()[0].GetHistogram().GetSampleCount())
	})
}
