package bench

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/scenarios"
)

// A scripted stream on the fake clock: TTFT is the first content chunk (not the role chunk sent
// with it), ITL the gaps between content chunks, E2EL the terminal frame, TPOT (E2EL - TTFT) /
// (usage tokens - 1), tokens from the usage chunk.
func TestScriptedStreamMeasurement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, base, stop := pipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			time.Sleep(100 * time.Millisecond) // queueing: headers come late too
			sseHeaders(w)
			time.Sleep(50 * time.Millisecond)
			flushWrite(w, roleChunk)
			flushWrite(w, chatChunk("a")) // t = 150 ms
			time.Sleep(20 * time.Millisecond)
			flushWrite(w, chatChunk(" b c")) // t = 170 ms: one chunk, two tokens
			time.Sleep(30 * time.Millisecond)
			flushWrite(w, chatChunk(" d")) // t = 200 ms
			flushWrite(w, finishChunk)
			flushWrite(w, usageChunk(21, 4))
			time.Sleep(10 * time.Millisecond)
			flushWrite(w, doneFrame) // t = 210 ms
		}))
		defer stop()
		runStart := time.Now()
		time.Sleep(time.Second)
		rec := Record{Stream: true, RequestedPrompt: 16, RequestedOutput: 4}
		c.send(t.Context(), streamCall(base, 16, 4), &rec, runStart)

		assert.Equal(t, OK, rec.Outcome)
		assert.Equal(t, DetailNone, rec.Detail)
		assert.Equal(t, 200, rec.Status)
		assert.Equal(t, time.Second, rec.Start)
		assert.Equal(t, []time.Duration{ms(150), ms(170), ms(200)}, rec.Chunks)
		assert.Equal(t, ms(210), rec.End)
		assert.True(t, rec.Usage)
		assert.Equal(t, int64(21), rec.PromptTokens)
		assert.Equal(t, int64(4), rec.OutputTokens)

		ttft, ok := rec.TTFT()
		require.True(t, ok)
		assert.Equal(t, ms(150), ttft)
		tpot, ok := rec.TPOT()
		require.True(t, ok)
		assert.Equal(t, ms(20), tpot) // (210 - 150) / (4 - 1)
		assert.Equal(t, []time.Duration{ms(20), ms(30)}, rec.AppendITL(nil))
	})
}

// Without a usage chunk, the output tokens are the content chunks counted and the prompt is the
// requested one.
func TestStreamWithoutUsageCountsChunks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, base, stop := pipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			sseHeaders(w)
			for _, s := range []string{"x", "y", "z"} {
				time.Sleep(5 * time.Millisecond)
				flushWrite(w, chatChunk(s))
			}
			flushWrite(w, doneFrame)
		}))
		defer stop()
		rec := Record{RequestedPrompt: 16, RequestedOutput: 4}
		c.send(t.Context(), streamCall(base, 16, 4), &rec, time.Now())
		assert.Equal(t, OK, rec.Outcome)
		assert.False(t, rec.Usage)
		assert.Equal(t, int64(3), rec.OutputTokens)
		assert.Equal(t, int64(16), rec.PromptTokens)
		assert.Equal(t, []time.Duration{ms(5), ms(10), ms(15)}, rec.Chunks)
		assert.Equal(t, ms(15), rec.End)
	})
}

// The completions and Responses streams are measured the same way: text chunks and
// response.output_text.delta events are the content; response.completed ends a Responses stream
// and carries its usage.
func TestOtherEndpointStreams(t *testing.T) {
	cases := []struct {
		ep     Endpoint
		frames []string
	}{
		{Completions, []string{
			`data: {"object":"text_completion","choices":[{"text":"a","finish_reason":null}]}` + "\n\n",
			`data: {"object":"text_completion","choices":[{"text":" b","finish_reason":"length"}]}` + "\n\n",
			`data: {"object":"text_completion","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}}` + "\n\n",
			doneFrame,
		}},
		{Responses, []string{
			"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"object\":\"response\",\"status\":\"in_progress\",\"usage\":null}}\n\n",
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"a\"}\n\n",
			"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\" b\"}\n\n",
			"event: response.output_text.done\ndata: {\"type\":\"response.output_text.done\",\"text\":\"a b\"}\n\n",
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"object\":\"response\",\"status\":\"completed\",\"usage\":{\"input_tokens\":9,\"output_tokens\":2}}}\n\n",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.ep.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, base, stop := pipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					sseHeaders(w)
					for _, f := range tc.frames {
						time.Sleep(time.Millisecond)
						flushWrite(w, f)
					}
				}))
				defer stop()
				k := streamCall(base, 16, 2)
				k.ep, k.url = tc.ep, base+tc.ep.Path()
				rec := Record{RequestedPrompt: 16, RequestedOutput: 2}
				c.send(t.Context(), k, &rec, time.Now())
				assert.Equal(t, OK, rec.Outcome, rec.Detail)
				off := time.Duration(0)
				if tc.ep == Responses {
					off = time.Millisecond // the created event comes first
				}
				assert.Equal(t, []time.Duration{ms(1) + off, ms(2) + off}, rec.Chunks)
				assert.Equal(t, time.Duration(len(tc.frames))*time.Millisecond, rec.End)
				assert.Equal(t, int64(9), rec.PromptTokens)
				assert.Equal(t, int64(2), rec.OutputTokens)
			})
		})
	}
}

// Ordinary answers are ok with their usage; they have no chunks, so no TTFT.
func TestOrdinaryAnswers(t *testing.T) {
	bodies := map[Endpoint]string{
		Chat:        `{"object":"chat.completion","choices":[{"message":{"role":"assistant","content":"hi"}}],"usage":{"prompt_tokens":7,"completion_tokens":3}}`,
		Completions: `{"object":"text_completion","choices":[{"text":"hi"}],"usage":{"prompt_tokens":7,"completion_tokens":3}}`,
		Responses:   `{"object":"response","status":"incomplete","error":null,"usage":{"input_tokens":7,"output_tokens":3}}`,
	}
	for _, ep := range []Endpoint{Chat, Completions, Responses} {
		t.Run(ep.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, base, stop := pipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					time.Sleep(40 * time.Millisecond)
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, bodies[ep])
				}))
				defer stop()
				k := call{url: base + ep.Path(), model: "m", ep: ep, shape: scenarios.Shape{Prompt: 4, Output: 3}}
				rec := Record{RequestedPrompt: 4, RequestedOutput: 3}
				c.send(t.Context(), k, &rec, time.Now())
				assert.Equal(t, OK, rec.Outcome, rec.Detail)
				assert.Equal(t, ms(40), rec.End)
				assert.Empty(t, rec.Chunks)
				assert.Equal(t, int64(7), rec.PromptTokens)
				assert.Equal(t, int64(3), rec.OutputTokens)
				_, ok := rec.TTFT()
				assert.False(t, ok)
			})
		})
	}
}

// Every bad answer is a class (and a fixed detail); none is ok, none crashes.
func TestErrorClassification(t *testing.T) {
	json := func(status int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}
	}
	stream := func(frames ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			sseHeaders(w)
			for _, f := range frames {
				flushWrite(w, f)
			}
		}
	}
	cut := func(frames ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			stream(frames...)(w, r)
			panic(http.ErrAbortHandler) // close the connection without ending the body
		}
	}
	cases := []struct {
		name    string
		stream  bool
		h       http.HandlerFunc
		outcome Outcome
		detail  Detail
		status  int
	}{
		{"400", true, json(400, `{"error":{"message":"bad"}}`), HTTP4xx, DetailNone, 400},
		{"404", false, json(404, `{}`), HTTP4xx, DetailNone, 404},
		{"429", true, json(429, `{}`), HTTP429, DetailNone, 429},
		{"503", true, json(503, `{}`), HTTP503, DetailNone, 503},
		{"500", false, json(500, `not json at all`), HTTP5xx, DetailNone, 500},
		{"502", true, json(502, ``), HTTP5xx, DetailNone, 502},
		{"redirect", true, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) }, Malformed, DetailStatus, 302},
		{"no content", false, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }, Malformed, DetailStatus, 204},
		{"html instead of a stream", true, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<html>proxy error</html>")
		}, Malformed, DetailContentType, 200},
		{"stream instead of json", false, stream(chatChunk("a"), doneFrame), Malformed, DetailContentType, 200},
		{"not an OpenAI body", false, json(200, `{"hello":"world"}`), Malformed, DetailJSON, 200},
		{"truncated body", false, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "100")
			_, _ = io.WriteString(w, `{"object":"chat.completion"`)
		}, Transport, DetailTruncated, 200},
		{"invalid JSON body", false, json(200, `{"object":"chat.completion",`), Malformed, DetailJSON, 200},
		{"wrong object in stream", true, stream(`data: {"object":"text_completion","choices":[{"text":"a"}]}`+"\n\n", doneFrame), Malformed, DetailJSON, 200},
		{"invalid JSON frame", true, stream(chatChunk("a"), "data: {\"object\":\n\n"), Malformed, DetailJSON, 200},
		{"content of the wrong type", true, stream(`data: {"object":"chat.completion.chunk","choices":[{"delta":{"content":7}}]}` + "\n\n"), Malformed, DetailJSON, 200},
		{"unknown SSE field", true, stream("bogus: 1\n\n"), Malformed, DetailSSE, 200},
		{"bare CR", true, stream("data: {}\r data: x\n\n"), Malformed, DetailSSE, 200},
		{"error event", true, stream(chatChunk("a"), `data: {"error":{"message":"engine died"}}`+"\n\n"), Malformed, DetailStreamError, 200},
		{"no tokens", true, stream(roleChunk, finishChunk, doneFrame), Malformed, DetailNoTokens, 200},
		{"data after DONE", true, stream(chatChunk("a"), doneFrame, chatChunk("b")), Malformed, DetailAfterEnd, 200},
		{"ends without DONE", true, stream(chatChunk("a"), chatChunk("b")), Transport, DetailTruncated, 200},
		{"ends inside a frame", true, stream(chatChunk("a"), "data: {\"object\""), Transport, DetailTruncated, 200},
		{"connection cut mid-stream", true, cut(chatChunk("a")), Transport, DetailTruncated, 200},
		{"connection cut before the answer", true, func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }, Transport, DetailIO, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, base, stop := pipeServer(t, tc.h)
				defer stop()
				k := streamCall(base, 4, 2)
				k.shape.Stream = tc.stream
				rec := Record{RequestedPrompt: 4, RequestedOutput: 2}
				c.send(t.Context(), k, &rec, time.Now())
				assert.Equal(t, tc.outcome, rec.Outcome)
				assert.Equal(t, tc.detail, rec.Detail)
				assert.Equal(t, tc.status, rec.Status)
			})
		})
	}
}

// A frame above the bound is malformed, not an out-of-memory.
func TestOversizedFrame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, base, stop := pipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			sseHeaders(w)
			chunk := strings.Repeat("x", 1<<20)
			_, _ = io.WriteString(w, "data: ")
			for range MaxFrameBytes/len(chunk) + 2 {
				if _, err := io.WriteString(w, chunk); err != nil {
					return // the client gave up reading
				}
			}
		}))
		defer stop()
		rec := Record{}
		c.send(t.Context(), streamCall(base, 4, 2), &rec, time.Now())
		assert.Equal(t, Malformed, rec.Outcome)
		assert.Equal(t, DetailTooLarge, rec.Detail)
	})
}

// Our own cancellations are classed by their cause: the per-request timeout is a transport
// failure, the workload's scheduled cancellation and the run's stop are cancellations.
func TestCancellationCauses(t *testing.T) {
	cases := []struct {
		cause   error
		outcome Outcome
		detail  Detail
	}{
		{errTimeout, Transport, DetailTimeout},
		{errScheduledCancel, Canceled, DetailScheduledCancel},
		{errStopped, Canceled, DetailRunStopped},
	}
	for _, tc := range cases {
		for _, when := range []string{"before headers", "mid-stream"} {
			t.Run(string(tc.detail)+"/"+when, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					c, base, stop := pipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						_, _ = io.Copy(io.Discard, r.Body) // then the server notices the client leaving
						if when == "mid-stream" {
							sseHeaders(w)
							flushWrite(w, chatChunk("a"))
						}
						<-r.Context().Done()
					}))
					defer stop()
					ctx, cancel := context.WithTimeoutCause(t.Context(), 3*time.Second, tc.cause)
					defer cancel()
					rec := Record{}
					c.send(ctx, streamCall(base, 4, 2), &rec, time.Now())
					assert.Equal(t, tc.outcome, rec.Outcome)
					assert.Equal(t, tc.detail, rec.Detail)
					assert.Equal(t, 3*time.Second, rec.End)
				})
			})
		}
	}
}

// An unreachable target (a real closed port on loopback) is a transport failure at connect.
func TestUnreachableTarget(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c := NewClient(1, 16)
	defer c.Close()
	rec := Record{}
	c.send(t.Context(), streamCall("http://"+addr, 4, 2), &rec, time.Now())
	assert.Equal(t, Transport, rec.Outcome)
	assert.Equal(t, DetailConnect, rec.Detail)
	assert.Equal(t, 0, rec.Status)
}

// The real client against a real loopback server: the body it sends is one JSON object with the
// endpoint's fields, and the bearer token travels in the Authorization header only.
func TestRequestOnTheWire(t *testing.T) {
	var got struct {
		path, auth, ctype, accept string
		body                      []byte
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.path, got.auth, got.ctype, got.accept = r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), r.Header.Get("Accept")
		got.body, _ = io.ReadAll(r.Body)
		sseHeaders(w)
		flushWrite(w, chatChunk("a"))
		flushWrite(w, doneFrame)
	}))
	defer srv.Close()
	c := NewClient(1, 64)
	defer c.Close()
	k := streamCall(srv.URL, 10, 5)
	k.token = "secret-token"
	rec := Record{}
	c.send(t.Context(), k, &rec, time.Now())
	require.Equal(t, OK, rec.Outcome, rec.Detail)
	assert.Equal(t, "/v1/chat/completions", got.path)
	assert.Equal(t, "Bearer secret-token", got.auth)
	assert.Equal(t, "application/json", got.ctype)
	assert.Equal(t, "text/event-stream", got.accept)
	assert.JSONEq(t, `{"model":"m","messages":[{"role":"user","content":"`+strings.Repeat("x", 0)+string(newBodies(10).prose[:40])+`"}],"max_tokens":5,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, string(got.body))
	assert.NotContains(t, string(got.body), "secret-token")
}

// The live token count (Live.Tokens, which anvil-qualify's calibration windows read) rises with
// each content chunk as it arrives, and by an ordinary answer's output tokens when it ends; a
// failed ordinary answer adds nothing.
func TestLiveTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var tokens atomic.Int64
		seen := make(chan int64, 1)
		c, base, stop := pipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if r.Header.Get("Accept") != "text/event-stream" {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"object":"chat.completion","choices":[{"message":{"role":"assistant","content":"hi"}}],"usage":{"prompt_tokens":7,"completion_tokens":3}}`)
				return
			}
			sseHeaders(w)
			flushWrite(w, roleChunk)
			flushWrite(w, chatChunk("a"))
			flushWrite(w, chatChunk(" b"))
			time.Sleep(10 * time.Millisecond)
			synctest.Wait() // the client has read both chunks
			seen <- tokens.Load()
			flushWrite(w, chatChunk(" c"))
			flushWrite(w, finishChunk)
			flushWrite(w, doneFrame)
		}))
		defer stop()
		k := streamCall(base, 4, 3)
		k.tokens = &tokens
		rec := Record{Stream: true, RequestedPrompt: 4, RequestedOutput: 3}
		c.send(t.Context(), k, &rec, time.Now())
		require.Equal(t, OK, rec.Outcome, rec.Detail)
		assert.Equal(t, int64(2), <-seen, "counted as the chunks arrived, before the answer ended")
		assert.Equal(t, int64(3), tokens.Load())

		k = call{url: base + Chat.Path(), model: "m", ep: Chat, shape: scenarios.Shape{Prompt: 4, Output: 3}, tokens: &tokens}
		rec = Record{RequestedPrompt: 4, RequestedOutput: 3}
		c.send(t.Context(), k, &rec, time.Now())
		require.Equal(t, OK, rec.Outcome, rec.Detail)
		assert.Equal(t, int64(6), tokens.Load(), "the ordinary answer's usage output tokens")
	})
}
