// Package audioform reads the multipart/form-data body of an audio request (a transcription or a
// translation) in one streaming pass, and writes it on to the upstream with its model field replaced
// by the tier's served model, never holding the file when the model comes first.
//
// Open reads the form's head: every part before the file part, each a field held in memory within
// Limits. When the model field is among them (OpenAI's Python SDK, httpx, requests and curl -F in
// argument order all send the fields before the file), Encode writes the head, with the model
// replaced, and streams the file part and every later part through one fixed copy buffer as they are
// read: the router needs the model to pick the upstream before it may send anything, and holds
// nothing more than the head.
//
// A file part before the model field (OpenAI's Node SDK sends the file first) is refused by Open.
// OpenHolding instead writes it to a Hold its caller provides (memory up to a bound, then a
// temporary file: the server's spool) and reads the rest of the form, every other part a field
// within Limits, to its end; Encode then writes the fields, the model replaced, followed by the held
// file. So every form the upstream receives has its fields before its file.
//
// The upstream receives a canonical form, never the caller's bytes: a new random boundary, each part
// with only a Content-Disposition naming what the router read (form-data, name, filename) and, for a
// part with a filename, a Content-Type. So the upstream reads exactly the names, filenames and values
// the router read. A rule the form breaks after its head (a second model or file part, malformed
// framing, a body error such as its size bound) makes Encode stop before the closing boundary: the
// upstream never receives a complete form the router refused.
//
// Errors are this package's sentinels, whose text is a fixed message for the caller, or the body
// reader's own error when reading the body failed (an *http.MaxBytesError, say), unwrapped, so the
// caller can tell a bound or a departed client from a malformed form.
package audioform

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"strings"
	"unicode/utf8"
)

// Refusals. Their text is the fixed message the caller sees.
var (
	ErrNotMultipart   = errors.New("request body must be multipart/form-data with a boundary")
	ErrMalformed      = errors.New("request body is not a well-formed multipart/form-data form")
	ErrMissingModel   = errors.New("the form has no 'model' field")
	ErrBadModel       = errors.New("the 'model' field must be a non-empty text field")
	ErrDuplicateModel = errors.New("the form has more than one 'model' field")
	ErrModelAfterFile = errors.New("the 'model' field must come before the 'file' part")
	ErrDuplicateFile  = errors.New("the form has more than one 'file' part")
	ErrFieldTooLarge  = errors.New("a form field before the file is too large")
	ErrTooManyParts   = errors.New("the form has too many parts")
	ErrBadPartName    = errors.New("a part's name or filename contains a quote, a backslash or a control character")
)

// Names of the parts the router reads.
const (
	ModelField = "model"
	FileField  = "file"
	streamName = "stream"
)

// Limits bound what a form may hold besides its file. The body's own bound (the caller wraps the body
// in it) bounds everything together.
type Limits struct {
	MaxParts       int   // parts in the whole form
	MaxFieldBytes  int64 // one field before the file part
	MaxHeadBytes   int64 // all the fields before the file part together
	MaxHeaderBytes int64 // one part's boundary line and headers, beyond the reader's 4 KiB read-ahead
}

// DefaultLimits are the router's bounds: 64 parts, 64 KiB a field, 1 MiB of fields before the file,
// 16 KiB of headers a part.
func DefaultLimits() Limits {
	return Limits{MaxParts: 64, MaxFieldBytes: 64 << 10, MaxHeadBytes: 1 << 20, MaxHeaderBytes: 16 << 10}
}

// field is one part read before the file part.
type field struct {
	name, fileName, contentType string
	value                       []byte
}

// Form is an opened form: its head read, its file part (if any) not yet.
type Form struct {
	mr       *multipart.Reader
	body     *guard
	lim      Limits
	head     []field
	model    string
	stream   bool
	file     *multipart.Part // the file part, unread; nil when the form ended without one or it is held
	held     Hold            // the file part that came before the model, read whole (OpenHolding)
	heldPart field           // its name, filename and content type; no value
	parts    int
	boundary string
}

// Open reads the head of the form in body, whose Content-Type header is contentType, up to its file
// part or its end. It refuses a form without exactly one model field before the file part.
func Open(body io.Reader, contentType string, lim Limits) (*Form, error) {
	return open(body, contentType, lim, nil)
}

// open is Open, holding a file part before the model field in a Hold from newHold when it is not nil.
// On a refusal the Hold is closed.
func open(body io.Reader, contentType string, lim Limits, newHold func() (Hold, error)) (*Form, error) {
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil || mediaType != "multipart/form-data" || params["boundary"] == "" {
		return nil, ErrNotMultipart
	}
	g := &guard{r: body}
	f := &Form{mr: multipart.NewReader(g, params["boundary"]), body: g, lim: lim,
		boundary: multipart.NewWriter(io.Discard).Boundary()}
	if err := f.readHead(newHold); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// readHead reads the parts up to the file part (or, with the file held, all of them), each field
// within Limits.
func (f *Form) readHead(newHold func() (Hold, error)) error {
	var headBytes int64
	for {
		p, err := f.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		name := p.FormName()
		if name == FileField {
			if f.held != nil {
				return ErrDuplicateFile
			}
			if f.model != "" {
				f.file = p
				break
			}
			if newHold == nil {
				return ErrModelAfterFile
			}
			if err := f.hold(p, newHold); err != nil {
				return err
			}
			continue
		}
		fl, err := f.readField(p, name)
		if err != nil {
			return err
		}
		if headBytes += int64(len(fl.value)); headBytes > f.lim.MaxHeadBytes {
			return ErrFieldTooLarge
		}
		if err := f.note(fl); err != nil {
			return err
		}
		f.head = append(f.head, fl)
	}
	if f.model == "" {
		return ErrMissingModel
	}
	if f.held != nil {
		return f.drain()
	}
	return nil
}

// drain reads the body past a held form's closing boundary to its end (an epilogue is discarded,
// within the body's own bound), so the whole upload is consumed before OpenHolding returns: nothing
// of it is read after admission, when a bound on the upload (its rate) could no longer refuse it
// cleanly.
func (f *Form) drain() error {
	if _, err := io.Copy(io.Discard, f.body); err != nil {
		return f.readError(err)
	}
	return nil
}

// Model is the model field's value: the alias the caller named.
func (f *Form) Model() string { return f.model }

// Stream reports whether a stream field before the file part asks for a stream (pydantic's booleans).
func (f *Form) Stream() bool { return f.stream }

// ContentType is the Content-Type of the form Encode writes.
func (f *Form) ContentType() string { return "multipart/form-data; boundary=" + f.boundary }

// next returns the next part, with its boundary line and headers read within MaxHeaderBytes.
func (f *Form) next() (*multipart.Part, error) {
	f.body.arm(f.lim.MaxHeaderBytes)
	p, err := f.mr.NextPart()
	f.body.disarm()
	if err == io.EOF { // the closing boundary; a body that just ends comes wrapped, and is malformed
		return nil, io.EOF
	}
	if err != nil {
		return nil, f.readError(err)
	}
	if f.parts++; f.parts > f.lim.MaxParts {
		return nil, ErrTooManyParts
	}
	if err := checkPart(p); err != nil {
		return nil, err
	}
	return p, nil
}

// checkPart refuses what the canonical form could not carry unchanged: a part that is not a named
// form-data part, a name or filename another parser could read differently, and a transfer encoding
// (RFC 7578 deprecates it; quoted-printable is decoded by the reader and never reaches here).
func checkPart(p *multipart.Part) error {
	name := p.FormName()
	if name == "" {
		return ErrMalformed
	}
	if !plain(name) || !plain(p.FileName()) {
		return ErrBadPartName
	}
	switch strings.ToLower(strings.TrimSpace(p.Header.Get("Content-Transfer-Encoding"))) {
	case "", "7bit", "8bit", "binary":
		return nil
	}
	return ErrMalformed
}

// plain reports whether s can be written between quotes in a header the same way by every parser:
// valid UTF-8 without quotes, backslashes or control characters.
func plain(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f || r == '"' || r == '\\' })
}

// readField reads one part before the file, bounded.
func (f *Form) readField(p *multipart.Part, name string) (field, error) {
	v, err := io.ReadAll(io.LimitReader(p, f.lim.MaxFieldBytes+1))
	if err != nil {
		return field{}, f.readError(err)
	}
	if int64(len(v)) > f.lim.MaxFieldBytes {
		return field{}, ErrFieldTooLarge
	}
	fl := field{name: name, fileName: p.FileName(), value: v}
	if fl.fileName != "" {
		fl.contentType = partType(p)
	}
	return fl, nil
}

// note reads what the router needs from a field before the file: the model and the stream flag.
func (f *Form) note(fl field) error {
	switch fl.name {
	case ModelField:
		if f.model != "" {
			return ErrDuplicateModel
		}
		if fl.fileName != "" || len(fl.value) == 0 || !utf8.Valid(fl.value) {
			return ErrBadModel
		}
		f.model = string(fl.value)
	case streamName:
		f.stream = formBool(string(fl.value))
	}
	return nil
}

// formBool reads a boolean as pydantic reads one from a form; anything else is false (the upstream
// refuses it).
func formBool(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "t", "yes", "y", "on":
		return true
	}
	return false
}

// partType is the Content-Type forwarded for a part with a filename: the caller's, re-formatted,
// when it is a valid media type, otherwise application/octet-stream.
func partType(p *multipart.Part) string {
	mt, params, err := mime.ParseMediaType(p.Header.Get("Content-Type"))
	if err == nil {
		if s := mime.FormatMediaType(mt, params); s != "" {
			return s
		}
	}
	return "application/octet-stream"
}

// readError classifies a failure to read the form: the body's own error when reading the body
// failed (its bound, a departed client), otherwise a malformed form.
func (f *Form) readError(err error) error {
	if bodyErr := f.body.failure(); bodyErr != nil {
		return bodyErr
	}
	return ErrMalformed // framing, or a part header over MaxHeaderBytes (errHeaderTooLarge)
}
