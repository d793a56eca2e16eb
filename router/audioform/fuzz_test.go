package audioform

import (
	"bytes"
	"io"
	"mime/multipart"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzForm: no body makes Open or Encode panic; a form both accept reaches the upstream complete,
// with exactly the parts the router read (names, filenames, values; the model replaced) and its
// model the one Open reported; a form either refuses never reaches its closing boundary.
func FuzzForm(f *testing.F) {
	for _, seed := range []string{
		form(model, file),
		form(lang, model, stream, file, part{name: "temperature", value: "0.2"}),
		form(model, lang),
		form(file, model),
		form(model, model, file),
		form(model, file, model),
		form(model, file, file),
		form(part{name: "model", fileName: "m", value: "x"}, file),
		form(model, part{name: "prompt", value: "caf=C3=A9", extra: "Content-Transfer-Encoding: quoted-printable\r\n"}, file),
		form(model, part{name: "file", fileName: "../a\\b.wav", value: "x"}),
		"--" + boundary + "\r\nContent-Disposition: form-data; name*=UTF-8''model\r\n\r\nm\r\n--" + boundary + "--\r\n",
		"--" + boundary + "\r\nContent-Disposition: form-data; name=\"model\"; name*=UTF-8''file\r\n\r\nm\r\n--" + boundary + "--\r\n",
		strings.TrimSuffix(form(model, file), "--"+boundary+"--\r\n"),
		"preamble\r\n" + form(model, file) + "epilogue",
		"",
	} {
		f.Add([]byte(seed))
	}
	lim := DefaultLimits()
	lim.MaxParts, lim.MaxFieldBytes, lim.MaxHeadBytes, lim.MaxHeaderBytes = 8, 256, 1024, 1024
	f.Fuzz(func(t *testing.T, body []byte) {
		fm, err := Open(bytes.NewReader(body), ct, lim)
		if err != nil {
			assert.Nil(t, fm)
			return
		}
		require.NotEmpty(t, fm.Model())
		var out bytes.Buffer
		encErr := fm.Encode(&out, "served")
		parts, complete := parse(t, out.Bytes(), fm.ContentType())
		if encErr != nil {
			assert.False(t, complete, "a refused form reached its closing boundary: %v", encErr)
			return
		}
		require.True(t, complete, "an accepted form must arrive whole")
		want, ok := reference(body)
		require.True(t, ok, "the router accepted a form the reference parser refuses")
		var models int
		for i := range want {
			if want[i].name == ModelField {
				models++
				assert.Equal(t, fm.Model(), want[i].value)
				want[i].value = "served"
			}
		}
		assert.Equal(t, 1, models)
		require.Len(t, parts, len(want))
		for i := range want {
			assert.Equal(t, want[i].name, parts[i].name)
			assert.Equal(t, want[i].fileName, parts[i].fileName)
			assert.Equal(t, want[i].value, parts[i].value)
		}
	})
}

// reference parses the caller's form independently of Form, as a plain multipart reader does.
func reference(body []byte) ([]got, bool) {
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	var out []got
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return out, true
		}
		if err != nil {
			return nil, false
		}
		v, err := io.ReadAll(p)
		if err != nil {
			return nil, false
		}
		out = append(out, got{name: p.FormName(), fileName: p.FileName(), value: string(v)})
	}
}

// FuzzHeldForm: the reordering parser (OpenHolding) never panics on any body; it holds at most the
// body's own bytes, and its fields at most Limits; a refusal closes the hold; a form it accepts
// reaches the upstream complete with exactly the caller's parts, the model replaced, every field in
// the caller's order and the file after them.
func FuzzHeldForm(f *testing.F) {
	huge := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"x\"\r\nX-Pad: " + strings.Repeat("h", 3000) + "\r\n\r\nv\r\n"
	for _, seed := range []string{
		form(file, model),
		form(file, model, lang, stream),
		form(lang, file, model),
		form(model, file),
		form(file, lang),
		form(file, model, model),
		form(file, model, file),
		form(file, file, model),
		form(file, part{name: "model", fileName: "m", value: "x"}),
		form(file, part{name: "model", value: ""}),
		strings.TrimSuffix(form(file, model), "--"+boundary+"--\r\n"),
		strings.TrimSuffix(form(file), "--"+boundary+"--\r\n") + huge + "--" + boundary + "--\r\n",
		"preamble\r\n" + form(file, model) + "epilogue",
		"",
	} {
		f.Add([]byte(seed))
	}
	lim := DefaultLimits()
	lim.MaxParts, lim.MaxFieldBytes, lim.MaxHeadBytes, lim.MaxHeaderBytes = 8, 256, 1024, 1024
	f.Fuzz(func(t *testing.T, body []byte) {
		hs := &holds{max: 1 << 20}
		fm, err := OpenHolding(bytes.NewReader(body), ct, lim, hs.newHold)
		require.LessOrEqual(t, len(hs.made), 1, "one hold at most")
		for _, h := range hs.made {
			require.LessOrEqual(t, h.buf.Len(), len(body), "the hold keeps no more than the body")
		}
		if err != nil {
			assert.Nil(t, fm)
			for _, h := range hs.made {
				assert.Equal(t, 1, h.closes, "a refusal closes the hold")
			}
			return
		}
		defer func() { assert.NoError(t, fm.Close()) }()
		var fieldBytes int
		for _, fl := range fm.head {
			fieldBytes += len(fl.value)
		}
		require.LessOrEqual(t, int64(fieldBytes), lim.MaxHeadBytes, "the fields held stay within their bound")
		if !fm.Held() {
			return // the streaming path: FuzzForm's
		}
		var out bytes.Buffer
		require.NoError(t, fm.Encode(&out, "served"), "a held form is refused in Open or not at all")
		parts, complete := parse(t, out.Bytes(), fm.ContentType())
		require.True(t, complete)
		want, ok := reference(body)
		require.True(t, ok, "the router accepted a form the reference parser refuses")
		want = heldOrder(t, want, fm.Model())
		require.Len(t, parts, len(want))
		for i := range want {
			assert.Equal(t, want[i].name, parts[i].name)
			assert.Equal(t, want[i].fileName, parts[i].fileName)
			assert.Equal(t, want[i].value, parts[i].value)
		}
	})
}

// heldOrder is the parts the upstream should read from a held form whose caller sent want: the
// fields in the caller's order, the model replaced by "served", then the one file.
func heldOrder(t *testing.T, want []got, model string) []got {
	var fields, files []got
	for _, w := range want {
		if w.name == ModelField {
			assert.Equal(t, model, w.value)
			w.value = "served"
		}
		if w.name == FileField {
			files = append(files, w)
		} else {
			fields = append(fields, w)
		}
	}
	require.Len(t, files, 1)
	return append(fields, files...)
}
