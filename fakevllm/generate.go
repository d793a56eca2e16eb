package fakevllm

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/engine"
)

// ErrorHeader forces a generation request to fail with the status it holds
// (400-599), e.g. "X-Fake-Error: 503".
const ErrorHeader = "X-Fake-Error"

// generate handles one OpenAI generation endpoint. Every check that can
// refuse the request runs before the engine sees it.
func (s *Server) generate(ep endpoint) gin.HandlerFunc {
	return func(c *gin.Context) {
		g, e := s.admit(c, ep)
		if e != nil {
			writeError(c.Writer, e)
			return
		}
		s.run(c, g, s.newResponder(ep, g))
	}
}

// run submits an admitted request to the engine and answers it, streamed or
// ordinary, as r renders it.
func (s *Server) run(c *gin.Context, g genRequest, r responder) {
	t, err := s.drv.submit(g, g.stream)
	if err != nil {
		writeError(c.Writer, submitError(err))
		return
	}
	if g.stream {
		s.stream(c, r, t)
		return
	}
	s.ordinary(c, r, t)
}

// admit applies the gates, then reads and validates the body.
func (s *Server) admit(c *gin.Context, ep endpoint) (genRequest, *apiError) {
	if e := s.gate(c); e != nil {
		return genRequest{}, e
	}
	body, e := s.readBody(c)
	if e != nil {
		return genRequest{}, e
	}
	g, err := decodeRequest(ep, body, s.lim)
	if err != nil {
		return genRequest{}, asAPIError(err)
	}
	if e := s.checkModel(g.model); e != nil {
		return genRequest{}, e
	}
	return g, nil
}

// gate is what every engine request (text or audio) passes before its body
// is read: closing, readiness, engine death, then the forced and the random
// HTTP error faults.
func (s *Server) gate(c *gin.Context) *apiError {
	switch {
	case s.isClosing():
		return &apiError{Status: http.StatusServiceUnavailable, Message: "server is shutting down"}
	case !s.ready():
		return &apiError{Status: http.StatusServiceUnavailable, Message: "model is still loading"}
	case s.faults.dead():
		return &apiError{Status: http.StatusServiceUnavailable, Message: errEngineDead.Error()}
	}
	if e := forcedError(c.GetHeader(ErrorHeader)); e != nil {
		return e
	}
	if status := s.faults.drawHTTPError(); status != 0 {
		return &apiError{Status: status, Message: "injected fault: HTTP " + strconv.Itoa(status)}
	}
	return nil
}

// forcedError parses the X-Fake-Error header ("" = none).
func forcedError(v string) *apiError {
	if v == "" {
		return nil
	}
	status, err := strconv.Atoi(v)
	if err != nil || status < 400 || status > 599 {
		return badRequest("", "%s must be an HTTP status from 400 to 599", ErrorHeader)
	}
	return &apiError{Status: status, Message: "injected fault: HTTP " + strconv.Itoa(status)}
}

func (s *Server) readBody(c *gin.Context) ([]byte, *apiError) {
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, &apiError{Status: http.StatusRequestEntityTooLarge,
				Message: "request body exceeds " + strconv.FormatInt(s.opts.MaxBodyBytes, 10) + " bytes"}
		}
		return nil, badRequest("", "could not read the request body")
	}
	return body, nil
}

// submitError maps a refused submission to its HTTP answer.
func submitError(err error) *apiError {
	switch {
	case errors.Is(err, errEngineDead), errors.Is(err, ErrStopped):
		return &apiError{Status: http.StatusServiceUnavailable, Message: err.Error()}
	case errors.Is(err, engine.ErrTooLong):
		return badRequest("", "request exceeds the model's maximum context length")
	case errors.Is(err, engine.ErrInvalidRequest):
		return badRequest("", "%s", err.Error())
	}
	return &apiError{Status: http.StatusInternalServerError, Message: "engine refused the request"}
}

func (s *Server) newResponder(ep endpoint, g genRequest) responder {
	rep := reply{created: time.Now().Unix(), model: s.replyModel(g.model), g: g, noUsage: s.faults.noUsage()}
	switch ep {
	case endpointCompletions:
		rep.id = "cmpl-" + s.newID()
		return &completionResponder{reply: rep}
	case endpointResponses:
		rep.id = "resp_" + s.newID()
		return &responsesResponder{reply: rep, itemID: "msg_" + s.newID()}
	}
	rep.id = "chatcmpl-" + s.newID()
	return &chatResponder{reply: rep}
}

// stream relays the ticket's progress as SSE frames. A client that goes away
// (or a write that fails) aborts the request in the engine; a dead engine or
// a truncation fault cuts the connection.
func (s *Server) stream(c *gin.Context, r responder, t *ticket) {
	completed := false
	defer func() {
		if !completed {
			s.drv.abort(t)
		}
	}()
	sw := newSSEWriter(c.Writer, s.faults.drawStreamPlan())
	if sw.start() != nil || r.begin(sw) != nil {
		return
	}
	ctx := c.Request.Context()
	st := streamState{r: r, sw: sw}
	for {
		p := t.load()
		if p.failed || (p.finished && p.reason == engine.FinishAbort) {
			cutConnection()
		}
		if st.emit(p) != nil {
			return
		}
		if p.finished {
			completed = true
			_ = r.end(sw, p)
			return
		}
		select {
		case <-t.notify:
		case <-ctx.Done():
			return
		}
	}
}

// streamState tracks what a stream has sent: tokens (EOS included) and
// tokens whose text went out.
type streamState struct {
	r                    responder
	sw                   *sseWriter
	sentTokens, sentText int
	started              bool
	text                 []byte
}

// emit sends what is new in p: the first-token framing once, then one delta
// for every token produced since the last call (with the finish, if any).
func (st *streamState) emit(p progress) error {
	if p.generated <= st.sentTokens && !p.finished {
		return nil
	}
	if !st.started && p.generated > 0 {
		if err := st.r.first(st.sw); err != nil {
			return err
		}
		st.started = true
	}
	vis := visibleTokens(p)
	if vis <= st.sentText && !p.finished {
		// Only EOS is new: it has no text, and vLLM sends it in the finish
		// chunk, not in an empty delta of its own.
		return nil
	}
	st.text = st.r.appendText(st.text[:0], st.sentText, vis)
	if err := st.r.delta(st.sw, string(st.text), p); err != nil {
		return err
	}
	st.sentTokens, st.sentText = p.generated, max(st.sentText, vis)
	return nil
}

// ordinary waits for the request to finish and writes one JSON body.
func (s *Server) ordinary(c *gin.Context, r responder, t *ticket) {
	ctx := c.Request.Context()
	for {
		p := t.load()
		if p.failed || (p.finished && p.reason == engine.FinishAbort) {
			writeError(c.Writer, &apiError{Status: http.StatusInternalServerError, Message: "the engine died before the request finished"})
			return
		}
		if p.finished {
			body, err := json.Marshal(r.body(string(r.appendText(nil, 0, visibleTokens(p))), p))
			if err != nil {
				writeError(c.Writer, asAPIError(err))
				return
			}
			c.Data(http.StatusOK, "application/json", body)
			return
		}
		select {
		case <-t.notify:
		case <-ctx.Done():
			s.drv.abort(t)
			return
		}
	}
}
