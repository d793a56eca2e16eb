package audioform

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const boundary = "XyZ"

// part is one part of a test form, written by hand so that tests control every byte.
type part struct {
	name, fileName, contentType, value string
	extra                              string // extra raw header lines, each ending in \r\n
}

func form(parts ...part) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString("--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + p.name + "\"")
		if p.fileName != "" {
			b.WriteString("; filename=\"" + p.fileName + "\"")
		}
		b.WriteString("\r\n")
		if p.contentType != "" {
			b.WriteString("Content-Type: " + p.contentType + "\r\n")
		}
		b.WriteString(p.extra + "\r\n" + p.value + "\r\n")
	}
	return b.String() + "--" + boundary + "--\r\n"
}

var (
	model  = part{name: "model", value: "whisper"}
	file   = part{name: "file", fileName: "clip.wav", contentType: "audio/wav", value: "RIFF....WAVEdata"}
	stream = part{name: "stream", value: "true"}
	lang   = part{name: "language", value: "en"}
)

const ct = "multipart/form-data; boundary=" + boundary

// got is a parsed part, as the upstream reads it.
type got struct{ name, fileName, contentType, value string }

// parse reads a form as an upstream would; complete says it reached the closing boundary.
func parse(t *testing.T, body []byte, contentType string) (parts []got, complete bool) {
	t.Helper()
	_, params, err := mime.ParseMediaType(contentType)
	require.NoError(t, err)
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return parts, true
		}
		if err != nil {
			return parts, false
		}
		v, err := io.ReadAll(p)
		if err != nil {
			return parts, false
		}
		ctype := ""
		if p.FileName() != "" {
			ctype = p.Header.Get("Content-Type")
		}
		parts = append(parts, got{p.FormName(), p.FileName(), ctype, string(v)})
	}
}

func TestOpenAndEncode(t *testing.T) {
	cases := []struct {
		name   string
		body   string
		model  string
		stream bool
		want   []got
	}{
		{"model then file", form(model, file), "whisper", false,
			[]got{{"model", "", "", "served"}, {"file", "clip.wav", "audio/wav", file.value}}},
		{"fields around the file", form(lang, model, stream, file, part{name: "temperature", value: "0.2"}), "whisper", true,
			[]got{{"language", "", "", "en"}, {"model", "", "", "served"}, {"stream", "", "", "true"},
				{"file", "clip.wav", "audio/wav", file.value}, {"temperature", "", "", "0.2"}}},
		{"no file part: forwarded for the upstream to refuse", form(model, lang), "whisper", false,
			[]got{{"model", "", "", "served"}, {"language", "", "", "en"}}},
		{"stream false", form(model, part{name: "stream", value: "False"}, file), "whisper", false, nil},
		{"canonical headers: odd content type becomes octet-stream", form(model,
			part{name: "file", fileName: "x.bin", contentType: "not a type", value: "abc",
				extra: "X-Caller: 1\r\n"}), "whisper", false,
			[]got{{"model", "", "", "served"}, {"file", "x.bin", "application/octet-stream", "abc"}}},
		{"a path in the filename is cut to its base", form(model, part{name: "file", fileName: "../../etc/clip.wav", value: "a"}),
			"whisper", false, []got{{"model", "", "", "served"}, {"file", "clip.wav", "application/octet-stream", "a"}}},
		{"quoted-printable is decoded on the way", form(model, part{name: "prompt", value: "caf=C3=A9",
			extra: "Content-Transfer-Encoding: quoted-printable\r\n"}, file), "whisper", false,
			[]got{{"model", "", "", "served"}, {"prompt", "", "", "café"}, {"file", "clip.wav", "audio/wav", file.value}}},
		{"preamble and epilogue are dropped", "preamble\r\n" + form(model, file) + "epilogue", "whisper", false,
			[]got{{"model", "", "", "served"}, {"file", "clip.wav", "audio/wav", file.value}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Open(strings.NewReader(c.body), ct, DefaultLimits())
			require.NoError(t, err)
			assert.Equal(t, c.model, f.Model())
			assert.Equal(t, c.stream, f.Stream())
			var out bytes.Buffer
			require.NoError(t, f.Encode(&out, "served"))
			parts, complete := parse(t, out.Bytes(), f.ContentType())
			assert.True(t, complete)
			if c.want != nil {
				assert.Equal(t, c.want, parts)
			}
			assert.NotContains(t, out.String(), boundary, "a new boundary")
			assert.NotContains(t, out.String(), "X-Caller")
		})
	}
}

// TestRefusals: every refusal in the head comes from Open, before anything could be sent; every
// refusal after it comes from Encode and leaves the output without its closing boundary.
func TestRefusals(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxParts, lim.MaxFieldBytes, lim.MaxHeadBytes, lim.MaxHeaderBytes = 4, 16, 24, 512
	unclosed := strings.TrimSuffix(form(model, file), "--"+boundary+"--\r\n")
	cases := []struct {
		name   string
		ct     string
		body   string
		open   error // refused by Open
		encode error // refused by Encode
	}{
		{"not multipart", "application/json", `{"model":"m"}`, ErrNotMultipart, nil},
		{"no boundary", "multipart/form-data", form(model, file), ErrNotMultipart, nil},
		{"mixed, not form-data", "multipart/mixed; boundary=" + boundary, form(model, file), ErrNotMultipart, nil},
		{"empty body", ct, "", ErrMalformed, nil},
		{"garbage", ct, "hello", ErrMalformed, nil},
		{"no model", ct, form(lang, file), ErrModelAfterFile, nil},
		{"no model and no file", ct, form(lang), ErrMissingModel, nil},
		{"model after the file", ct, form(file, model), ErrModelAfterFile, nil},
		{"two models before the file", ct, form(model, model, file), ErrDuplicateModel, nil},
		{"empty model", ct, form(part{name: "model"}, file), ErrBadModel, nil},
		{"model as a file", ct, form(part{name: "model", fileName: "m.txt", value: "whisper"}, file), ErrBadModel, nil},
		{"model not utf-8", ct, form(part{name: "model", value: "\xff"}, file), ErrBadModel, nil},
		{"field too long", ct, form(model, part{name: "prompt", value: strings.Repeat("p", 17)}, file), ErrFieldTooLarge, nil},
		{"head too long", ct, form(model, part{name: "a", value: strings.Repeat("p", 16)}, part{name: "b", value: "pp"}, file), ErrFieldTooLarge, nil},
		{"too many parts in the head", ct, form(model, lang, lang, lang, lang), ErrTooManyParts, nil},
		{"header too long", ct, form(model, part{name: "a", value: "v", extra: "X-Pad: " + strings.Repeat("x", 8000) + "\r\n"}, file), ErrMalformed, nil},
		{"part without a name", ct, form(model, part{name: "", value: "v"}, file), ErrMalformed, nil},
		{"not form-data", ct, "--" + boundary + "\r\nContent-Disposition: attachment; name=\"model\"\r\n\r\nm\r\n--" + boundary + "--\r\n", ErrMalformed, nil},
		{"quote in a filename", ct, form(model, part{name: "file", fileName: `a\"b`, value: "x"}), ErrBadPartName, nil},
		{"control character in a name", ct, "--" + boundary + "\r\nContent-Disposition: form-data; name*=UTF-8''mo%0Adel\r\n\r\nm\r\n--" + boundary + "--\r\n", ErrBadPartName, nil},
		{"base64 transfer encoding", ct, form(model, part{name: "prompt", value: "aGk=", extra: "Content-Transfer-Encoding: base64\r\n"}, file), ErrMalformed, nil},
		{"truncated head", ct, form(model, file)[:20], ErrMalformed, nil},

		{"model again after the file", ct, form(model, file, model), nil, ErrDuplicateModel},
		{"a second file", ct, form(model, file, file), nil, ErrDuplicateFile},
		{"too many parts after the file", ct, form(model, file, lang, lang, lang), nil, ErrTooManyParts},
		{"truncated file", ct, unclosed[:len(unclosed)-6], nil, ErrMalformed},
		{"no closing boundary", ct, unclosed, nil, ErrMalformed},
		{"garbage after the file", ct, unclosed + "junk\r\n", nil, ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Open(strings.NewReader(c.body), c.ct, lim)
			if c.open != nil {
				require.ErrorIs(t, err, c.open)
				assert.Nil(t, f)
				return
			}
			require.NoError(t, err)
			var out bytes.Buffer
			require.ErrorIs(t, f.Encode(&out, "served"), c.encode)
			_, complete := parse(t, out.Bytes(), f.ContentType())
			assert.False(t, complete, "a refused form never reaches its closing boundary")
		})
	}
}

// TestBodyErrorsAreTheirOwn: a failure of the body itself (its size bound, say) surfaces unchanged,
// in the head and in the file, so the caller can answer 413 rather than a malformed form.
func TestBodyErrorsAreTheirOwn(t *testing.T) {
	body := form(model, part{name: "file", fileName: "big.wav", value: strings.Repeat("a", 4096)})
	for _, limit := range []int64{40, 300} { // inside the head, inside the file
		rec := newRecorder()
		r := http.MaxBytesReader(rec, io.NopCloser(strings.NewReader(body)), limit)
		f, err := Open(r, ct, DefaultLimits())
		if err == nil {
			err = f.Encode(io.Discard, "served")
		}
		var tooBig *http.MaxBytesError
		assert.ErrorAs(t, err, &tooBig, "limit %d", limit)
	}
}

// newRecorder is the ResponseWriter http.MaxBytesReader wants; these tests write nothing to it.
func newRecorder() http.ResponseWriter { return &discardWriter{h: http.Header{}} }

type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

// TestWriteErrorsAreReturned: when the upstream side stops reading, Encode returns the writer's error.
func TestWriteErrorsAreReturned(t *testing.T) {
	f, err := Open(strings.NewReader(form(model, file)), ct, DefaultLimits())
	require.NoError(t, err)
	pr, pw := io.Pipe()
	_ = pr.CloseWithError(io.ErrClosedPipe)
	assert.ErrorIs(t, f.Encode(pw, "served"), io.ErrClosedPipe)
}

// eofReader records whether its reader has answered io.EOF.
type eofReader struct {
	r   io.Reader
	eof bool
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		e.eof = true
	}
	return n, err
}

// closingWatch fails the test when the closing boundary is written before the body reached its end.
type closingWatch struct {
	t       *testing.T
	body    *eofReader
	written bytes.Buffer
}

func (w *closingWatch) Write(p []byte) (int, error) {
	w.written.Write(p)
	if bytes.HasSuffix(bytes.TrimRight(w.written.Bytes(), "\r\n"), []byte("--")) {
		assert.True(w.t, w.body.eof, "the closing boundary waits for the body's end")
	}
	return len(p), nil
}

// TestEncodeConsumesTheBodyFirst: Encode reads the body to its end (an epilogue included) before it
// writes the closing boundary, so whoever holds the complete form knows the upload is over.
func TestEncodeConsumesTheBodyFirst(t *testing.T) {
	for _, body := range []string{form(model, file), form(model, file) + "epilogue\r\n" + strings.Repeat("e", 64<<10), form(model)} {
		src := &eofReader{r: strings.NewReader(body)}
		f, err := Open(src, ct, DefaultLimits())
		require.NoError(t, err)
		w := &closingWatch{t: t, body: src}
		require.NoError(t, f.Encode(w, "served"))
		assert.True(t, src.eof)
		_, complete := parse(t, w.written.Bytes(), f.ContentType())
		assert.True(t, complete)
	}
}
