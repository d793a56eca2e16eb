// Package sse is one strict Server-Sent Events reader, shared by the router's relay and the bench.
// It is pure: standard library only, no clock, no goroutines; its one I/O is the bufio.Reader the
// caller hands it.
//
// The framing it accepts: lines end in LF or CRLF (a bare CR inside a line is refused, never
// reinterpreted as a line break); each non-blank line is a comment (":...") or one of the fields
// data, event, id, retry, and any other field name is malformed (OpenAI-compatible servers never
// send one); a blank line ends the event. One leading space of a value is dropped; data values are
// joined with LF; the last event field names the event.
//
// The one bound: an event's wire bytes (its lines, line endings and the blank line, CRLF counted
// as sent) may not exceed the max the reader was built with, so memory per stream is bounded by
// that and the bufio buffer. The reader reuses its buffers: once they have grown to the largest
// event, reading an event allocates nothing.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Errors of Next. A read error of the underlying reader is returned as it is.
var (
	// ErrMalformed: a line broke the framing rules.
	ErrMalformed = errors.New("sse: malformed event")
	// ErrTooLarge: an event's wire bytes exceeded the reader's bound.
	ErrTooLarge = errors.New("sse: event too large")
	// ErrPartial: the stream ended inside an event (no blank line after it, or a last line without
	// its line ending).
	ErrPartial = errors.New("sse: stream ended inside an event")
)

// Event is one SSE block as read. Its slices alias the reader's buffers and are valid only until the
// next call to Next.
type Event struct {
	Raw       []byte // the wire form to forward: LF line endings, ends with the blank line "\n\n"
	Data      []byte // data field values joined with "\n"
	Name      []byte // value of the last event field, if any
	DataLines int    // how many data fields; 0 for a block of comments, id or retry only
}

// Reader splits an SSE byte stream into events.
type Reader struct {
	br        *bufio.Reader
	max       int
	block     []byte
	data      []byte
	name      []byte
	dataLines int
}

// NewReader reads events from br, each at most max wire bytes.
func NewReader(br *bufio.Reader, max int) *Reader {
	return &Reader{br: br, max: max}
}

// Next returns the next event, including one without data lines (a keep-alive comment, say); blank
// lines with no event before them dispatch nothing. At a clean end of stream between events it
// returns io.EOF; when the stream ends inside an event, ErrPartial; framing problems are
// ErrMalformed or ErrTooLarge.
func (r *Reader) Next() (Event, error) {
	r.block, r.data, r.name, r.dataLines = r.block[:0], r.data[:0], r.name[:0], 0
	for {
		start := len(r.block)
		if err := r.readLine(); err != nil {
			if errors.Is(err, io.EOF) {
				if len(r.block) == 0 {
					return Event{}, io.EOF
				}
				return Event{}, ErrPartial
			}
			return Event{}, err
		}
		end := len(r.block) - 1 // index of the '\n'
		if end > start && r.block[end-1] == '\r' {
			r.block[end-1] = '\n'
			r.block = r.block[:end]
			end--
		}
		line := r.block[start:end]
		if len(line) == 0 {
			if start == 0 { // blank line with no event before it: dispatches nothing, forwards nothing
				r.block = r.block[:0]
				continue
			}
			return Event{Raw: r.block, Data: r.data, Name: r.name, DataLines: r.dataLines}, nil
		}
		if err := r.field(line); err != nil {
			return Event{}, err
		}
	}
}

// Buffered reports whether the read buffer already holds the whole of the next event, so that Next
// will return it (or a framing error) without reading from the stream: past any leading line
// endings, a line end followed by a blank line.
func (r *Reader) Buffered() bool {
	buf, _ := r.br.Peek(r.br.Buffered())
	buf = bytes.TrimLeft(buf, "\r\n")
	return bytes.Contains(buf, []byte("\n\n")) || bytes.Contains(buf, []byte("\n\r\n"))
}

// Trim drops every buffer grown above max bytes, so a pooled reader does not pin one huge event.
func (r *Reader) Trim(max int) {
	if cap(r.block) > max || cap(r.data) > max || cap(r.name) > max {
		r.block, r.data, r.name = nil, nil, nil
	}
}

// readLine appends one line, including its '\n', to r.block. At end of stream a final fragment without
// '\n' is appended and the read error returned.
func (r *Reader) readLine() error {
	for {
		frag, err := r.br.ReadSlice('\n')
		if len(r.block)+len(frag) > r.max {
			return ErrTooLarge
		}
		r.block = append(r.block, frag...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// field applies one non-blank line (without its line ending) to the current event.
func (r *Reader) field(line []byte) error {
	// A bare CR would be a line break in SSE, comments included: refuse, don't guess (a comment
	// forwarded with one would reach the reader's own caller as two lines).
	if bytes.IndexByte(line, '\r') >= 0 {
		return ErrMalformed
	}
	if line[0] == ':' { // comment
		return nil
	}
	name, value, found := bytes.Cut(line, []byte{':'})
	if found && len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch string(name) { // the conversion in a switch does not allocate
	case "data":
		if r.dataLines > 0 {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, value...)
		r.dataLines++
	case "event":
		r.name = append(r.name[:0], value...)
	case "id", "retry":
	default:
		return ErrMalformed
	}
	return nil
}
