package fakevllm

import (
	"encoding/json"
	"errors"
	"net/http"
)

// sseWriter writes Server-Sent Events frames and flushes each one, as vLLM's
// StreamingResponse does. It also applies a stream's fault plan: one frame
// replaced by invalid JSON, the connection cut right after a frame, and a
// frame replaced by vLLM's error frame and [DONE], which end the stream.
type sseWriter struct {
	w           http.ResponseWriter
	rc          *http.ResponseController
	buf         []byte
	frames      int // frames written so far
	malformedAt int // 1-based frame to corrupt; 0 = none
	truncateAt  int // 1-based frame after which the connection is cut; 0 = none
	errorAt     int // 1-based frame replaced by an error frame and [DONE]; 0 = none
}

// streamPlan is one stream's drawn faults.
type streamPlan struct {
	malformedAt, truncateAt, errorAt int
}

func newSSEWriter(w http.ResponseWriter, plan streamPlan) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w), malformedAt: plan.malformedAt, truncateAt: plan.truncateAt, errorAt: plan.errorAt}
}

// start sends the response headers at once: vLLM's streaming response starts
// before the first token exists, so a client sees 200 early and its first
// data frame only with the first token.
func (s *sseWriter) start() error {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	s.w.WriteHeader(http.StatusOK)
	return s.rc.Flush()
}

// data writes one "data: <json>" frame.
func (s *sseWriter) data(v any) error {
	payload, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.frame("", payload)
}

// event writes one "event: <name>" + "data: <json>" frame (Responses API).
func (s *sseWriter) event(name string, v any) error {
	payload, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.frame(name, payload)
}

// done writes the terminal "data: [DONE]" frame.
func (s *sseWriter) done() error { return s.frame("", []byte("[DONE]")) }

// errInjectedErrorEvent ends a stream after its error-event fault: the
// handler stops, as vLLM's generator does after its final [DONE].
var errInjectedErrorEvent = errors.New("fakevllm: stream ended by an injected error event")

func (s *sseWriter) frame(name string, payload []byte) error {
	s.frames++
	if s.frames == s.errorAt {
		return s.failed()
	}
	if s.frames == s.malformedAt {
		// Half a JSON document is never valid JSON, and keeps the frame
		// looking like the real thing to a byte-level reader.
		payload = payload[:len(payload)/2]
	}
	s.buf = s.buf[:0]
	if name != "" {
		s.buf = append(s.buf, "event: "...)
		s.buf = append(s.buf, name...)
		s.buf = append(s.buf, '\n')
	}
	s.buf = append(s.buf, "data: "...)
	s.buf = append(s.buf, payload...)
	s.buf = append(s.buf, "\n\n"...)
	if _, err := s.w.Write(s.buf); err != nil {
		return err
	}
	if err := s.rc.Flush(); err != nil {
		return err
	}
	if s.frames == s.truncateAt {
		cutConnection()
	}
	return nil
}

// failed writes what vLLM writes when a stream's generator raises
// (vllm/entrypoints/openai/serving_chat.py, chat_completion_stream_generator:
// the except branch yields "data: " + create_streaming_error_response(...),
// then the final "data: [DONE]" runs as it does for every stream) and
// reports errInjectedErrorEvent.
func (s *sseWriter) failed() error {
	e := apiError{Status: http.StatusInternalServerError, Message: "the engine raised while streaming"}
	s.buf = append(append(append(s.buf[:0], "data: "...), e.body()...), "\n\ndata: [DONE]\n\n"...)
	if _, err := s.w.Write(s.buf); err != nil {
		return err
	}
	if err := s.rc.Flush(); err != nil {
		return err
	}
	return errInjectedErrorEvent
}

// cutConnection ends the response without its terminating chunk: net/http
// closes the connection when a handler panics with http.ErrAbortHandler, so
// the client sees an unexpected EOF mid-stream. Everything written so far has
// been flushed.
func cutConnection() {
	panic(http.ErrAbortHandler)
}
