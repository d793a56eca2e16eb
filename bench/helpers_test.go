package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/scenarios"
)

// pipeNet is an in-memory network for tests inside a synctest bubble: the client dials pipes that
// an http.Server accepts, so every wait in the test, the server's scripted pauses included, runs
// on the bubble's fake clock and every measured time is exact.
type pipeNet struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeNet() *pipeNet {
	return &pipeNet{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (n *pipeNet) Accept() (net.Conn, error) {
	select {
	case c := <-n.conns:
		return c, nil
	case <-n.done:
		return nil, net.ErrClosed
	}
}

func (n *pipeNet) Close() error {
	n.once.Do(func() { close(n.done) })
	return nil
}

func (n *pipeNet) Addr() net.Addr { return pipeAddr{} }

func (n *pipeNet) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	srv, cli := net.Pipe()
	select {
	case n.conns <- srv:
		return cli, nil
	case <-n.done:
		return nil, &net.OpError{Op: "dial", Net: "pipe", Err: errors.New("connection refused")}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// pipeServer serves h on an in-memory network; call it inside a synctest bubble. The returned
// stop closes the server and the client's idle connections, so the bubble's goroutines end.
func pipeServer(t *testing.T, h http.Handler) (c *Client, base string, stop func()) {
	t.Helper()
	pn := newPipeNet()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(pn)
	}()
	c = newClient(4, 4096, pn.dial)
	return c, "http://bench.test", func() {
		require.NoError(t, srv.Close())
		c.Close()
		<-served
	}
}

// flushWrite writes s and flushes it to the client at once.
func flushWrite(w http.ResponseWriter, s string) {
	_, _ = fmt.Fprint(w, s)
	w.(http.Flusher).Flush()
}

// sseHeaders starts a 200 SSE answer.
func sseHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

// chatChunk is a chat completion chunk frame with the given delta content ("" for none).
func chatChunk(content string) string {
	return `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":` +
		fmt.Sprintf("%q", content) + `},"finish_reason":null}]}` + "\n\n"
}

const (
	roleChunk   = `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
	finishChunk = `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":""},"finish_reason":"length"}]}` + "\n\n"
	doneFrame   = "data: [DONE]\n\n"
)

func usageChunk(prompt, completion int) string {
	return fmt.Sprintf(`data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d}}`+"\n\n",
		prompt, prompt+completion, completion)
}

// streamCall is a streamed chat request of the given shape.
func streamCall(base string, prompt, output int) call {
	return call{url: base + Chat.Path(), model: "m", ep: Chat,
		shape: scenarios.Shape{Prompt: prompt, Output: output, Stream: true}, ignoreEOS: true}
}

// closedPlan is a closed-loop plan of n clients sending requests measured requests.
func closedPlan(clients, requests int, think, backoff time.Duration, streaming float64) Plan {
	return Plan{
		Label: "t", Seed: 1, Endpoint: Chat, Requests: requests, IgnoreEOS: true,
		Workload: scenarios.Workload{
			Closed:       &scenarios.Closed{Clients: clients, Think: think, Backoff: backoff},
			PromptTokens: scenarios.Dist{Dist: scenarios.DistConstant, Value: 16},
			OutputTokens: scenarios.Dist{Dist: scenarios.DistConstant, Value: 4},
			Streaming:    &streaming,
		},
	}
}

// openPlan is an open-loop plan.
func openPlan(process string, rate, shape float64, requests int) Plan {
	streaming := 1.0
	return Plan{
		Label: "t", Seed: 1, Endpoint: Chat, Requests: requests, IgnoreEOS: true,
		Workload: scenarios.Workload{
			Open:         &scenarios.Open{Process: process, Rate: rate, Shape: shape},
			PromptTokens: scenarios.Dist{Dist: scenarios.DistConstant, Value: 16},
			OutputTokens: scenarios.Dist{Dist: scenarios.DistConstant, Value: 4},
			Streaming:    &streaming,
		},
	}
}

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
