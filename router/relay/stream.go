package relay

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

// stream relays a 2xx text/event-stream response event by event. Headers are committed with the first
// well-formed block, so a stream that fails before it still gets a clean HTTP error. After that,
// a failure ends the stream in-band with one error event (see the package doc). An upstream error event
// that carries the upstream key is replaced by the relay's own fixed error event; any other event that
// carries the whole key ends the stream in its place (withhold).
//
// Every event is flushed before the relay could wait for the upstream: after each one, unless the next
// one is already whole in the read buffer (events that arrived together leave together, in one write).
// It reports whether it stopped at [DONE], with the rest of the upstream body unread.
func (r *Relay) stream(ctx, upCtx context.Context, w http.ResponseWriter, resp *http.Response, er *eventReader, res *Result, key string) (done bool) {
	s := sseRelay{w: w, rc: http.NewResponseController(w), res: res, status: resp.StatusCode, contentType: resp.Header.Get("Content-Type")}
	if er.scan.contains(s.contentType) {
		s.withhold()
		return false
	}
	var leaks *leakCheck // built at the first error event of a keyed upstream
	complete := false
	for {
		ev, err := er.next()
		if err != nil {
			s.end(readFailure(ctx, upCtx, err, complete))
			return false
		}
		info, err := inspect(ev)
		if err != nil {
			s.end(failure{decisionlog.EndMalformed, err})
			return false
		}
		noteUsage(res, ev, info)
		raw, flush := ev.raw, info.done || !er.eventBuffered()
		switch {
		case info.done && s.noted:
			// [DONE] says the stream completed, and it did not: the caller already has its error event.
			// vLLM sends one after its error event (vllm/entrypoints/openai/serving_chat.py at 003fe59,
			// chat_completion_stream_generator: the except branch yields "data: {error}" and then falls
			// through to the final yield "data: [DONE]"), so it is dropped, not relayed: the stream ends
			// with the error event, which is flushed now.
			raw = nil
		case info.failed:
			f := failure{decisionlog.EndErrorEvent, ErrUpstreamErrorEvent}
			s.note(f)
			if leaks == nil && key != "" {
				leaks = newLeakCheck(key)
			}
			if leaks.in(raw) {
				raw = sseErrorEvent(f)
			}
		case er.scan.feed(raw):
			// An event ends in a blank line and no form of a key has a line feed, so a key never spans two
			// events: the whole event is scanned before it is written, and none of it is.
			s.withhold()
			return false
		}
		complete = complete || info.terminal
		if !s.forward(raw, flush) {
			s.end(writeFailed(ctx))
			return false
		}
		if info.done {
			s.end(failure{}) // [DONE]: complete (or the error noted); anything after it is not relayed
			return true
		}
	}
}

// readFailure classifies the end of the upstream byte stream. A clean EOF after a Responses terminal event
// is success (failure{}); any other end before completion is truncation, unless the client left or a
// timer fired.
func readFailure(ctx, upCtx context.Context, err error, complete bool) failure {
	switch {
	case errors.Is(err, io.EOF) && complete:
		return failure{}
	case errors.Is(err, ErrMalformedEvent), errors.Is(err, ErrEventTooLarge):
		return failure{decisionlog.EndMalformed, err}
	}
	if f := classify(ctx, upCtx, err); f.end != decisionlog.EndTransport {
		return f
	}
	return failure{decisionlog.EndCut, ErrTruncated}
}

// sseRelay writes one stream to the client and remembers the first failure seen.
type sseRelay struct {
	w           http.ResponseWriter
	rc          *http.ResponseController
	res         *Result
	status      int
	contentType string
	first       failure // first in-band upstream error; wins over later endings
	noted       bool    // first holds an upstream error
}

// note records an in-band upstream error without ending the stream.
func (s *sseRelay) note(f failure) {
	if !s.noted {
		s.first, s.noted = f, true
	}
}

// forward writes one event (committing headers first if needed) and, when flush is set, flushes
// everything written so far. It reports false when the client can no longer be written to.
func (s *sseRelay) forward(raw []byte, flush bool) bool {
	if !s.res.Wrote {
		h := s.w.Header()
		h.Set("Content-Type", s.contentType)
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no") // tell buffering reverse proxies to pass events through
		s.w.WriteHeader(s.status)
		s.res.Status, s.res.Wrote = s.status, true
	}
	if _, err := s.w.Write(raw); err != nil {
		return false
	}
	return !flush || s.flush()
}

func (s *sseRelay) flush() bool {
	err := s.rc.Flush()
	return err == nil || errors.Is(err, http.ErrNotSupported) // unflushable writers still get every byte
}

// withhold ends the stream in place of what carries the upstream key: before anything was written, with
// a clean 502; after, with the fixed error event. The key echo is the reason the relay ended the stream,
// so it is the outcome's reason too, over any upstream error noted before it.
func (s *sseRelay) withhold() {
	f := failure{decisionlog.EndHTTPError, ErrUpstreamKeyEcho}
	s.first, s.noted = f, true
	s.end(f)
}

// end records the stream's outcome. ending is the reason the relay stopped (zero value: a complete
// stream). Before any write, finish sends a clean HTTP error; after, one SSE error event is sent unless
// the stream completed or the client is gone.
func (s *sseRelay) end(ending failure) {
	f := ending
	if s.noted {
		f = s.first
	}
	if f.end == decisionlog.EndComplete {
		s.res.Outcome, s.res.Status = decisionlog.Terminal(f.end, s.res.Status)
		s.res.Err = nil
		return
	}
	if !s.res.Wrote {
		finish(s.w, s.res, f)
		return
	}
	s.res.Outcome, s.res.Status = decisionlog.Terminal(f.end, s.res.Status)
	s.res.Err = f.err
	if ending.end == decisionlog.EndComplete || ending.end == decisionlog.EndClientCancel {
		return
	}
	if _, err := s.w.Write(sseErrorEvent(ending)); err == nil {
		s.flush()
	}
}

// sseErrorEvent renders the in-band error event for a failure.
func sseErrorEvent(f failure) []byte {
	body := errorJSON(f)
	out := make([]byte, 0, len(body)+8)
	out = append(out, "data: "...)
	out = append(out, body...)
	return append(out, '\n', '\n')
}
