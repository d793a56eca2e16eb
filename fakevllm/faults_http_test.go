package fakevllm

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
)

// advance moves the fake clock of a synctest bubble forward by d.
func advance(d time.Duration) { <-time.After(d) }

func errorOf(t *testing.T, resp *http.Response) (int, string) {
	t.Helper()
	var eb struct {
		Error struct {
			Type string `json:"type"`
			Code int    `json:"code"`
		} `json:"error"`
	}
	body := readAll(t, resp)
	require.NoError(t, json.Unmarshal(body, &eb), "%s", body)
	assert.Equal(t, resp.StatusCode, eb.Error.Code)
	return resp.StatusCode, eb.Error.Type
}

const simpleCompletion = `{"prompt":"x","max_tokens":2}`

func TestFaultHTTPErrorRate(t *testing.T) {
	o := tinyOptions()
	o.Faults = Faults{HTTPErrors: []HTTPErrorFault{{Status: 503, Rate: 1}}}
	m := startLoopback(t, o)
	for range 3 {
		status, typ := errorOf(t, post(t, context.Background(), http.DefaultClient, m.url+"/v1/chat/completions", chatReq("x", 2, "")))
		assert.Equal(t, http.StatusServiceUnavailable, status)
		assert.Equal(t, "ServiceUnavailableError", typ)
	}
	st, _ := get(t, http.DefaultClient, m.url+"/health")
	assert.Equal(t, http.StatusOK, st, "HTTP error faults hit generation only")
	assert.Zero(t, m.srv.Metrics().Submitted)

	// A mix of rates is reproducible member to member with the same seed.
	mix := Faults{HTTPErrors: []HTTPErrorFault{{Status: 500, Rate: 0.3}, {Status: 429, Rate: 0.2}}}
	sequence := func() []int {
		o := tinyOptions()
		o.Faults = mix
		m := startLoopback(t, o)
		var seq []int
		for range 40 {
			resp := post(t, context.Background(), http.DefaultClient, m.url+"/v1/completions", simpleCompletion)
			readAll(t, resp)
			seq = append(seq, resp.StatusCode)
		}
		return seq
	}
	a, b := sequence(), sequence()
	assert.Equal(t, a, b)
	assert.Contains(t, a, 200)
	assert.Contains(t, a, 500)
	assert.Contains(t, a, 429)
}

func TestFaultForcedByHeader(t *testing.T) {
	m := startLoopback(t, tinyOptions())
	for _, status := range []int{400, 429, 500, 503} {
		resp := post(t, context.Background(), http.DefaultClient, m.url+"/v1/completions", simpleCompletion, ErrorHeader, jsonNumber(status))
		got, typ := errorOf(t, resp)
		assert.Equal(t, status, got)
		assert.Equal(t, errorType(status), typ)
	}
	assert.Zero(t, m.srv.Metrics().Submitted)
	resp := post(t, context.Background(), http.DefaultClient, m.url+"/v1/completions", simpleCompletion)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	readAll(t, resp)
}

func TestFaultEngineDeath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := startPipe(t, tinyOptions())
		defer p.stop()
		ctx := context.Background()
		resp := post(t, ctx, p.client, p.url+"/v1/chat/completions", chatReq("stream", 500, `"stream":true,"ignore_eos":true`))
		frames, errc := streamFrames(resp)
		ordinary := make(chan int, 1)
		go func() {
			r := post(t, ctx, p.client, p.url+"/v1/completions", `{"prompt":"x","max_tokens":500,"ignore_eos":true}`)
			readAll(t, r)
			ordinary <- r.StatusCode
		}()
		<-frames // the stream is open and producing
		synctest.Wait()

		require.NoError(t, p.srv.SetFaults(Faults{EngineDead: true}))
		drain(frames)
		assert.ErrorIs(t, <-errc, io.ErrUnexpectedEOF, "the open stream is cut")
		assert.Equal(t, http.StatusInternalServerError, <-ordinary, "the in-flight ordinary request fails")
		st, _ := get(t, p.client, p.url+"/health")
		assert.Equal(t, http.StatusServiceUnavailable, st)
		status, _ := errorOf(t, post(t, ctx, p.client, p.url+"/v1/completions", simpleCompletion))
		assert.Equal(t, http.StatusServiceUnavailable, status, "new requests are refused")
		m := p.srv.Metrics()
		assert.Zero(t, m.Running)
		assert.Zero(t, m.KVUsage)
		// The cut requests did not finish: a crash counts no abort and no
		// latency for them; the engine restarts from zero.
		assert.Equal(t, engine.FinishCounts{}, m.Success, "cut requests are not counted as finished")
		assert.Zero(t, m.E2E.Count)
		assert.Zero(t, m.QueueTime.Count)
		assert.Zero(t, m.Submitted)

		// Clearing the fault restarts the engine.
		require.NoError(t, p.srv.SetFaults(Faults{}))
		st, _ = get(t, p.client, p.url+"/health")
		assert.Equal(t, http.StatusOK, st)
		r := post(t, ctx, p.client, p.url+"/v1/completions", simpleCompletion)
		assert.Equal(t, http.StatusOK, r.StatusCode)
		readAll(t, r)
		assert.Equal(t, uint64(1), p.srv.Metrics().Submitted, "a restarted engine counts from zero")
	})
}

func TestFaultSlowStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := tinyOptions()
		o.Faults = Faults{SlowStart: Duration(5 * time.Second)}
		p := startPipe(t, o)
		defer p.stop()
		check := func(wantStatus int, wantModels int) {
			t.Helper()
			st, _ := get(t, p.client, p.url+"/health")
			assert.Equal(t, wantStatus, st)
			st, body := get(t, p.client, p.url+"/v1/models")
			assert.Equal(t, http.StatusOK, st)
			var list modelList
			require.NoError(t, json.Unmarshal(body, &list))
			assert.Len(t, list.Data, wantModels)
		}
		check(http.StatusServiceUnavailable, 0)
		status, _ := errorOf(t, post(t, context.Background(), p.client, p.url+"/v1/completions", simpleCompletion))
		assert.Equal(t, http.StatusServiceUnavailable, status)
		advance(5*time.Second - time.Nanosecond)
		check(http.StatusServiceUnavailable, 0)
		advance(time.Nanosecond)
		check(http.StatusOK, 1)
		r := post(t, context.Background(), p.client, p.url+"/v1/completions", simpleCompletion)
		assert.Equal(t, http.StatusOK, r.StatusCode)
		readAll(t, r)
	})
}

func TestFaultStepTimeMultiplier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := tinyOptions()
		o.Faults = Faults{StepTimeMultiplier: 3}
		p := startPipe(t, o)
		defer p.stop()
		t0 := time.Now()
		resp := post(t, context.Background(), p.client, p.url+"/v1/completions", `{"prompt":"abcdefgh","max_tokens":1,"stream":true}`)
		frames, errc := streamFrames(resp)
		got := drain(frames)
		require.NoError(t, <-errc)
		assert.Equal(t, 3*prefillStep(engine.TinyProfile(), 2), got[0].at.Sub(t0), "every step takes 3x as long")
	})
}

func TestFaultTruncation(t *testing.T) {
	o := tinyOptions()
	o.Faults = Faults{Truncate: StreamFault{Chunk: 2}}
	m := startLoopback(t, o)
	resp := post(t, context.Background(), http.DefaultClient, m.url+"/v1/chat/completions", chatReq("x", 50, `"stream":true,"ignore_eos":true`))
	frames, err := newSSEReader(resp.Body).all()
	resp.Body.Close()
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.Len(t, frames, 2, "the connection is cut right after frame 2")
	em := m.srv.Metrics()
	assert.Equal(t, uint64(1), em.Success.Abort, "the cut request is aborted in the engine")
	assert.Zero(t, em.Running)

	// Ordinary requests are not streams: untouched.
	r := post(t, context.Background(), http.DefaultClient, m.url+"/v1/completions", simpleCompletion)
	assert.Equal(t, http.StatusOK, r.StatusCode)
	readAll(t, r)
}

func TestFaultMalformedChunk(t *testing.T) {
	o := tinyOptions()
	o.Faults = Faults{Malformed: StreamFault{Chunk: 2}}
	m := startLoopback(t, o)
	resp := post(t, context.Background(), http.DefaultClient, m.url+"/v1/chat/completions", chatReq("x", 4, `"stream":true,"ignore_eos":true`))
	frames, err := newSSEReader(resp.Body).all()
	resp.Body.Close()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(frames), 3, "role, content (coalesced in real time), [DONE]")
	for i, f := range frames[:len(frames)-1] {
		assert.Equal(t, i != 1, json.Valid([]byte(f.data)), "frame %d valid: %q", i+1, f.data)
	}
	assert.True(t, strings.HasPrefix(frames[1].data, `{"id":"chatcmpl-`), "the malformed frame still looks like a chunk")
	assert.Equal(t, "[DONE]", frames[len(frames)-1].data)
}

// TestFaultErrorEvent: the stream ends as vLLM's does when its generator raises: the error frame in
// place of frame 2, then [DONE], then a clean end; the request is aborted in the engine.
func TestFaultErrorEvent(t *testing.T) {
	o := tinyOptions()
	o.Faults = Faults{ErrorEvent: StreamFault{Chunk: 2}}
	m := startLoopback(t, o)
	resp := post(t, context.Background(), http.DefaultClient, m.url+"/v1/chat/completions", chatReq("x", 50, `"stream":true,"ignore_eos":true`))
	frames, err := newSSEReader(resp.Body).all()
	resp.Body.Close()
	require.NoError(t, err, "a clean end, as vLLM's")
	require.Len(t, frames, 3)
	assert.True(t, strings.HasPrefix(frames[0].data, `{"id":"chatcmpl-`))
	assert.JSONEq(t, `{"error":{"message":"the engine raised while streaming","type":"InternalServerError","param":null,"code":500}}`, frames[1].data)
	assert.Equal(t, "[DONE]", frames[2].data)
	em := m.srv.Metrics()
	assert.Equal(t, uint64(1), em.Success.Abort, "the failed request is aborted in the engine")
}

func TestFaultMetrics(t *testing.T) {
	parse := func(body []byte) error {
		p := expfmt.NewTextParser(model.LegacyValidation)
		_, err := p.TextToMetricFamilies(bytes.NewReader(body))
		return err
	}
	t.Run("error", func(t *testing.T) {
		o := tinyOptions()
		o.Faults = Faults{Metrics: MetricsFault{Mode: MetricsError}}
		m := startLoopback(t, o)
		st, _ := get(t, http.DefaultClient, m.url+"/metrics")
		assert.Equal(t, http.StatusInternalServerError, st)
	})
	t.Run("malformed", func(t *testing.T) {
		o := tinyOptions()
		o.Faults = Faults{Metrics: MetricsFault{Mode: MetricsMalformed}}
		m := startLoopback(t, o)
		st, body := get(t, http.DefaultClient, m.url+"/metrics")
		assert.Equal(t, http.StatusOK, st)
		assert.Error(t, parse(body))
	})
	t.Run("missing default", func(t *testing.T) {
		o := tinyOptions()
		o.Faults = Faults{Metrics: MetricsFault{Mode: MetricsMissing}}
		m := startLoopback(t, o)
		fams, _ := scrape(t, m.url)
		for _, n := range pressureFamilies() {
			assert.NotContains(t, fams, n)
		}
		assert.Contains(t, fams, MetricWaitingByReason, "a prefix of a dropped name survives: names match whole")
		assert.Contains(t, fams, MetricTTFT)
	})
	t.Run("missing listed", func(t *testing.T) {
		o := tinyOptions()
		o.Faults = Faults{Metrics: MetricsFault{Mode: MetricsMissing, Missing: []string{MetricTTFT, MetricWaiting}}}
		m := startLoopback(t, o)
		fams, _ := scrape(t, m.url)
		assert.NotContains(t, fams, MetricTTFT)
		assert.NotContains(t, fams, MetricWaiting)
		assert.Contains(t, fams, MetricRunning)
	})
	t.Run("oversized", func(t *testing.T) {
		o := tinyOptions()
		o.Faults = Faults{Metrics: MetricsFault{Mode: MetricsOversized}}
		m := startLoopback(t, o)
		st, body := get(t, http.DefaultClient, m.url+"/metrics")
		assert.Equal(t, http.StatusOK, st)
		assert.Greater(t, len(body), 1<<20+1, "past a 1 MiB + 1 byte bound")
		assert.NoError(t, parse(body), "valid text, only too big")
	})
	t.Run("slow", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			o := tinyOptions()
			o.Faults = Faults{Metrics: MetricsFault{Mode: MetricsSlow, Delay: Duration(1500 * time.Millisecond)}}
			p := startPipe(t, o)
			defer p.stop()
			t0 := time.Now()
			st, body := get(t, p.client, p.url+"/metrics")
			assert.Equal(t, http.StatusOK, st)
			assert.Equal(t, 1500*time.Millisecond, time.Since(t0))
			assert.NoError(t, parse(body))
		})
	})
	t.Run("hang", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			o := tinyOptions()
			o.Faults = Faults{Metrics: MetricsFault{Mode: MetricsHang}}
			p := startPipe(t, o)
			defer p.stop()
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/metrics", nil)
			t0 := time.Now()
			_, err := p.client.Do(req)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, time.Hour, time.Since(t0), "no answer until the client gives up")

			// A hung scrape does not hold up Close.
			released := make(chan int, 1)
			go func() {
				st, _ := get(t, p.client, p.url+"/metrics")
				released <- st
			}()
			synctest.Wait()
			p.srv.Close()
			assert.Equal(t, http.StatusServiceUnavailable, <-released)
		})
	})
}

func TestFaultKVSqueeze(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := startPipe(t, tinyOptions())
		defer p.stop()
		ctx := context.Background()
		require.NoError(t, p.srv.SetFaults(Faults{KVBlocks: 16}))
		em := p.srv.Metrics()
		assert.Equal(t, 64, em.TotalBlocks)
		assert.Equal(t, 48, em.UsedBlocks)
		assert.Equal(t, 0.75, em.KVUsage, "reserved blocks count as used, as a real shortage would")
		assert.Equal(t, 0.75, gaugeValue(scrapeWith(t, p.client, p.url), MetricKVUsage, "", ""))

		// A request that fits the squeezed pool runs.
		r := post(t, ctx, p.client, p.url+"/v1/completions", `{"prompt":"abcd","max_tokens":8,"ignore_eos":true}`)
		assert.Equal(t, http.StatusOK, r.StatusCode)
		readAll(t, r)

		// A request larger than the squeezed pool (100 prompt tokens: 7
		// blocks, 4 usable) waits, however long, until the squeeze is lifted.
		require.NoError(t, p.srv.SetFaults(Faults{KVBlocks: 4}))
		status := make(chan int, 1)
		go func() {
			r := post(t, ctx, p.client, p.url+"/v1/completions",
				`{"prompt":"`+strings.Repeat("abcd", 100)+`","max_tokens":4,"ignore_eos":true}`)
			readAll(t, r)
			status <- r.StatusCode
		}()
		synctest.Wait()
		advance(time.Minute)
		synctest.Wait()
		em = p.srv.Metrics()
		assert.Equal(t, 1, em.Waiting, "the oversized request waits")
		assert.Zero(t, em.Running)
		assert.Empty(t, status, "and gets no answer")

		require.NoError(t, p.srv.SetFaults(Faults{}))
		assert.Equal(t, http.StatusOK, <-status, "it completes once the squeeze is lifted")
		em = p.srv.Metrics()
		assert.Equal(t, uint64(2), em.Success.Length)
		assert.Zero(t, em.KVUsage)
		assert.Zero(t, em.Waiting)

		assert.ErrorIs(t, p.srv.SetFaults(Faults{KVBlocks: 65}), ErrInvalidFaults)
	})
}

func TestAdminFaults(t *testing.T) {
	m := startLoopback(t, tinyOptions())
	url := m.url + "/admin/faults"
	st, body := get(t, http.DefaultClient, url)
	assert.Equal(t, http.StatusOK, st)
	assert.JSONEq(t, `{}`, string(body))

	send := func(method, doc string) (int, []byte) {
		req, _ := http.NewRequest(method, url, strings.NewReader(doc))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		return resp.StatusCode, readAll(t, resp)
	}
	st, body = send(http.MethodPut, `{"http_errors":[{"status":502,"rate":1}],"metrics":{"mode":"slow","delay":"3s"}}`)
	require.Equal(t, http.StatusOK, st, "%s", body)
	want := `{"http_errors":[{"status":502,"rate":1}],"metrics":{"mode":"slow","delay":"3s"}}`
	assert.JSONEq(t, want, string(body))
	_, body = get(t, http.DefaultClient, url)
	assert.JSONEq(t, want, string(body))
	status, _ := errorOf(t, post(t, context.Background(), http.DefaultClient, m.url+"/v1/completions", simpleCompletion))
	assert.Equal(t, http.StatusBadGateway, status)

	// Invalid documents are refused and change nothing.
	for _, bad := range []string{`{"nope":1}`, `{"kv_blocks":1000}`, `{"slow_start":"x"}`} {
		st, body = send(http.MethodPut, bad)
		assert.Equal(t, http.StatusBadRequest, st, bad)
		assert.Contains(t, string(body), `"type":"BadRequestError"`)
	}
	st, _ = send(http.MethodPut, strings.Repeat(" ", MaxFaultsBytes+1))
	assert.Equal(t, http.StatusRequestEntityTooLarge, st)
	_, body = get(t, http.DefaultClient, url)
	assert.JSONEq(t, want, string(body))

	// POST takes YAML too; an empty body clears everything.
	st, body = send(http.MethodPost, "engine_dead: true\n")
	assert.Equal(t, http.StatusOK, st)
	assert.JSONEq(t, `{"engine_dead":true}`, string(body))
	st, body = send(http.MethodPut, "")
	assert.Equal(t, http.StatusOK, st)
	assert.JSONEq(t, `{}`, string(body))
	st, _ = get(t, http.DefaultClient, m.url+"/health")
	assert.Equal(t, http.StatusOK, st)
}
