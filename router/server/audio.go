package server

import (
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/router/audioform"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/relay"
	"github.com/anvil-llm/anvil/router/request"
	"github.com/anvil-llm/anvil/router/routing"
	"github.com/anvil-llm/anvil/router/spool"
)

// The audio routes. Speech (JSON in, audio out) is an ordinary proxy endpoint whose answer the relay
// passes through as it comes; transcriptions and translations take a multipart form, which this file
// handles: the form's head (up to the file part, holding the model field) is read before anything is
// reserved, and the file streams to the upstream during the one attempt, never held. A file part
// that comes before the model field is held until the model is known (spill.go), then sent from
// there.

// errAudioTooLarge refuses an upload over limits.max_audio_bytes, announced or counted.
var errAudioTooLarge = apiError{http.StatusRequestEntityTooLarge, "audio upload is larger than the router accepts", "invalid_request_error", "request_too_large"}

// audioForm returns the handler of a multipart audio route. Like proxy, the walk is routing's
// Attempt, and Finish runs in audioAttempt's one defer; what is left of the body is read after it.
func (s *Server) audioForm(ep request.Endpoint) gin.HandlerFunc {
	return func(c *gin.Context) {
		var l linger
		s.audioAttempt(c, ep, &l)
		l.finish(c) // the attempt is over and its lease released; a panic skips it (the connection is aborted)
	}
}

// audioAttempt is one audio form request up to its decision record, leaving to l what remains to read.
func (s *Server) audioAttempt(c *gin.Context, ep request.Endpoint, l *linger) {
	g := s.genOf(c)
	at := g.router.Begin(requestID(c), s.now())
	at.Correlate(callerRequestID(c))
	_, caller := s.callerOf(c, g)
	at.Identify(caller)
	defer s.finish(c, &at)
	l.limit = g.cfg.Limits().MaxAudioBytes

	var held *heldUpload
	defer func() { _ = held.Close() }() // every path: a refusal, a departed caller, a panic, a shutdown
	form, ok := s.openForm(c, g, &held)
	if !ok {
		return
	}
	if !form.Held() {
		// The file is still unread: a refusal before the attempt closes the connection (see
		// openForm); relayForm hands the decision to uploadWriter.
		c.Header("Connection", "close")
	}
	req, err := request.FormRequest(ep, form.Model(), form.Stream())
	if err != nil {
		abort(c, requestError(err))
		return
	}
	g, tier, target, ok := s.resolveAdmit(c, g, &at, req)
	if !ok {
		return
	}
	s.relayForm(c, g, &at, ep, form, tier, target, l)
}

// openForm bounds the body by limits.max_audio_bytes (an announced length over it is refused before a
// byte is read) and reads the form's head, or, when the file comes first, the whole form, its file
// held in *held.
func (s *Server) openForm(c *gin.Context, g *generation, held **heldUpload) (*audioform.Form, bool) {
	lim := g.cfg.Limits()
	if c.Request.ContentLength > lim.MaxAudioBytes {
		abort(c, errAudioTooLarge)
		return nil, false
	}
	// An upload may take longer than the server's read timeout for ordinary bodies: the attempt's own
	// bound applies instead.
	bound := time.Now().Add(g.cfg.Upstream().Timeout)
	_ = http.NewResponseController(c.Writer).SetReadDeadline(bound)
	cut := &cutReader{r: s.bodyReader(c, lim, bound), ctx: c.Request.Context()}
	ended := &endReader{r: cut}
	body := http.MaxBytesReader(c.Writer, io.NopCloser(ended), lim.MaxAudioBytes)
	flim := audioform.DefaultLimits()
	flim.MaxHeadBytes = lim.MaxBodyBytes
	h, _ := s.callerOf(c, g)
	form, err := audioform.OpenHolding(body, c.GetHeader("Content-Type"), flim, s.holdFor(c, lim, h, cut, held))
	if *held != nil {
		(*held).stop() // the whole form is read: nothing left to cut
	}
	if err != nil {
		if !ended.end {
			// Refused mid-body: close after the answer rather than let net/http first read up to
			// 256 KiB more of an upload nobody wants, from a caller that may wait for the answer.
			c.Header("Connection", "close")
		}
		abort(c, s.formRefused(c, err))
		return nil, false
	}
	return form, true
}

// endReader records whether the caller's body reached its end.
type endReader struct {
	r   io.Reader
	end bool
}

func (e *endReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if errors.Is(err, io.EOF) {
		e.end = true
	}
	return n, err
}

// relayForm makes the one attempt with the form as a streamed body: an encoder goroutine writes the
// canonical form (model replaced) into a pipe the relay sends from. When the caller's body breaks a
// rule mid-way (its bound, the form's rules), the encoder fails the pipe, the relay abandons the
// attempt before the upstream has a complete request, and the caller gets the router's refusal.
//
// The response is written only once the caller's body is consumed (Encode reads it to its end before
// the upstream can have a complete form) or the encoder has stopped (a refusal), as net/http's HTTP/1
// server wants; full duplex stays off. The one exception, an upstream that answers before the upload
// ends, is relayed as it is.
//
// A connection whose request body was not read to its end is closed after the response (uploadWriter
// and joinEncoder mark it; linger.go reads the rest of the body first, so the answer survives the
// close), never reused: net/http would otherwise first read up to 256 KiB more of
// an upload nobody wants, holding the answer back from a caller that waits for it before sending
// more; and a read cut by joinEncoder may be the one that reached the body's end, which starts
// net/http's background read for the next request, which then fails on the expired deadline and
// cancels the connection's context, so every later request on it would begin already canceled.
func (s *Server) relayForm(c *gin.Context, g *generation, at *routing.Attempt, ep request.Endpoint, form *audioform.Form,
	tier config.Tier, target routing.Target, l *linger) {
	c.Writer.Header().Del("Connection") // uploadWriter and joinEncoder decide from here
	pr, pw := io.Pipe()
	enc := &encoder{done: make(chan error, 1)}
	go func() {
		err := form.Encode(pw, tier.ServedModel)
		// Both flags before the pipe ends: the relay never sees an end they miss.
		enc.consumed.Store(err == nil)
		enc.finished.Store(true)
		_ = pw.CloseWithError(err) // nil: a clean end of the upstream body
		enc.done <- err
	}()
	up := relay.Upstream{
		BaseURL: target.BaseURL, Path: ep.Path(), BodyStream: pr, ContentType: form.ContentType(),
		Stream: form.Stream(), RequestID: requestID(c), APIKey: tier.APIKey.Reveal(),
	}
	s.propagate(c, &up)
	res := g.relay.Do(c.Request.Context(), uploadWriter{c.Writer, &enc.consumed}, up)
	if c.Writer.Written() && !enc.finished.Load() && !form.Held() {
		// Answered while the caller is still sending: the encoder is joined in l.finish, after the
		// lease is released, under the linger bound instead of a cut (see linger).
		l.enc = enc
	} else if encErr := s.joinEncoder(c, enc); errors.Is(res.Err, relay.ErrRequestBody) {
		e := s.formRefused(c, encErr)
		abort(c, e)
		at.Relayed(res.Outcome, e.status, res.FirstByte)
		return
	}
	at.Relayed(res.Outcome, res.Status, res.FirstByte)
	at.Used(res.Usage)
	c.Abort() // the relay wrote the response
}

// encoder is the goroutine writing the upstream form: consumed is set when Encode read the caller's
// body to its end, finished once it reads the body no more; done carries Encode's result.
type encoder struct {
	consumed, finished atomic.Bool
	done               chan error
}

// joinEncoder waits for the encoder goroutine. Once the attempt is over the relay has closed the pipe,
// so the encoder stops at its next write; one still reading a slow caller's body is cut short by an
// expired read deadline, so a stalled upload never holds the handler (or its lease) longer. A
// response not yet started whose body was not consumed is marked to close its connection.
func (s *Server) joinEncoder(c *gin.Context, enc *encoder) error {
	if !enc.finished.Load() {
		_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Now())
	}
	err := <-enc.done
	if !enc.consumed.Load() && !c.Writer.Written() {
		c.Header("Connection", "close")
	}
	return err
}

// uploadWriter is the response writer of an upload's attempt: a response that starts before the
// caller's body was consumed closes its connection after it (see relayForm).
type uploadWriter struct {
	http.ResponseWriter
	consumed *atomic.Bool
}

func (w uploadWriter) closeUnlessConsumed() {
	if !w.consumed.Load() {
		w.Header().Set("Connection", "close")
	}
}

func (w uploadWriter) WriteHeader(code int) {
	w.closeUnlessConsumed()
	w.ResponseWriter.WriteHeader(code)
}

func (w uploadWriter) Write(p []byte) (int, error) {
	w.closeUnlessConsumed()
	return w.ResponseWriter.Write(p)
}

// Flush may be the first write of a response; Unwrap lets http.ResponseController reach the rest.
func (w uploadWriter) Flush() {
	w.closeUnlessConsumed()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w uploadWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// formRefused is formError, counting an upload cut for its rate in the caller's body refusals and
// logging a held file the disk failed.
func (s *Server) formRefused(c *gin.Context, err error) apiError {
	e := formError(err)
	_, reason, held := holdRefused(err)
	if (held || errors.Is(err, audioform.ErrHeldRead)) && e == errInternal {
		s.log.Warn("holding an audio file failed", "request_id", requestID(c), "error", err)
	}
	if e == errTooSlow {
		reason = bodyRefusedTooSlow
	}
	if reason != "" {
		_, caller := s.callerOf(c, s.genOf(c))
		s.metrics.bodyRefused(caller, reason)
	}
	return e
}

// formError maps a refused form: over the bound is 413, a body that could not be read is 400, every
// form rule is its fixed 400; a held file the router could not hold or read back is the router's
// (500, or 503 shutting_down when a shutdown closed the spool).
func formError(err error) apiError {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return errAudioTooLarge
	}
	if errors.Is(err, errUploadTooSlow) {
		return errTooSlow
	}
	if e, _, ok := holdRefused(err); ok {
		return e
	}
	if errors.Is(err, audioform.ErrHeldRead) {
		if errors.Is(err, spool.ErrClosed) {
			return errShuttingDown // the spool closed under a held file being sent
		}
		return errInternal // the router's disk: logged by formRefused
	}
	if errors.Is(err, relay.ErrShutdown) {
		return errShuttingDown // a held upload cut by a shutdown (cutReader)
	}
	if r, ok := refusalOf(stageForm, err); ok {
		return r.answer
	}
	if err == nil {
		return errInternal // the relay reported a refused body the encoder did not refuse: a bug
	}
	return errUnreadable
}
