package relay

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

// Defaults applied by New when an Options bound is zero or negative.
const (
	DefaultMaxResponseBytes int64 = 16 << 20
	DefaultMaxEventBytes          = 1 << 20
	// readBufferSize is the relay's read-ahead over the transport's own buffer, held by every open
	// stream: an event longer than it is assembled across reads, and it still holds the several
	// events that arrive together (a vLLM chunk is a few hundred bytes), so they share one flush.
	readBufferSize = 1 << 10
	// maxPooledEventBytes keeps one huge event from pinning its buffer in the pool.
	maxPooledEventBytes = 64 << 10
	// maxPooledBodyBytes does the same for ordinary bodies.
	maxPooledBodyBytes = 64 << 10
)

// Options bound one attempt. Zero timeouts mean "no limit from the relay" (the HTTP client's own Timeout,
// if any, still applies); zero sizes take the defaults.
type Options struct {
	// MaxResponseBytes bounds an ordinary (non-SSE or non-2xx) response body, which is buffered whole so
	// that an oversized or failed body can still become a clean 502.
	MaxResponseBytes int64
	// MaxEventBytes bounds one SSE event, its lines and terminator included.
	MaxEventBytes int
	// FirstByteTimeout bounds the wait for the first response body byte, counted from the moment the
	// request body has been sent: the start of Do for a byte body, the end of a streamed one.
	FirstByteTimeout time.Duration
	// Timeout bounds the whole attempt, streaming included.
	Timeout time.Duration
	// Now reads the clock for Result timings; nil means time.Now. Timeouts use real timers regardless.
	Now func() time.Time
}

// Upstream is the one call to make.
type Upstream struct {
	BaseURL string // e.g. http://127.0.0.1:9001, no trailing slash
	Path    string // e.g. /v1/chat/completions
	Body    []byte // the request body, sent unchanged (ignored when BodyStream is set)
	// BodyStream, when set, is the request body, sent as it is read (chunked: its length is unknown).
	// A read error from it means the caller refused its own body mid-way: the attempt ends with
	// ErrRequestBody and nothing is written (see the package doc). Do closes it when it can be closed.
	BodyStream io.Reader
	// ContentType is the request body's media type; "" means application/json.
	ContentType string
	Stream      bool // the caller asked for SSE: sets Accept; the response's Content-Type decides the relay mode
	// PassThrough relays a successful (2xx) response that is not an event stream as it arrives, through
	// a bounded buffer, instead of buffering it whole: for audio bytes. Error responses stay buffered.
	PassThrough bool
	RequestID   string // forwarded as X-Request-ID when it is a valid header value
	APIKey      string // optional upstream credential, sent as a bearer token
	// TraceParent and TraceState are the W3C trace context to send (trace.go); "" sends none.
	TraceParent, TraceState string
}

// Result describes the attempt. It holds no URL, address, body or raw error text.
type Result struct {
	Outcome  decisionlog.Outcome // decisionlog.Terminal of the attempt's ending
	Status   int                 // status written to the client; 499 when the client left before anything was written
	Attempts int                 // always 1: Do is exactly one dispatch
	// FirstByte is the time from the start of Do to the first upstream body byte; zero if none arrived.
	FirstByte time.Duration
	Duration  time.Duration
	// Wrote reports whether the response status line was committed to the client.
	Wrote bool
	// Cut reports a passed-through body that ended early after its headers were committed. Such a body
	// has no in-band way to say so: the caller must abort the connection (in a net/http handler,
	// panic(http.ErrAbortHandler)) so that the client sees a broken response, never a clean end.
	Cut bool
	// Err is nil on success, otherwise one of this package's sentinel errors.
	Err error
	// Usage is the token counts the upstream reported in its 2xx answer (see usage.go); not Reported
	// when it reported none.
	Usage decisionlog.Usage
}

// Relay makes single upstream attempts. It is safe for concurrent use.
type Relay struct {
	client *http.Client
	// roundTrip performs the one request: the client's transport itself when the client adds nothing
	// the relay needs (no Timeout), else the client.
	roundTrip func(*http.Request) (*http.Response, error)
	opts      Options
	// readers recycles the per-attempt read buffer and SSE event buffers (*eventReader).
	readers sync.Pool
	// copyBufs recycles the pass-through copy buffers (*[]byte of passThroughBuffer bytes).
	copyBufs sync.Pool
	// bodies recycles ordinary response bodies (*[]byte).
	bodies sync.Pool
}

// New returns a Relay using a copy of client (nil: a dedicated keep-alive transport without proxies).
// The copy never follows redirects and keeps no cookies, so one Do can only ever call one URL.
func New(client *http.Client, opts Options) *Relay {
	c := &http.Client{Transport: newTransport()}
	if client != nil {
		*c = *client
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.Jar = nil
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if opts.MaxEventBytes <= 0 {
		opts.MaxEventBytes = DefaultMaxEventBytes
	}
	opts.FirstByteTimeout = max(opts.FirstByteTimeout, 0)
	opts.Timeout = max(opts.Timeout, 0)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &Relay{client: c, opts: opts, roundTrip: c.Do}
	// The client follows no redirect and keeps no cookies here, so without a Timeout of its own it
	// would only cost each request a copy of its headers (kept for redirects that never come) and a
	// wrapped error: call its transport directly.
	if c.Timeout == 0 {
		rt := c.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		r.roundTrip = rt.RoundTrip
	}
	return r
}

func newTransport() *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 64, // the default of 2 churns connections under concurrent load on one member
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
}

// Do makes exactly one upstream attempt for up and writes the response to w. ctx is the client request's
// context: its end cancels the upstream request. Do returns when the response is fully relayed or the
// attempt has ended; it reads the clock at the start, at the first byte (if any) and at the end.
func (r *Relay) Do(ctx context.Context, w http.ResponseWriter, up Upstream) Result {
	start := r.opts.Now()
	res := Result{Attempts: 1}
	r.attempt(ctx, w, up, start, &res)
	res.Duration = r.opts.Now().Sub(start)
	return res
}

func (r *Relay) attempt(ctx context.Context, w http.ResponseWriter, up Upstream, start time.Time, res *Result) {
	upCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if r.opts.Timeout > 0 {
		t := time.AfterFunc(r.opts.Timeout, func() { cancel(ErrTimeout) })
		defer t.Stop()
	}
	firstByte := newFirstByteTimer(r.opts.FirstByteTimeout, func() { cancel(ErrFirstByteTimeout) })
	defer firstByte.stop()

	var sb *streamBody
	body := io.Reader(bytes.NewReader(up.Body))
	if up.BodyStream != nil {
		sb = &streamBody{r: up.BodyStream, ended: firstByte.start}
		body = sb
		defer sb.Close()
	} else {
		firstByte.start()
	}
	resp, err := r.send(upCtx, up, body)
	if err != nil {
		if ctx.Err() == nil && sb.failed() {
			finish(w, res, failure{decisionlog.EndBodyRefused, ErrRequestBody})
			return
		}
		finish(w, res, classify(ctx, upCtx, err))
		return
	}
	defer resp.Body.Close()
	er := r.getReader(resp.Body)
	defer r.putReader(er)
	er.scan.reset(up.APIKey)
	if _, err := er.br.Peek(1); err != nil && !errors.Is(err, io.EOF) {
		finish(w, res, classify(ctx, upCtx, err))
		return
	}
	if !firstByte.stop() { // fired as the byte arrived: the upstream call is canceled
		finish(w, res, classify(ctx, upCtx, context.Cause(upCtx)))
		return
	}
	res.FirstByte = r.opts.Now().Sub(start)

	if isSuccess(resp.StatusCode) && isEventStream(resp.Header.Get("Content-Type")) {
		if r.stream(ctx, upCtx, w, resp, er, res, up.APIKey) {
			drainAfterDone(er.br, cancel)
		}
		return
	}
	if isSuccess(resp.StatusCode) && up.PassThrough {
		r.passThrough(ctx, upCtx, w, resp, er, res)
		return
	}
	r.ordinary(ctx, upCtx, w, resp, er, res, up.APIKey)
}

func (r *Relay) getReader(body io.Reader) *eventReader {
	er, ok := r.readers.Get().(*eventReader)
	if !ok {
		er = newEventReader(bufio.NewReaderSize(nil, readBufferSize), r.opts.MaxEventBytes)
	}
	er.br.Reset(body)
	return er
}

func (r *Relay) putReader(er *eventReader) {
	er.br.Reset(nil) // drop the body reference
	er.sr.Trim(maxPooledEventBytes)
	r.readers.Put(er)
}

// send builds the upstream request from scratch (no caller header can leak) and performs it once.
// body is up.Body or the watched up.BodyStream; a body of another type than the byte reader has no
// known length, so it goes chunked and is never replayed (a POST is not retried by the transport).
func (r *Relay) send(ctx context.Context, up Upstream, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, up.BaseURL+up.Path, body)
	if err != nil {
		return nil, err
	}
	if _, streamed := body.(*streamBody); streamed {
		req.ContentLength = -1 // unknown: chunked, headers first, no probing read of the body
	}
	accept := "application/json"
	if up.Stream {
		accept = "text/event-stream"
	}
	contentType := "application/json"
	if up.ContentType != "" {
		if !validHeaderValue(up.ContentType) {
			return nil, errBadContentType
		}
		contentType = up.ContentType
	}
	h := req.Header
	h["Content-Type"] = []string{contentType}
	h["Accept"] = []string{accept}
	// Explicit identity keeps SSE bytes unbuffered by a decompressor and disables transparent gzip.
	h["Accept-Encoding"] = []string{"identity"}
	h["User-Agent"] = []string{"anvil-router"}
	if up.RequestID != "" && validHeaderValue(up.RequestID) {
		h["X-Request-Id"] = []string{up.RequestID}
	}
	setTrace(h, up)
	if up.APIKey != "" {
		if !validAPIKey(up.APIKey) {
			return nil, errBadAPIKey
		}
		h["Authorization"] = []string{"Bearer " + up.APIKey}
	}
	return r.roundTrip(req)
}

// doneDrainWait bounds how long the relay waits, once [DONE] is relayed and flushed, for the upstream
// response to end, so that its connection can carry the next request. A well-behaved upstream ends it
// right away (the chunked terminator often arrives with [DONE] itself); stopping short of that end
// would close the connection and cost the next request a new one.
const doneDrainWait = 50 * time.Millisecond

// errDrainWait cancels an upstream that neither ended its response nor sent anything within
// doneDrainWait of [DONE]; the outcome is already decided, so it only closes the connection.
var errDrainWait = errors.New("relay: upstream response did not end after [DONE]")

// drainAfterDone reads the rest of a stream after [DONE]. At the response's end the transport keeps the
// connection; more bytes (never read: nothing after [DONE] is relayed) or no end within doneDrainWait
// leave it to be closed, as any response abandoned mid-way is.
func drainAfterDone(br *bufio.Reader, cancel context.CancelCauseFunc) {
	t := time.AfterFunc(doneDrainWait, func() { cancel(errDrainWait) })
	defer t.Stop()
	var b [1]byte
	for {
		if n, err := br.Read(b[:]); n > 0 || err != nil {
			return
		}
	}
}

// validHeaderValue accepts visible ASCII and spaces, the safe subset of RFC 9110 field values.
func validHeaderValue(s string) bool {
	if len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// MaxAPIKeyBytes bounds Upstream.APIKey, as router/config bounds a tier's key. The bound keeps every
// form of the key the relay scans for (JSON escapes at most sextuple it) well inside the pass-through
// copy buffer, whose head holds back a pending prefix of the key.
const MaxAPIKeyBytes = 4096

// validAPIKey accepts 1-MaxAPIKeyBytes visible ASCII characters (no space), as router/config does.
func validAPIKey(s string) bool {
	if s == "" || len(s) > MaxAPIKeyBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// classify turns an error from the upstream call into a fixed failure. The client's own cancellation is
// checked first: once the client is gone, nothing else matters.
func classify(ctx, upCtx context.Context, err error) failure {
	if ctx.Err() != nil {
		return clientGone(ctx)
	}
	switch cause := context.Cause(upCtx); {
	case errors.Is(cause, ErrFirstByteTimeout):
		return failure{decisionlog.EndFirstByteTimeout, ErrFirstByteTimeout}
	case errors.Is(cause, ErrTimeout):
		return failure{decisionlog.EndTimeout, ErrTimeout}
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return failure{decisionlog.EndTimeout, ErrTimeout}
	}
	return failure{decisionlog.EndTransport, ErrTransport}
}

// clientGone classifies a client context that has ended: the router's shutdown (cause ErrShutdown) or
// the caller.
func clientGone(ctx context.Context) failure {
	if errors.Is(context.Cause(ctx), ErrShutdown) {
		return failure{decisionlog.EndShutdown, ErrShutdown}
	}
	return failure{decisionlog.EndClientCancel, ErrClientCanceled}
}

// writeFailed classifies a failed write to the client: the caller went away, unless the router's
// shutdown ended the request first.
func writeFailed(ctx context.Context) failure {
	if ctx.Err() != nil {
		return clientGone(ctx)
	}
	return failure{decisionlog.EndClientCancel, ErrClientCanceled}
}

// finish records f and, if nothing has been written and the client is still there, sends the fixed
// OpenAI-shaped error with decisionlog.Terminal's status. Once a status was committed, it stands and
// the caller handles the in-band ending. A refused request body is the caller's to answer.
func finish(w http.ResponseWriter, res *Result, f failure) {
	res.Outcome, res.Status = decisionlog.Terminal(f.end, res.Status)
	res.Err = f.err
	if res.Wrote || f.end == decisionlog.EndClientCancel || f.end == decisionlog.EndBodyRefused {
		return
	}
	writeError(w, res, f)
}

// writeError sends f's fixed OpenAI-shaped error with status res.Status.
func writeError(w http.ResponseWriter, res *Result, f failure) {
	body := errorJSON(f)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if res.Status == http.StatusServiceUnavailable {
		h.Set("Retry-After", "1")
	}
	w.WriteHeader(res.Status)
	res.Wrote = true
	_, _ = w.Write(body) // a failed write means the client left; the outcome already says what happened
}

func isSuccess(status int) bool { return status >= 200 && status < 300 }

// isEventStream reports whether a Content-Type is text/event-stream, parameters ignored.
func isEventStream(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/event-stream")
}
