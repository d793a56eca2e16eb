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
