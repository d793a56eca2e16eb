package sse

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
	er := NewReader(bufio.NewReaderSize(r, bufSize), max)
	var out []parsed
	for {
		ev, err := er.Next()
		if err != nil {
			return out, err
		}
		out = append(out, parsed{string(ev.Raw), string(ev.Data), string(ev.Name), ev.DataLines})
	}
}

func TestReader(t *testing.T) {
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
		{"partial line at eof", "data: 1\n\ndata: 2", []parsed{{"data: 1\n\n", "1", "", 1}}, ErrPartial},
		{"unterminated event at eof", "data: 2\n", nil, ErrPartial},
		{"unknown field", "foo: 1\n\n", nil, ErrMalformed},
		{"field name case matters", "Data: 1\n\n", nil, ErrMalformed},
		{"bare cr inside line", "data: 1\rdata: 2\n\n", nil, ErrMalformed},
		{"lone cr line", "\r\r\n\n", nil, ErrMalformed},
		{"too large", "data: " + strings.Repeat("9", 64) + "\n\n", nil, ErrTooLarge},
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

func TestReaderPassesReadErrors(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("data: 1\n\ndata: 2\n"), iotest.ErrReader(boom))
	got, err := parseAll(r, 16, 64)
	assert.Len(t, got, 1)
	assert.ErrorIs(t, err, boom)
}

// Buffered says whether Next can return without reading: a whole event (or a framing error) waits in
// the buffer past any leading line endings.
func TestBuffered(t *testing.T) {
	for _, tc := range []struct {
		buffered string
		want     bool
	}{
		{"", false}, {"data: 1\n", false}, {"data: 1\n\n", true}, {"data: 1\r\n\r\n", true},
		{"\n\n\ndata: 1\n", false}, {"\r\n\r\ndata: 1\n\n", true},
	} {
		br := bufio.NewReader(strings.NewReader(tc.buffered))
		_, _ = br.Peek(len(tc.buffered)) // fill the buffer
		assert.Equal(t, tc.want, NewReader(br, 1<<10).Buffered(), "%q", tc.buffered)
	}
}

// Trim drops only buffers grown above its bound; a trimmed reader still reads.
func TestTrim(t *testing.T) {
	in := "data: " + strings.Repeat("x", 200) + "\n\ndata: 1\n\n"
	r := NewReader(bufio.NewReaderSize(strings.NewReader(in), 16), 1<<10)
	_, err := r.Next()
	require.NoError(t, err)
	r.Trim(1 << 10)
	assert.NotNil(t, r.block)
	r.Trim(64)
	assert.Nil(t, r.block)
	ev, err := r.Next()
	require.NoError(t, err)
	assert.Equal(t, "1", string(ev.Data))
}

// FuzzReader feeds arbitrary upstream bytes to the parser. Whatever it accepts must be well-formed
// on the wire (LF only, blank-line terminated, within the bound) and must reparse to itself, so a relay
// never forwards something it would itself refuse.
func FuzzReader(f *testing.F) {
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
		er := NewReader(bufio.NewReaderSize(bytes.NewReader(in), 16), max)
		var events []parsed
		for {
			ev, err := er.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, ErrPartial) && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			if len(ev.Raw) > max || !bytes.HasSuffix(ev.Raw, []byte("\n\n")) || bytes.IndexByte(ev.Raw, '\r') >= 0 {
				t.Fatalf("ill-formed forwarded event %q", ev.Raw)
			}
			events = append(events, parsed{string(ev.Raw), string(ev.Data), string(ev.Name), ev.DataLines})
			forwarded.Write(ev.Raw)
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
