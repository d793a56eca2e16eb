package relay

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type parsed struct {
	raw, data, name string
	lines           int
}

// parseAll reads every event from in, returning the events and the terminating error.
func parseAll(r io.Reader, bufSize, max int) ([]parsed, error) {
	er := newEventReader(bufio.NewReaderSize(r, bufSize), max)
	var out []parsed
	for {
		ev, err := er.next()
		if err != nil {
			return out, err
		}
		out = append(out, parsed{string(ev.raw), string(ev.data), string(ev.name), ev.dataLines})
	}
}

func TestEventReader(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []parsed
		wantErr error
	}{
		{"empty", "", nil, io.EOF},
		{"one event", "data: {}\n\n", []parsed{{"data: {}\n\n", "{}", "", 1}}, io.EOF},
		{"crlf normalized", "data: {}\r\n\r\n", []parsed{{"data: {}\n\n", "{}", "", 1}}, io.EOF},
		{"no space after colon", "data:{}\n\n", []parsed{{"data:{}\n\n", "{}", "", 1}}, io.EOF},
		{"only one leading space stripped", "data:  1\n\n", []parsed{{"data:  1\n\n", " 1", "", 1}}, io.EOF},
		{"multi-line data joined", "data: [1,\ndata: 2]\n\n", []parsed{{"data: [1,\ndata: 2]\n\n", "[1,\n2]", "", 2}}, io.EOF},
		{"event name last wins", "event: a\nevent: b\ndata: 1\n\n", []parsed{{"event: a\nevent: b\ndata: 1\n\n", "1", "b", 1}}, io.EOF},
		{"comment block", ": ping\n\n", []parsed{{": ping\n\n", "", "", 0}}, io.EOF},
		{"stray blank lines skipped", "\n\r\n\ndata: 1\n\n\n", []parsed{{"data: 1\n\n", "1", "", 1}}, io.EOF},
		{"bare field name", "data\n\n", []parsed{{"data\n\n", "", "", 1}}, io.EOF},
		{"partial line at eof", "data: 1\n\ndata: 2", []parsed{{"data: 1\n\n", "1", "", 1}}, errPartialEvent},
		{"unterminated event at eof", "data: 2\n", nil, errPartialEvent},
		{"unknown field", "foo: 1\n\n", nil, ErrMalformedEvent},
		{"field name case matters", "Data: 1\n\n", nil, ErrMalformedEvent},
		{"bare cr inside line", "data: 1\rdata: 2\n\n", nil, ErrMalformedEvent},
		{"lone cr line", "\r\r\n\n", nil, ErrMalformedEvent},
		{"too large", "data: " + strings.Repeat("9", 64) + "\n\n", nil, ErrEventTooLarge},
		{"exactly max", "data: " + strings.Repeat("9", 64-8) + "\n\n", []parsed{{"data: " + strings.Repeat("9", 56) + "\n\n", strings.Repeat("9", 56), "", 1}}, io.EOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Every split of the input must parse the same: whole, and one byte per read with the
			// smallest bufio buffer so long lines cross ErrBufferFull.
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				got, err := parseAll(r, 16, 64)
				assert.Equal(t, tc.want, got)
				assert.ErrorIs(t, err, tc.wantErr)
			}
		})
	}
}

func TestEventReaderPassesReadErrors(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("data: 1\n\ndata: 2\n"), iotest.ErrReader(boom))
	got, err := parseAll(r, 16, 64)
	assert.Len(t, got, 1)
	assert.ErrorIs(t, err, boom)
}

func TestInspect(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    eventInfo
		wantErr error
	}{
		{"no data", ": c\n\n", eventInfo{}, nil},
		{"done", "data: [DONE]\n\n", eventInfo{done: true}, nil},
		{"done split over lines is not done", "data: [DONE]\ndata: [DONE]\n\n", eventInfo{}, ErrMalformedEvent},
		{"done with space is json? no", "data: [DONE] \n\n", eventInfo{}, ErrMalformedEvent},
		{"chunk", "data: " + chunk(1) + "\n\n", eventInfo{}, nil},
		{"json scalar", "data: 3\n\n", eventInfo{}, nil},
		{"empty data", "data:\n\n", eventInfo{}, ErrMalformedEvent},
		{"truncated json", "data: {\"a\":\n\n", eventInfo{}, ErrMalformedEvent},
		{"error object", "data: " + errorEventVLLM + "\n\n", eventInfo{failed: true}, nil},
		{"error null", "data: {\"error\":null}\n\n", eventInfo{}, nil},
		{"content that says error", "data: {\"choices\":[{\"delta\":{\"content\":\"error\"}}]}\n\n", eventInfo{}, nil},
		{"nested error key is not top level", "data: {\"x\":{\"error\":1}}\n\n", eventInfo{}, nil},
		{"tool call type", "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"type\":\"function\"}]}}]}\n\n", eventInfo{}, nil},
		{"sse error event name", "event: error\ndata: {\"message\":\"x\"}\n\n", eventInfo{failed: true}, nil},
		{"responses error type", "data: {\"type\":\"error\",\"message\":\"x\"}\n\n", eventInfo{failed: true}, nil},
		{"responses completed", "data: " + respCompleted + "\n\n", eventInfo{terminal: true}, nil},
		{"responses incomplete", "data: {\"type\":\"response.incomplete\"}\n\n", eventInfo{terminal: true}, nil},
		{"responses failed", "data: " + respFailed + "\n\n", eventInfo{terminal: true, failed: true}, nil},
		{"transcript done", "data: {\"type\":\"transcript.text.done\",\"text\":\"hi\"}\n\n", eventInfo{terminal: true}, nil},
		{"speech done", "data: {\"type\":\"speech.audio.done\",\"usage\":{}}\n\n", eventInfo{terminal: true}, nil},
		{"speech delta is not terminal", "data: {\"type\":\"speech.audio.delta\",\"audio\":\"AAA=\"}\n\n", eventInfo{}, nil},
		{"type of wrong json type", "data: {\"type\":5,\"error\":{}}\n\n", eventInfo{failed: true}, nil},
		{"array with error string", "data: [\"error\"]\n\n", eventInfo{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			er := newEventReader(bufio.NewReader(strings.NewReader(tc.in)), 1<<10)
			ev, err := er.next()
			require.NoError(t, err)
			got, err := inspect(ev)
			assert.ErrorIs(t, err, tc.wantErr)
			if tc.wantErr == nil {
				assert.Equal(t, tc.want, got)
			}
		})
	}
}

// FuzzEventReader feeds arbitrary upstream bytes to the parser. Whatever it accepts must be well-formed
// on the wire (LF only, blank-line terminated, within the bound) and must reparse to itself, so the client
// never receives something the relay itself would refuse.
func FuzzEventReader(f *testing.F) {
	for _, s := range []string{
		"", "data: {}\n\n", "data: [DONE]\n\n", "data: {}\r\n\r\n", "event: response.completed\ndata: {\"type\":\"response.completed\"}\n\n",
		": ping\n\n", "data: [1,\ndata: 2]\n\n", "data: {\"error\":{\"message\":\"x\"}}\n\n", "garbage\n\n", "data: 1\rdata: 2\n\n",
		"data: 1", "\n\n\n", "id: 1\nretry: x\n\n", "data: " + strings.Repeat("x", 200) + "\n\n",
	} {
		f.Add([]byte(s))
	}
	const max = 128
	f.Fuzz(func(t *testing.T, in []byte) {
		var forwarded bytes.Buffer
		er := newEventReader(bufio.NewReaderSize(bytes.NewReader(in), 16), max)
		var events []parsed
		for {
			ev, err := er.next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, errPartialEvent) && !errors.Is(err, ErrMalformedEvent) && !errors.Is(err, ErrEventTooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			if len(ev.raw) > max || !bytes.HasSuffix(ev.raw, []byte("\n\n")) || bytes.IndexByte(ev.raw, '\r') >= 0 {
				t.Fatalf("ill-formed forwarded event %q", ev.raw)
			}
			if _, err := inspect(ev); err != nil && !errors.Is(err, ErrMalformedEvent) {
				t.Fatalf("inspect: unexpected error %v", err)
			}
			events = append(events, parsed{string(ev.raw), string(ev.data), string(ev.name), ev.dataLines})
			forwarded.Write(ev.raw)
		}
		again, err := parseAll(&forwarded, 16, max)
		if !errors.Is(err, io.EOF) {
			t.Fatalf("reparse of forwarded bytes failed: %v", err)
		}
		if len(again) != len(events) {
			t.Fatalf("reparse: %d events, want %d", len(again), len(events))
		}
		for i := range events {
			if again[i] != events[i] {
				t.Fatalf("reparse event %d: %+v, want %+v", i, again[i], events[i])
			}
		}
	})
}
