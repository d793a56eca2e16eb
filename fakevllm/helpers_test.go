package fakevllm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
)

const testModel = "test-model"

func tinyOptions() Options {
	return Options{Models: []string{testModel}, Profile: engine.TinyProfile(), Seed: 7}
}

// loopback is a member served by httptest on 127.0.0.1.
type loopback struct {
	srv *Server
	url string
}

func startLoopback(t *testing.T, opts Options) loopback {
	t.Helper()
	srv, err := NewServer(opts)
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		srv.Close()
	})
	return loopback{srv: srv, url: hs.URL}
}

// pipeMember is a member served over in-memory connections, so tests inside
// a synctest bubble run real HTTP on fake time.
type pipeMember struct {
	srv    *Server
	hs     *http.Server
	ln     *pipeListener
	client *http.Client
	url    string
}

// startPipe must be called inside synctest.Test; stop must run before the
// bubble's function returns.
func startPipe(t *testing.T, opts Options) *pipeMember {
	t.Helper()
	srv, err := NewServer(opts)
	require.NoError(t, err)
	ln := newPipeListener()
	hs := &http.Server{Handler: srv.Handler()}
	go func() { _ = hs.Serve(ln) }()
	tr := &http.Transport{DialContext: ln.dial}
	return &pipeMember{srv: srv, hs: hs, ln: ln, client: &http.Client{Transport: tr}, url: "http://fake"}
}

func (p *pipeMember) stop() {
	p.client.CloseIdleConnections()
	_ = p.hs.Close()
	p.srv.Close()
}

type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// post sends a JSON body and returns the response.
func post(t *testing.T, ctx context.Context, client *http.Client, url, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	return resp
}

func get(t *testing.T, client *http.Client, url string) (int, []byte) {
	t.Helper()
	resp, err := client.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return b
}

// frame is one SSE frame as a client sees it.
type frame struct {
	event string
	data  string
	at    time.Time
}

// sseReader reads frames from a response body.
type sseReader struct {
	r *bufio.Reader
}

func newSSEReader(body io.Reader) *sseReader { return &sseReader{r: bufio.NewReader(body)} }

// next returns the next frame, stamped with the time its last line arrived.
// A clean end of stream is exactly io.EOF; a stream cut mid-frame, or cut
// by the server without the chunked terminator, is another error.
func (s *sseReader) next() (frame, error) {
	var f frame
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && line == "" && f.data == "" && f.event == "" {
				return f, io.EOF
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return f, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if f.data != "" || f.event != "" {
				f.at = time.Now()
				return f, nil
			}
		case strings.HasPrefix(line, "event: "):
			f.event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			f.data = strings.TrimPrefix(line, "data: ")
		}
	}
}

// all reads frames until the stream ends; err is nil on a clean end.
func (s *sseReader) all() ([]frame, error) {
	var out []frame
	for {
		f, err := s.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
}

func decodeJSON(t *testing.T, data string) map[string]any {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader([]byte(data)))
	d.UseNumber()
	require.NoError(t, d.Decode(&m), "frame %q", data)
	return m
}

// chatReq builds a chat request body.
func chatReq(content string, maxTokens int, extra string) string {
	b, _ := json.Marshal(content)
	s := `{"model":"` + testModel + `","messages":[{"role":"user","content":` + string(b) + `}]`
	if maxTokens > 0 {
		s += `,"max_tokens":` + strconv.Itoa(maxTokens)
	}
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// errorJSON is the exact error body the fake answers with.
func errorJSON(status int, param, msg string) string {
	d := errorDetail{Message: msg, Type: errorType(status), Code: status}
	if param != "" {
		d.Param = &param
	}
	b, _ := json.Marshal(errorBody{Error: d})
	return string(b)
}
