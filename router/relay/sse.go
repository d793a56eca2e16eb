package relay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// errPartialEvent reports that the stream ended in the middle of an event (no blank-line terminator).
var errPartialEvent = errors.New("relay: stream ended inside an sse event")

// event is one SSE block as read from the upstream. All slices alias the reader's buffers and are valid
// only until the next call to next.
type event struct {
	raw       []byte // the wire form to forward: LF line endings, ends with the blank line "\n\n"
	data      []byte // data field values joined with "\n"
	name      []byte // value of the last event field, if any
	dataLines int
}

// eventReader splits an SSE byte stream into events, enforcing the framing rules in the package doc.
// It holds at most max bytes of one event at a time.
type eventReader struct {
	br        *bufio.Reader
	max       int
	block     []byte
	data      []byte
	name      []byte
	dataLines int
}

func newEventReader(br *bufio.Reader, max int) *eventReader {
	return &eventReader{br: br, max: max}
}

// next returns the next event. At a clean end of stream between events it returns io.EOF; when the stream
// ends inside an event it returns errPartialEvent; framing problems are ErrMalformedEvent or
// ErrEventTooLarge; read errors from the underlying reader are returned as they are.
func (er *eventReader) next() (event, error) {
	er.block, er.data, er.name, er.dataLines = er.block[:0], er.data[:0], er.name[:0], 0
	for {
		start := len(er.block)
		if err := er.readLine(); err != nil {
			if errors.Is(err, io.EOF) {
				if len(er.block) == 0 {
					return event{}, io.EOF
				}
				return event{}, errPartialEvent
			}
			return event{}, err
		}
		end := len(er.block) - 1 // index of the '\n'
		if end > start && er.block[end-1] == '\r' {
			er.block[end-1] = '\n'
			er.block = er.block[:end]
			end--
		}
		line := er.block[start:end]
		if len(line) == 0 {
			if start == 0 { // blank line with no event before it: dispatches nothing, forwards nothing
				er.block = er.block[:0]
				continue
			}
			return event{raw: er.block, data: er.data, name: er.name, dataLines: er.dataLines}, nil
		}
		if err := er.field(line); err != nil {
			return event{}, err
		}
	}
}

// eventBuffered reports whether the read buffer already holds the whole of the next event, so that
// next will return it (or a framing error) without reading from the upstream: past any leading line
// endings, a line end followed by a blank line.
func (er *eventReader) eventBuffered() bool {
	buf, _ := er.br.Peek(er.br.Buffered())
	buf = bytes.TrimLeft(buf, "\r\n")
	return bytes.Contains(buf, []byte("\n\n")) || bytes.Contains(buf, []byte("\n\r\n"))
}

// readLine appends one line, including its '\n', to er.block. At end of stream a final fragment without
// '\n' is appended and the read error returned.
func (er *eventReader) readLine() error {
	for {
		frag, err := er.br.ReadSlice('\n')
		if len(er.block)+len(frag) > er.max {
			return ErrEventTooLarge
		}
		er.block = append(er.block, frag...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// field applies one non-blank line (without its line ending) to the current event.
func (er *eventReader) field(line []byte) error {
	// A bare CR would be a line break in SSE, comments included: refuse, don't guess (a comment
	// forwarded with one would reach the caller as two lines).
	if bytes.IndexByte(line, '\r') >= 0 {
		return ErrMalformedEvent
	}
	if line[0] == ':' { // comment
		return nil
	}
	name, value, found := bytes.Cut(line, []byte{':'})
	if found && len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch string(name) {
	case "data":
		if er.dataLines > 0 {
			er.data = append(er.data, '\n')
		}
		er.data = append(er.data, value...)
		er.dataLines++
	case "event":
		er.name = append(er.name[:0], value...)
	case "id", "retry":
	default:
		return ErrMalformedEvent
	}
	return nil
}

// eventInfo is what the relay needs to know about a well-formed event.
type eventInfo struct {
	done     bool // data: [DONE], the end of a chat/completions stream
	terminal bool // a Responses or audio terminal event: the stream is complete once the upstream closes
	failed   bool // the upstream reported an error in-band
}

// inspect validates an event's data and classifies it. Events without data lines pass unexamined.
func inspect(ev event) (eventInfo, error) {
	var info eventInfo
	if ev.dataLines == 0 {
		return info, nil
	}
	if ev.dataLines == 1 && string(ev.data) == "[DONE]" {
		info.done = true
		return info, nil
	}
	info.failed = string(ev.name) == "error"
	// Only decode when a top-level "error" or "type" key can be present; most chat chunks have neither
	// and need only validating.
	if !bytes.Contains(ev.data, []byte(`"error"`)) && !bytes.Contains(ev.data, []byte(`"type"`)) {
		if !json.Valid(ev.data) {
			return info, ErrMalformedEvent
		}
		return info, nil
	}
	var probe struct {
		Error json.RawMessage `json:"error"`
		Type  string          `json:"type"`
	}
	// Unmarshal validates the whole input before decoding: a syntax error is a malformed event,
	// while valid JSON of another shape (a type mismatch) just leaves the probe partly empty.
	var syntax *json.SyntaxError
	if err := json.Unmarshal(ev.data, &probe); errors.As(err, &syntax) {
		return info, ErrMalformedEvent
	}
	if len(probe.Error) > 0 && string(probe.Error) != "null" {
		info.failed = true
	}
	switch probe.Type {
	case "error":
		info.failed = true
	case "response.failed":
		info.failed, info.terminal = true, true
	case "response.completed", "response.incomplete":
		info.terminal = true
	case "transcript.text.done", "speech.audio.done":
		// OpenAI's audio streams end with these events and no [DONE] (vLLM's transcription streams end
		// with [DONE], which is handled above).
		info.terminal = true
	}
	return info, nil
}
