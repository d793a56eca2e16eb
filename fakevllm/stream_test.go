package fakevllm

import (
	"context"
	"encoding/json"
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

// streamFrames reads frames one by one into a channel as they arrive.
func streamFrames(resp *http.Response) (<-chan frame, <-chan error) {
	frames := make(chan frame, 1024)
	errc := make(chan error, 1)
	go func() {
		defer resp.Body.Close()
		defer close(frames)
		r := newSSEReader(resp.Body)
		for {
			f, err := r.next()
			if err == io.EOF {
				errc <- nil
				return
			}
			if err != nil {
				errc <- err
				return
			}
			frames <- f
		}
	}()
	return frames, errc
}

func drain(frames <-chan frame) []frame {
	var out []frame
	for f := range frames {
		out = append(out, f)
	}
	return out
}

// prefillStep and decodeStep are the tiny profile's step times for a lone
// request with a prompt of p tokens (decoding its k-th output token).
func prefillStep(pr engine.Profile, p int) time.Duration {
	return pr.StepBase + time.Duration(p)*(pr.PrefillPerToken+pr.ContextPerToken)
}

func decodeStep(pr engine.Profile, p, k int) time.Duration {
	return pr.StepBase + pr.DecodePerSeq + time.Duration(p+k)*pr.ContextPerToken
}

// TestChatStreamTimingAndFraming: the client's TTFT equals the engine's
// first-token time exactly (fake time), nothing arrives before it, each later
// chunk arrives one decode step later, and the framing is vLLM's.
func TestChatStreamTimingAndFraming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := startPipe(t, tinyOptions())
		defer p.stop()
		pr := engine.TinyProfile()
		const maxTokens = 5
		body := chatReq("hello", maxTokens, `"stream":true,"ignore_eos":true,"stream_options":{"include_usage":true}`)
		prompt := chatPrimerTokens + chatMessageTokens + EstimateTextTokens("hello")

		t0 := time.Now()
		resp := post(t, context.Background(), p.client, p.url+"/v1/chat/completions", body)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
		frames, errc := streamFrames(resp)
		synctest.Wait()
		assert.Empty(t, frames, "no frame before the first token exists")

		got := drain(frames)
		require.NoError(t, <-errc)
		ttft := p.srv.Metrics().TTFT.Sum
		require.Equal(t, prefillStep(pr, prompt), ttft, "engine TTFT follows the step-time model")

		// role, 5 content chunks (the last with finish_reason), usage, [DONE]
		require.Len(t, got, 1+maxTokens+2)
		assert.Equal(t, ttft, got[0].at.Sub(t0), "client TTFT equals the engine's first-token time")
		role := decodeJSON(t, got[0].data)
		assert.Equal(t, "chat.completion.chunk", role["object"])
		delta0 := role["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
		assert.Equal(t, map[string]any{"role": "assistant", "content": ""}, delta0)
		_, hasUsage := role["usage"]
		assert.False(t, hasUsage, "usage only in the final chunk without continuous_usage_stats")

		at := t0.Add(ttft)
		for k := 0; k < maxTokens; k++ {
			f := got[1+k]
			if k > 0 {
				at = at.Add(decodeStep(pr, prompt, k))
			}
			assert.Equal(t, at, f.at, "chunk %d arrives at its step end", k)
			ch := decodeJSON(t, f.data)["choices"].([]any)[0].(map[string]any)
			assert.Equal(t, tokenText(k), ch["delta"].(map[string]any)["content"])
			if k < maxTokens-1 {
				assert.Nil(t, ch["finish_reason"])
			} else {
				assert.Equal(t, "length", ch["finish_reason"])
				assert.Contains(t, ch, "stop_reason")
			}
		}
		u := decodeJSON(t, got[maxTokens+1].data)
		assert.Equal(t, []any{}, u["choices"])
		assert.Equal(t, map[string]any{"prompt_tokens": json.Number(jsonNumber(prompt)),
			"completion_tokens": json.Number("5"), "total_tokens": json.Number(jsonNumber(prompt + 5))}, u["usage"])
		assert.Equal(t, "[DONE]", got[maxTokens+2].data)

		// All chunks share one id.
		for _, f := range got[:maxTokens+2] {
			assert.Equal(t, role["id"], decodeJSON(t, f.data)["id"])
		}
	})
}

func TestChatStreamNaturalStopAndContinuousUsage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := startPipe(t, tinyOptions())
		defer p.stop()
		body := chatReq("stop by yourself", 40, `"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}`)
		g, err := decodeRequest(endpointChat, []byte(body), p.srv.lim)
		require.NoError(t, err)
		resp := post(t, context.Background(), p.client, p.url+"/v1/chat/completions", body)
		frames, errc := streamFrames(resp)
		got := drain(frames)
		require.NoError(t, <-errc)
		require.Len(t, got, 1+g.stopAfter+2)
		var text string
		for i, f := range got[:len(got)-1] {
			m := decodeJSON(t, f.data)
			u := m["usage"].(map[string]any)
			if i <= g.stopAfter {
				assert.Equal(t, json.Number(jsonNumber(max(i, 0))), u["completion_tokens"], "continuous usage in chunk %d", i)
			}
			if i == 0 || i > g.stopAfter {
				continue
			}
			ch := m["choices"].([]any)[0].(map[string]any)
			text += ch["delta"].(map[string]any)["content"].(string)
			if i == g.stopAfter {
				assert.Equal(t, "stop", ch["finish_reason"])
				assert.Equal(t, "", ch["delta"].(map[string]any)["content"], "EOS has no text")
			}
		}
		assert.Equal(t, string(appendTokens(nil, 0, g.stopAfter-1)), text)
	})
}

func TestCompletionsStreamFraming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := startPipe(t, tinyOptions())
		defer p.stop()
		resp := post(t, context.Background(), p.client, p.url+"/v1/completions",
			`{"prompt":"abc","max_tokens":3,"ignore_eos":true,"stream":true}`)
		frames, errc := streamFrames(resp)
		got := drain(frames)
		require.NoError(t, <-errc)
		require.Len(t, got, 4, "three text chunks and [DONE]; no role chunk, no usage")
		for k := range 3 {
			m := decodeJSON(t, got[k].data)
			assert.Equal(t, "text_completion", m["object"])
			ch := m["choices"].([]any)[0].(map[string]any)
			assert.Equal(t, tokenText(k), ch["text"])
		}
		assert.Equal(t, "[DONE]", got[3].data)
	})
}

func TestResponsesStreamEventSequence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := startPipe(t, tinyOptions())
		defer p.stop()
		t0 := time.Now()
		resp := post(t, context.Background(), p.client, p.url+"/v1/responses",
			`{"input":"hello","max_output_tokens":3,"ignore_eos":true,"stream":true}`)
		frames, errc := streamFrames(resp)
		synctest.Wait()
		// created and in_progress come at once, before any token.
		require.Len(t, frames, 2)
		got := drain(frames)
		require.NoError(t, <-errc)
		want := []string{"response.created", "response.in_progress", "response.output_item.added",
			"response.content_part.added", "response.output_text.delta", "response.output_text.delta",
			"response.output_text.delta", "response.output_text.done", "response.content_part.done",
			"response.output_item.done", "response.completed"}
		require.Len(t, got, len(want))
		ttft := p.srv.Metrics().TTFT.Sum
		for i, f := range got {
			assert.Equal(t, want[i], f.event)
			m := decodeJSON(t, f.data)
			assert.Equal(t, want[i], m["type"])
			assert.Equal(t, json.Number(jsonNumber(i)), m["sequence_number"])
			if i < 2 {
				assert.Equal(t, t0, f.at)
			}
		}
		assert.Equal(t, ttft, got[2].at.Sub(t0), "the output item appears with the first token")
		done := decodeJSON(t, got[7].data)
		assert.Equal(t, "the engine schedules", done["text"])
		final := decodeJSON(t, got[10].data)["response"].(map[string]any)
		assert.Equal(t, "incomplete", final["status"])
		assert.Equal(t, json.Number("3"), final["usage"].(map[string]any)["output_tokens"])
	})
}

// TestClientDisconnectAborts: a client that goes away mid-request frees its
// slot and KV blocks in the engine, counted as an abort.
func TestClientDisconnectAborts(t *testing.T) {
	for _, stream := range []bool{true, false} {
		name := map[bool]string{true: "stream", false: "ordinary"}[stream]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := startPipe(t, tinyOptions())
				defer p.stop()
				ctx, cancel := context.WithCancel(context.Background())
				extra := `"ignore_eos":true`
				if stream {
					extra += `,"stream":true`
				}
				done := make(chan struct{})
				go func() {
					defer close(done)
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.url+"/v1/chat/completions",
						strings.NewReader(chatReq("long one", 500, extra)))
					resp, err := p.client.Do(req)
					if err == nil {
						_, _ = newSSEReader(resp.Body).all()
						resp.Body.Close()
					}
				}()
				synctest.Wait() // the request is in the engine, its first step in flight
				m := p.srv.Metrics()
				require.Equal(t, 1, m.Running)
				require.Positive(t, m.KVUsage)

				cancel()
				<-done
				synctest.Wait()
				m = p.srv.Metrics()
				assert.Equal(t, uint64(1), m.Success.Abort, "abort counted")
				assert.Zero(t, m.Running)
				assert.Zero(t, m.Waiting)
				assert.Zero(t, m.KVUsage, "KV blocks freed")
				assert.Zero(t, m.UsedBlocks)
			})
		})
	}
}
