package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anvil-llm/anvil/scenarios"
)

// Bounds of the client.
const (
	// MaxBodyBytes bounds an ordinary answer's body; a longer one is malformed.
	MaxBodyBytes = 64 << 20
	// errorBodyBytes is how much of an error answer is read (and dropped) so that its connection
	// can be reused.
	errorBodyBytes = 64 << 10
	// streamBufferBytes is the stream reader's buffer: a chunk of a few hundred bytes fits, longer
	// lines spill into the reader's own growing buffer.
	streamBufferBytes = 2 << 10
)

// Causes of a request's context ending, which decide its outcome class.
var (
	errTimeout         = errors.New("request timeout")
	errScheduledCancel = errors.New("scheduled client cancellation")
	errStopped         = errors.New("run stopped")
)

// Client sends requests over one HTTP/1.1 transport tuned not to distort what it measures: no
// per-host connection limit, idle connections kept for every concurrent client, no HTTP/2, no
// proxy, no compression, no redirects. Streams are read frame by frame through a pooled
// buffered reader, one clock reading per frame into a slice sized up front.
type Client struct {
	hc      *http.Client
	tr      *http.Transport
	bodies  *bodies
	readers sync.Pool // *bufio.Reader
}

// NewClient returns a client for up to concurrency simultaneous requests with prompts of up to
// maxPromptTokens.
func NewClient(concurrency, maxPromptTokens int) *Client {
	return newClient(concurrency, maxPromptTokens, (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
}

// newClient is NewClient over the given dialer (tests dial in-memory pipes).
func newClient(concurrency, maxPromptTokens int, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *Client {
	tr := &http.Transport{
		DialContext:         dial,
		MaxIdleConnsPerHost: max(concurrency, 64),
		IdleConnTimeout:     30 * time.Second, // below the servers' own, so they never close a conn being reused
		DisableCompression:  true,
		WriteBufferSize:     4 << 10,
		ReadBufferSize:      4 << 10,
		Protocols:           new(http.Protocols),
	}
	tr.Protocols.SetHTTP1(true)
	return &Client{
		hc: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a redirect is an answer, not an OpenAI one
		}},
		tr:     tr,
		bodies: newBodies(maxPromptTokens),
	}
}

// Close drops the idle connections.
func (c *Client) Close() { c.tr.CloseIdleConnections() }

// call is one request to send.
type call struct {
	url       string // the endpoint's full URL
	model     string
	token     string
	ep        Endpoint
	shape     scenarios.Shape
	ignoreEOS bool
	tokens    *atomic.Int64 // counts output tokens as they arrive (Live.Tokens); nil: none
}

// send sends one request and fills rec's measurements: Start (since runStart), Chunks, End,
// Status, Outcome, Detail, tokens and RetryAfter. It never fails: every ending is a class.
func (c *Client) send(ctx context.Context, k call, rec *Record, runStart time.Time) {
	head, prompt, tail := c.bodies.parts(k.ep, k.model, k.shape.Prompt, k.shape.Output, k.shape.Stream, k.ignoreEOS)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, k.url, nil)
	if err != nil { // the URL was validated with the target
		rec.Outcome, rec.Detail = Transport, DetailConnect
		return
	}
	req.GetBody = func() (io.ReadCloser, error) {
		return io.NopCloser(io.MultiReader(bytes.NewReader(head), bytes.NewReader(prompt), bytes.NewReader(tail))), nil
	}
	req.Body, _ = req.GetBody()
	req.ContentLength = int64(len(head) + len(prompt) + len(tail))
	req.Header.Set("Content-Type", "application/json")
	if k.shape.Stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	if k.token != "" {
		req.Header.Set("Authorization", "Bearer "+k.token)
	}
	start := time.Now()
	rec.Start = start.Sub(runStart)
	resp, err := c.hc.Do(req)
	if err != nil {
		rec.End = time.Since(start)
		rec.Outcome, rec.Detail = failure(ctx, err)
		return
	}
	defer resp.Body.Close()
	rec.Status = resp.StatusCode
	switch {
	case resp.StatusCode != http.StatusOK:
		c.refusal(ctx, resp, rec, start)
	case k.shape.Stream:
		c.stream(ctx, k.ep, k.tokens, resp, rec, start)
		settleTokens(k.tokens, rec)
	default:
		c.ordinary(ctx, k.ep, resp, rec, start)
	}
	if !rec.Usage {
		rec.PromptTokens, rec.OutputTokens = int64(rec.RequestedPrompt), int64(len(rec.Chunks))
	}
	if !k.shape.Stream && rec.Outcome == OK && k.tokens != nil {
		k.tokens.Add(rec.OutputTokens)
	}
}

// refusal reads an error answer (bounded) and its Retry-After.
func (c *Client) refusal(ctx context.Context, resp *http.Response, rec *Record, start time.Time) {
	_, err := io.Copy(io.Discard, io.LimitReader(resp.Body, errorBodyBytes))
	rec.End = time.Since(start)
	rec.Outcome = statusOutcome(resp.StatusCode)
	if rec.Outcome == Malformed {
		rec.Detail = DetailStatus
	}
	if retryable(resp.StatusCode) {
		rec.RetryAfter = RetryAfter(resp.Header, time.Now())
	}
	if err != nil && ctx.Err() != nil {
		rec.Outcome, rec.Detail = failure(ctx, err) // the answer was cut by our own cancellation
	}
}

// stream reads an SSE answer frame by frame, stamping each content frame.
func (c *Client) stream(ctx context.Context, ep Endpoint, tokens *atomic.Int64, resp *http.Response, rec *Record, start time.Time) {
	if !mediaType(resp.Header.Get("Content-Type"), "text/event-stream") {
		rec.End = time.Since(start)
		rec.Outcome, rec.Detail = Malformed, DetailContentType
		return
	}
	br, _ := c.readers.Get().(*bufio.Reader)
	if br == nil {
		br = bufio.NewReaderSize(resp.Body, streamBufferBytes)
	} else {
		br.Reset(resp.Body)
	}
	defer func() { br.Reset(nil); c.readers.Put(br) }()
	sse := newSSEReader(br, MaxFrameBytes)
	p := answerParser{ep: ep}
	if rec.Chunks == nil {
		rec.Chunks = make([]time.Duration, 0, rec.RequestedOutput+1)
	}
	for {
		_, data, err := sse.next()
		at := time.Since(start)
		if err != nil {
			rec.End = at
			rec.Outcome, rec.Detail = streamFailure(ctx, err)
			return
		}
		kind, u, err := p.frame(data)
		if err != nil {
			rec.End = at
			rec.Outcome, rec.Detail = Malformed, answerDetail(err)
			return
		}
		if u.set {
			rec.PromptTokens, rec.OutputTokens, rec.Usage = u.prompt, u.output, true
		}
		switch kind {
		case frameToken:
			rec.Chunks = append(rec.Chunks, at)
			if tokens != nil {
				tokens.Add(1)
			}
		case frameEnd:
			rec.End = at
			rec.Outcome, rec.Detail = afterEnd(sse, len(rec.Chunks))
			return
		}
	}
}

// settleTokens corrects the live count (Live.Tokens) once a stream has ended: to its usage count
// when it succeeded and reported one, and to nothing when it failed.
func settleTokens(tokens *atomic.Int64, rec *Record) {
	switch {
	case tokens == nil:
	case rec.Outcome != OK:
		tokens.Add(-int64(len(rec.Chunks)))
	case rec.Usage:
		tokens.Add(rec.OutputTokens - int64(len(rec.Chunks)))
	}
}

// afterEnd reads what follows the terminal frame: nothing but the body's end is expected.
func afterEnd(sse *sseReader, chunks int) (Outcome, Detail) {
	if _, _, err := sse.next(); err == nil {
		return Malformed, DetailAfterEnd
	}
	// Any other ending after the terminal frame leaves the answer complete.
	if chunks == 0 {
		return Malformed, DetailNoTokens
	}
	return OK, DetailNone
}

// ordinary reads a whole JSON answer.
func (c *Client) ordinary(ctx context.Context, ep Endpoint, resp *http.Response, rec *Record, start time.Time) {
	if !mediaType(resp.Header.Get("Content-Type"), "application/json") {
		rec.End = time.Since(start)
		rec.Outcome, rec.Detail = Malformed, DetailContentType
		return
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	rec.End = time.Since(start)
	switch {
	case err != nil:
		rec.Outcome, rec.Detail = streamFailure(ctx, err)
		return
	case len(body) > MaxBodyBytes:
		rec.Outcome, rec.Detail = Malformed, DetailTooLarge
		return
	}
	p := answerParser{ep: ep}
	u, _, err := p.body(body)
	if err != nil {
		rec.Outcome, rec.Detail = Malformed, answerDetail(err)
		return
	}
	if u.set {
		rec.PromptTokens, rec.OutputTokens, rec.Usage = u.prompt, u.output, true
	}
	rec.Outcome = OK
}

// mediaType reports whether a Content-Type header names the media type want.
func mediaType(header, want string) bool {
	mt, _, _ := strings.Cut(header, ";")
	return strings.EqualFold(strings.TrimSpace(mt), want)
}

// failure classifies a request that ended without a complete answer: our own cancellations by
// their cause, else a connection that could not be made, or one that failed.
func failure(ctx context.Context, err error) (Outcome, Detail) {
	if ctx.Err() != nil {
		switch context.Cause(ctx) {
		case errTimeout:
			return Transport, DetailTimeout
		case errScheduledCancel:
			return Canceled, DetailScheduledCancel
		}
		return Canceled, DetailRunStopped
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return Transport, DetailConnect
	}
	return Transport, DetailIO
}

// streamFailure classifies an error while reading an answer's body.
func streamFailure(ctx context.Context, err error) (Outcome, Detail) {
	switch {
	case ctx.Err() != nil:
		return failure(ctx, err)
	case errors.Is(err, errSSE):
		return Malformed, DetailSSE
	case errors.Is(err, errFrameTooLarge):
		return Malformed, DetailTooLarge
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		return Transport, DetailTruncated
	}
	return Transport, DetailIO
}

func answerDetail(err error) Detail {
	if errors.Is(err, errStreamError) {
		return DetailStreamError
	}
	return DetailJSON
}
