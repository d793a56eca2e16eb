package bench

import (
	"bufio"
	"errors"
	"io"

	"github.com/anvil-llm/anvil/internal/sse"
)

// Errors of the SSE reader.
var (
	errSSE           = errors.New("malformed SSE")
	errFrameTooLarge = errors.New("SSE frame above the bound")
)

// MaxFrameBytes bounds one SSE frame: its wire bytes (lines, line endings and the blank line), the
// shared reader's one bound. OpenAI frames are a few hundred bytes; a Responses stream's final event
// carries the whole output text, so the bound is generous.
const MaxFrameBytes = 16 << 20

// sseReader reads Server-Sent Events frames from a response body with the shared strict reader
// (internal/sse: LF or CRLF, a bare CR or a field other than data, event, id and retry is
// malformed) and keeps only the frames that carry data. It reuses its buffers, so once they have
// grown to the largest frame, reading a frame allocates nothing.
type sseReader struct {
	r sse.Reader // by value: one allocation per stream, as before
}

func newSSEReader(r *bufio.Reader, limit int) *sseReader {
	return &sseReader{r: *sse.NewReader(r, limit)}
}

// next returns the next frame that carries data: its event name (empty when none) and its data
// lines joined by LF. Both are valid until the next call. It returns io.EOF at a clean end of the
// body (between frames), io.ErrUnexpectedEOF when the body ends inside a frame, errSSE or
// errFrameTooLarge for a bad stream, or the body's read error.
func (s *sseReader) next() (event, data []byte, err error) {
	for {
		ev, err := s.r.Next()
		switch {
		case err == nil:
			if ev.DataLines > 0 {
				return ev.Name, ev.Data, nil
			}
			continue // a frame without data (a keep-alive comment) dispatches nothing
		case errors.Is(err, sse.ErrPartial):
			return nil, nil, io.ErrUnexpectedEOF
		case errors.Is(err, sse.ErrMalformed):
			return nil, nil, errSSE
		case errors.Is(err, sse.ErrTooLarge):
			return nil, nil, errFrameTooLarge
		}
		return nil, nil, err
	}
}
