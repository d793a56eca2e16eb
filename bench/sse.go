package bench

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Errors of the SSE reader.
var (
	errSSE           = errors.New("malformed SSE")
	errFrameTooLarge = errors.New("SSE frame above the bound")
)

// MaxFrameBytes bounds one SSE frame's data. OpenAI frames are a few hundred bytes; a Responses
// stream's final event carries the whole output text, so the bound is generous.
const MaxFrameBytes = 16 << 20

// sseReader reads Server-Sent Events frames from a response body: "field: value" lines ended by LF
// or CRLF, a frame ended by a blank line. It is strict where OpenAI-compatible servers never
// deviate: a bare CR, or a field other than data, event, id and retry, is malformed. It reuses its
// buffers, so once they have grown to the largest frame, reading a frame allocates nothing.
type sseReader struct {
	r       *bufio.Reader
	event   []byte
	data    []byte
	spill   []byte // a line longer than the bufio buffer
	hasData bool
	inFrame bool // a field line has been read since the last frame ended
	limit   int
}

func newSSEReader(r *bufio.Reader, limit int) *sseReader {
	return &sseReader{r: r, limit: limit}
}

// next returns the next frame that carries data: its event name (empty when none) and its data
// lines joined by LF. Both are valid until the next call. It returns io.EOF at a clean end of the
// body (between frames), io.ErrUnexpectedEOF when the body ends inside a frame, errSSE or
// errFrameTooLarge for a bad stream, or the body's read error.
func (s *sseReader) next() (event, data []byte, err error) {
	s.event, s.data, s.hasData, s.inFrame = s.event[:0], s.data[:0], false, false
	for {
		line, err := s.readLine()
		if err != nil {
			if err == io.EOF && s.inFrame {
				return nil, nil, io.ErrUnexpectedEOF
			}
			return nil, nil, err
		}
		if len(line) == 0 {
			if s.hasData {
				return s.event, s.data, nil
			}
			s.event, s.inFrame = s.event[:0], false // a frame without data dispatches nothing
			continue
		}
		s.inFrame = true
		if err := s.field(line); err != nil {
			return nil, nil, err
		}
	}
}

// field applies one non-empty line.
func (s *sseReader) field(line []byte) error {
	if line[0] == ':' {
		return nil // a comment: a keep-alive ping
	}
	name, value, found := bytes.Cut(line, []byte{':'})
	if found && len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch string(name) { // the conversion in a switch does not allocate
	case "data":
		if s.hasData {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		s.hasData = true
		if len(s.data) > s.limit {
			return errFrameTooLarge
		}
	case "event":
		s.event = append(s.event[:0], value...)
	case "id", "retry":
	default:
		return errSSE
	}
	return nil
}

// readLine returns the next line without its LF or CRLF. io.EOF means the body ended exactly
// at a line boundary; a partial last line is io.ErrUnexpectedEOF.
func (s *sseReader) readLine() ([]byte, error) {
	line, err := s.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		s.spill = append(s.spill[:0], line...)
		for err == bufio.ErrBufferFull {
			if len(s.spill) > s.limit {
				return nil, errFrameTooLarge
			}
			line, err = s.r.ReadSlice('\n')
			s.spill = append(s.spill, line...)
		}
		line = s.spill
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if bytes.IndexByte(line, '\r') >= 0 {
		return nil, errSSE
	}
	return line, nil
}
