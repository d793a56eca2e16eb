package relay

import (
	"bufio"
	"bytes"
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

	"github.com/anvil-llm/anvil/internal/pipenet"
	"github.com/anvil-llm/anvil/router/decisionlog"
)

// TestStreamEndKeepsTheUpstreamConnection: after [DONE] the relay reads the upstream response to its
// end, so the next attempt reuses the connection. An upstream that holds the stream open after [DONE]
// is given doneDrainWait and then cut; one that sends more after it is cut at once; the caller gets
// [DONE] and nothing after it either way, and the attempt is a success.
func TestStreamEndKeepsTheUpstreamConnection(t *testing.T) {
	const events = "data: " + `{"choices":[{"delta":{"content":"a"}}]}` + "\n\n"
	tests := []struct {
		name      string
		after     func(w http.ResponseWriter, r *http.Request) // what the upstream does after [DONE]
		wantDials int64
		wantWait  time.Duration // per attempt, in the bubble's fake time
	}{
		{"ends", func(http.ResponseWriter, *http.Request) {}, 1, 0},
		{"holds", func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, 3, doneDrainWait},
		{"sends more", func(w http.ResponseWriter, _ *http.Request) { flushWrite(w, "data: {\"late\":1}\n\n") }, 3, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := pipenet.New()
				defer n.Close()
				base := n.Serve("member:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					sseHeaders(w)
					flushWrite(w, events)
					flushWrite(w, "data: [DONE]\n\n")
					tc.after(w, r)
				}))
				var dials atomic.Int64
				tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
					dials.Add(1)
					return n.Dial(ctx, network, addr)
				}}
				defer tr.CloseIdleConnections()
				rl := New(&http.Client{Transport: tr}, Options{})
				up := Upstream{BaseURL: base, Path: "/v1/chat/completions", Body: []byte(`{"model":"m","stream":true}`), Stream: true}
				for range 3 {
					w := httptest.NewRecorder()
					start := time.Now()
					res := rl.Do(t.Context(), w, up)
					assert.Equal(t, tc.wantWait, time.Since(start))
					require.Equal(t, decisionlog.OutcomeSuccess, res.Outcome)
					assert.Equal(t, events+"data: [DONE]\n\n", w.Body.String(), "nothing after [DONE] is relayed")
					synctest.Wait() // the transport has taken the connection back, or closed it
				}
				assert.Equal(t, tc.wantDials, dials.Load(), "connections dialed for 3 attempts")
			})
		})
	}
}

// flushLog is a ResponseWriter that records what each Flush sent.
type flushLog struct {
	header  http.Header
	pending bytes.Buffer
	flushes chan string
}

func newFlushLog() *flushLog {
	return &flushLog{header: http.Header{}, flushes: make(chan string, 16)}
}

func (f *flushLog) Header() http.Header         { return f.header }
func (f *flushLog) WriteHeader(int)             {}
func (f *flushLog) Write(b []byte) (int, error) { return f.pending.Write(b) }
func (f *flushLog) Flush() {
	f.flushes <- f.pending.String()
	f.pending.Reset()
}

// streamFrom runs the relay's stream on body as an upstream's 200 event stream.
func streamFrom(rl *Relay, w http.ResponseWriter, body io.Reader) (Result, bool) {
	resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(body)}
	er := rl.getReader(resp.Body)
	defer rl.putReader(er)
	var res Result
	done := rl.stream(context.Background(), context.Background(), w, resp, er, &res, "")
	return res, done
}

// TestStreamFlushesWhatArrivedTogetherOnce: events already whole in the read buffer leave in one
// write, flushed once; an event is never held while the relay waits for the upstream, even when part
// of the next one arrived with it.
func TestStreamFlushesWhatArrivedTogetherOnce(t *testing.T) {
	ev := func(s string) string { return "data: {\"c\":\"" + s + "\"}\n\n" }
	rl := New(nil, Options{})

	t.Run("together", func(t *testing.T) {
		w := newFlushLog()
		all := ev("a") + ev("b") + ": keep-alive\r\n\r\n" + ev("c") + "data: [DONE]\n\n"
		res, done := streamFrom(rl, w, strings.NewReader(all))
		require.Equal(t, decisionlog.OutcomeSuccess, res.Outcome)
		assert.True(t, done)
		require.Len(t, w.flushes, 1)
		assert.Equal(t, strings.ReplaceAll(all, "\r\n", "\n"), <-w.flushes)
	})

	t.Run("part of the next", func(t *testing.T) {
		w := newFlushLog()
		pr, pw := io.Pipe()
		results := make(chan Result, 1)
		go func() {
			res, _ := streamFrom(rl, w, pr)
			results <- res
		}()
		_, err := io.WriteString(pw, ev("a")+`data: {"c":`)
		require.NoError(t, err)
		assert.Equal(t, ev("a"), recv(t, w.flushes, "the first event, before the rest of the second exists"))
		_, err = io.WriteString(pw, "\"b\"}\n\n\n\n"+ev("c"))
		require.NoError(t, err)
		assert.Equal(t, ev("b")+ev("c"), recv(t, w.flushes, "the second and third event"))
		_, err = io.WriteString(pw, "data: [DONE]\n\n")
		require.NoError(t, err)
		assert.Equal(t, "data: [DONE]\n\n", recv(t, w.flushes, "[DONE]"))
		assert.Equal(t, decisionlog.OutcomeSuccess, recv(t, results, "the result").Outcome)
	})
}

func TestEventBuffered(t *testing.T) {
	tests := []struct {
		buffered string
		want     bool
	}{
		{"", false},
		{"data: 1", false},
		{"data: 1\n", false},
		{"data: 1\n\n", true},
		{"data: 1\r\n\r\n", true},
		{"\n\n\r\ndata: 1\n", false}, // leading blank lines dispatch nothing: the event is not whole
		{"\n\ndata: 1\n\n", true},
		{": comment\n\n", true},
	}
	for _, tc := range tests {
		er := newEventReader(bufio.NewReader(strings.NewReader(tc.buffered)), DefaultMaxEventBytes)
		_, _ = er.br.Peek(len(tc.buffered)) // fill the buffer as a read would have
		assert.Equal(t, tc.want, er.eventBuffered(), "%q", tc.buffered)
	}
}
