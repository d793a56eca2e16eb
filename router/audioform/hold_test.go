package audioform

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errHoldFull = errors.New("test hold full")

// memHold is a Hold in memory, refusing past max bytes; it counts its closes.
type memHold struct {
	buf    bytes.Buffer
	max    int
	closes int
}

func (h *memHold) Write(p []byte) (int, error) {
	if h.buf.Len()+len(p) > h.max {
		return 0, errHoldFull
	}
	return h.buf.Write(p)
}

func (h *memHold) Reader() io.Reader { return bytes.NewReader(h.buf.Bytes()) }

func (h *memHold) Close() error {
	h.closes++
	return nil
}

// holds makes memHolds and remembers them.
type holds struct {
	max  int
	made []*memHold
}

func (hs *holds) newHold() (Hold, error) {
	h := &memHold{max: hs.max}
	hs.made = append(hs.made, h)
	return h, nil
}

func TestOpenHolding(t *testing.T) {
	served := part{name: "model", value: "served"}
	cases := []struct {
		name   string
		body   string
		err    error
		stream bool
		want   []part // as the upstream reads them
	}{
		{"file, model", form(file, model), nil, false, []part{served, file}},
		{"Node's order", form(file, model, lang, stream), nil, true, []part{served, lang, stream, file}},
		{"fields around the file", form(lang, file, model, stream), nil, true, []part{lang, served, stream, file}},
		{"file and no model", form(file, lang), ErrMissingModel, false, nil},
		{"file, two models", form(file, model, model), ErrDuplicateModel, false, nil},
		{"file, model, file", form(file, model, file), ErrDuplicateFile, false, nil},
		{"two files first", form(file, file, model), ErrDuplicateFile, false, nil},
		{"a file-valued model after the file", form(file, part{name: "model", fileName: "m", value: "x"}), ErrBadModel, false, nil},
		{"a field after the file over its bound", form(file, model, part{name: "prompt", value: strings.Repeat("p", 65<<10)}), ErrFieldTooLarge, false, nil},
		{"unclosed after the file", strings.TrimSuffix(form(file, model), "--"+boundary+"--\r\n"), ErrMalformed, false, nil},
		{"a huge header after the file", strings.TrimSuffix(form(file), "--"+boundary+"--\r\n") + "--" + boundary + "\r\nX: " + strings.Repeat("h", 20<<10) + "\r\n\r\nv\r\n--" + boundary + "--\r\n", ErrMalformed, false, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hs := &holds{max: 1 << 20}
			f, err := OpenHolding(strings.NewReader(c.body), ct, DefaultLimits(), hs.newHold)
			require.Len(t, hs.made, 1, "the file before the model is held")
			if c.err != nil {
				require.ErrorIs(t, err, c.err)
				assert.Nil(t, f)
				assert.Equal(t, 1, hs.made[0].closes, "a refusal closes the hold")
				return
			}
			require.NoError(t, err)
			assert.True(t, f.Held())
			assert.Equal(t, "whisper", f.Model())
			assert.Equal(t, c.stream, f.Stream())
			var out bytes.Buffer
			require.NoError(t, f.Encode(&out, "served"))
			assert.Equal(t, 1, hs.made[0].closes, "Encode closes the hold once it is written")
			parts, complete := parse(t, out.Bytes(), f.ContentType())
			require.True(t, complete)
			require.Len(t, parts, len(c.want))
			for i, w := range c.want {
				assert.Equal(t, got{w.name, w.fileName, w.contentType, w.value}, parts[i], "part %d", i)
			}
			require.NoError(t, f.Close())
			require.NoError(t, f.Close())
			assert.Equal(t, 3, hs.made[0].closes, "Close closes the hold again (which takes it)")
		})
	}
}

// TestOpenHoldingModelFirst: a form with its model first is read exactly as Open reads it, nothing
// held, and its upstream form is the same bytes (but for the random boundary).
func TestOpenHoldingModelFirst(t *testing.T) {
	body := form(lang, model, stream, file, part{name: "temperature", value: "0.2"})
	hs := &holds{max: 1 << 20}
	a, err := Open(strings.NewReader(body), ct, DefaultLimits())
	require.NoError(t, err)
	b, err := OpenHolding(strings.NewReader(body), ct, DefaultLimits(), hs.newHold)
	require.NoError(t, err)
	assert.Empty(t, hs.made, "nothing is held")
	assert.False(t, b.Held())
	var wa, wb bytes.Buffer
	require.NoError(t, a.Encode(&wa, "served"))
	require.NoError(t, b.Encode(&wb, "served"))
	assert.Equal(t, wa.String(), strings.ReplaceAll(wb.String(), b.boundary, a.boundary))
	assert.NoError(t, b.Close())
}

// TestHoldRefusals: the hold's own refusal and the body's bound, met while the file is held, come
// back as themselves, and the hold is closed.
func TestHoldRefusals(t *testing.T) {
	big := file
	big.value = strings.Repeat("a", 100<<10)
	t.Run("the hold refuses", func(t *testing.T) {
		hs := &holds{max: 10 << 10}
		_, err := OpenHolding(strings.NewReader(form(big, model)), ct, DefaultLimits(), hs.newHold)
		require.ErrorIs(t, err, errHoldFull)
		assert.Equal(t, 1, hs.made[0].closes)
	})
	t.Run("the body's bound", func(t *testing.T) {
		hs := &holds{max: 1 << 20}
		body := http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(strings.NewReader(form(big, model))), 50<<10)
		_, err := OpenHolding(body, ct, DefaultLimits(), hs.newHold)
		var tooLarge *http.MaxBytesError
		require.ErrorAs(t, err, &tooLarge)
		assert.Equal(t, 1, hs.made[0].closes)
	})
	t.Run("no hold", func(t *testing.T) {
		_, err := OpenHolding(strings.NewReader(form(file, model)), ct, DefaultLimits(), func() (Hold, error) { return nil, errHoldFull })
		require.ErrorIs(t, err, errHoldFull)
	})
}

// TestOpenHoldingConsumes: a held form's body is read to its end (a long epilogue included) before
// OpenHolding returns, so nothing of the upload is left to read after admission; one that breaks its
// bound in the epilogue is refused by OpenHolding.
func TestOpenHoldingConsumes(t *testing.T) {
	epilogue := strings.Repeat("e", 64<<10)
	body := &eofReader{r: strings.NewReader(form(file, model) + epilogue)}
	hs := &holds{max: 1 << 20}
	f, err := OpenHolding(body, ct, DefaultLimits(), hs.newHold)
	require.NoError(t, err)
	assert.True(t, body.eof, "the body was read to its end")
	require.NoError(t, f.Encode(io.Discard, "served"))
	require.NoError(t, f.Close())

	whole := form(file, model)
	bounded := http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(strings.NewReader(whole+epilogue)), int64(len(whole)+1024))
	_, err = OpenHolding(bounded, ct, DefaultLimits(), (&holds{max: 1 << 20}).newHold)
	var tooLarge *http.MaxBytesError
	require.ErrorAs(t, err, &tooLarge, "the epilogue counts against the bound")
}

// failingHold is a memHold whose Reader fails after its first bytes.
type failingHold struct{ memHold }

var errDisk = errors.New("test disk failed")

func (h *failingHold) Reader() io.Reader {
	return io.MultiReader(strings.NewReader("RIFF"), iotestErr{errDisk})
}

type iotestErr struct{ err error }

func (r iotestErr) Read([]byte) (int, error) { return 0, r.err }

// TestHeldReadFailure: a held file that cannot be read back is ErrHeldRead (the router's failure,
// not the caller's), wrapping the Hold's error, and the upstream form is never complete.
func TestHeldReadFailure(t *testing.T) {
	h := &failingHold{memHold{max: 1 << 20}}
	f, err := OpenHolding(strings.NewReader(form(file, model)), ct, DefaultLimits(), func() (Hold, error) { return h, nil })
	require.NoError(t, err)
	var out bytes.Buffer
	err = f.Encode(&out, "served")
	require.ErrorIs(t, err, ErrHeldRead)
	require.ErrorIs(t, err, errDisk)
	_, complete := parse(t, out.Bytes(), f.ContentType())
	assert.False(t, complete)
	require.NoError(t, f.Close())
}
