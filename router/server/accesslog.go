package server

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/anvil-llm/anvil/router/routing"
)

// finish ends the walk, counts the request in the metrics from its record and writes one access-log
// line. None of them carries bodies, prompts, URLs or credentials: the record's fields are IDs, enums
// and numbers, the caller is its label, and the client is the connection's peer address.
//
// It is the handler's one deferred call, so it also sees a panic: the walk records it (internal_error
// after admission, with its attempt and selection), the lease is released once, and the panic goes on
// to recoverPanics, which answers the fixed 500 when nothing was written yet and aborts the
// connection otherwise. The recorded status is the one the caller gets.
func (s *Server) finish(c *gin.Context, at *routing.Attempt) {
	p := recover()
	status := c.Writer.Status()
	// http.ErrAbortHandler is the proxy's own deliberate abort of a cut byte stream, after the relay
	// reported its outcome: not a failure of the router.
	if p != nil && p != http.ErrAbortHandler {
		at.Panicked()
		if !c.Writer.Written() {
			status = errInternal.status
		}
	}
	s.traced(c, at)
	rec, err := at.Finish(s.now(), status)
	s.endSpan(c, rec)
	_, caller := s.callerOf(c, s.genOf(c))
	s.metrics.finished(rec)
	s.metrics.usage.used(rec, caller)
	s.ending.note(c.Request.Context(), rec)
	if err != nil {
		s.log.Warn("decision record refused", "request_id", rec.RequestID, "error", err)
	}
	// Typed attributes: the same line as Info's key-value pairs, without boxing each value. The
	// caller's correlation ID only when one was kept, the token counts only when the member reported
	// them (absent: unknown).
	attrs := [...]slog.Attr{
		slog.String("request_id", rec.RequestID), slog.String("method", c.Request.Method),
		slog.String("path", c.FullPath()), slog.Int("status", rec.Status),
		slog.String("caller", caller), slog.String("client", c.RemoteIP()),
		slog.String("alias", rec.Alias), slog.String("tier", rec.Tier), slog.String("member", rec.Member),
		slog.String("outcome", string(rec.Outcome)), slog.Int("attempts", rec.Attempts),
		slog.Int64("first_byte_ms", rec.FirstByte.Milliseconds()), slog.Int64("duration_ms", rec.Duration.Milliseconds()),
		slog.Int64("prompt_tokens", rec.Usage.Prompt), slog.Int64("completion_tokens", rec.Usage.Completion),
		slog.String("caller_request_id", rec.CallerRequestID)}
	// Appending the correlation ID to a shorter prefix overwrites a dropped attribute in place.
	line := attrs[:len(attrs)-3]
	if rec.Usage.Reported {
		line = attrs[:len(attrs)-1]
	}
	if rec.CallerRequestID != "" {
		line = append(line, attrs[len(attrs)-1])
	}
	s.log.LogAttrs(context.Background(), slog.LevelInfo, "request", line...)
	if p != nil {
		panic(p) // recoverPanics answers it
	}
}
