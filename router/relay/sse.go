package relay

import (
	"bufio"
	"bytes"
	"errors"

	"github.com/anvil-llm/anvil/internal/jsonscan"
	"github.com/anvil-llm/anvil/internal/sse"
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

// eventReader is the relay's face of the shared SSE reader (internal/sse, whose doc states the framing
// rules of the package doc): it keeps the bufio.Reader the relay also reads ordinary bodies through, and
// answers with the relay's own error values. It holds at most max bytes of one event at a time.
type eventReader struct {
	br *bufio.Reader
	sr *sse.Reader
	// scan looks for the upstream key in what the attempt relays; pooled with the reader, so that its
	// tables are built once per key, not once per attempt.
	scan keyScan
}

func newEventReader(br *bufio.Reader, max int) *eventReader {
	return &eventReader{br: br, sr: sse.NewReader(br, max)}
}

// next returns the next event. At a clean end of stream between events it returns io.EOF; when the stream
// ends inside an event it returns errPartialEvent; framing problems are ErrMalformedEvent or
// ErrEventTooLarge; read errors from the underlying reader are returned as they are.
func (er *eventReader) next() (event, error) {
	ev, err := er.sr.Next()
	switch {
	case err == nil:
		return event{raw: ev.Raw, data: ev.Data, name: ev.Name, dataLines: ev.DataLines}, nil
	case errors.Is(err, sse.ErrPartial):
		return event{}, errPartialEvent
	case errors.Is(err, sse.ErrMalformed):
		return event{}, ErrMalformedEvent
	case errors.Is(err, sse.ErrTooLarge):
		return event{}, ErrEventTooLarge
	}
	return event{}, err
}

// eventBuffered reports whether the read buffer already holds the whole of the next event, so that
// next will return it (or a framing error) without reading from the upstream.
func (er *eventReader) eventBuffered() bool { return er.sr.Buffered() }

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
	if !jsonscan.Valid(ev.data) {
		return info, ErrMalformedEvent
	}
	// Only walk when a top-level "error" or "type" key can be present; most chat chunks have neither
	// and need only validating.
	if !bytes.Contains(ev.data, []byte(`"error"`)) && !bytes.Contains(ev.data, []byte(`"type"`)) {
		return info, nil
	}
	var probe eventProbe
	probe.read(ev.data)
	if probe.errored {
		info.failed = true
	}
	switch probe.kind {
	case kindError:
		info.failed = true
	case kindFailed:
		info.failed, info.terminal = true, true
	case kindTerminal:
		info.terminal = true
	}
	return info, nil
}
