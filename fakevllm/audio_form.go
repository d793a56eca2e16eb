package fakevllm

import (
	"errors"
	"io"
	"math"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of an audio form besides the file itself.
const (
	maxFormParts      = 64
	maxFormFieldBytes = 64 << 10
	maxAudioNameBytes = 64
	// maxAudioBytesLimit bounds MaxAudioBytes and MaxBodyBytes so that their
	// sum, the whole upload's bound, cannot overflow.
	maxAudioBytesLimit = 1 << 40
)

// errFileTooLarge stops the count of a file past its bound.
var errFileTooLarge = errors.New("audio file too large")

// audioForm is a parsed transcription or translation form. The file is
// counted as it streams past, never kept: the fake derives everything from
// its size and name.
type audioForm struct {
	model           string // "" when absent: the default served name, as in vLLM
	modelSet        bool
	fileName        string // sanitized base name
	fileBytes       int64
	hasFile         bool
	prompt          string
	responseFormat  string // one of json, text, srt, verbose_json, vtt
	stream          bool
	includeUsage    bool
	continuousUsage bool
	maxTokens       *int64 // max_completion_tokens
}

// formField is how a known form field is read.
type formField uint8

const (
	fieldIgnored formField = iota // unknown, or known but without effect here: read and dropped
	fieldString
	fieldBool
	fieldInt
	fieldFloat
)

// audioFieldKind says how parseAudioForm treats a field name. Unknown fields
// are ignored, as vLLM ignores them (with a warning in its log).
func audioFieldKind(name string) formField {
	switch name {
	case "model", "prompt", "response_format", "language", "to_language":
		return fieldString
	case "stream", "stream_include_usage", "stream_continuous_usage_stats":
		return fieldBool
	case "max_completion_tokens":
		return fieldInt
	case "temperature":
		return fieldFloat
	}
	return fieldIgnored
}

// parseAudioForm reads a multipart/form-data body as one streaming pass:
// field values up to maxFormFieldBytes each, the file counted in a fixed
// buffer and refused as soon as it passes maxFile bytes, other parts read
// and dropped. Errors are *apiError: 400 for a malformed or invalid form,
// 413 when the body passes the http.MaxBytesReader the caller wrapped it
// in, 422 for a file part that is not a file. The engine is never involved.
func parseAudioForm(body io.Reader, contentType string, maxFile int64) (audioForm, error) {
	f := audioForm{responseFormat: "json"}
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil || mediaType != "multipart/form-data" || params["boundary"] == "" {
		return f, badRequest("", "request body must be multipart/form-data with a boundary and a file part")
	}
	mr := multipart.NewReader(body, params["boundary"])
	seen := make(map[string]bool, 8)
	for parts := 0; ; parts++ {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return f, formReadError(err)
		}
		if parts == maxFormParts {
			return f, badRequest("", "form has more than %d parts", maxFormParts)
		}
		if err := f.readPart(p, seen, maxFile); err != nil {
			return f, err
		}
	}
	return f, f.check()
}

// readPart reads one part into f.
func (f *audioForm) readPart(p *multipart.Part, seen map[string]bool, maxFile int64) error {
	name := p.FormName()
	if name == "" {
		return badRequest("", "every part must be a form-data field with a name")
	}
	kind := audioFieldKind(name)
	if name != "file" && kind == fieldIgnored {
		if _, err := io.Copy(io.Discard, p); err != nil {
			return formReadError(err)
		}
		return nil
	}
	field := truncateString(name, 40)
	if seen[name] {
		return badRequest(field, "field %s appears more than once", field)
	}
	seen[name] = true
	if name == "file" {
		return f.readFile(p, maxFile)
	}
	if p.FileName() != "" {
		return badRequest(field, "field %s must be a text field, not a file", field)
	}
	v, err := readField(p, field)
	if err != nil {
		return err
	}
	return f.set(name, kind, v)
}

// readFile counts the file part's bytes without keeping them. A part
// without a filename is a string to FastAPI, which vLLM refuses with 422.
func (f *audioForm) readFile(p *multipart.Part, maxFile int64) error {
	if p.FileName() == "" {
		return &apiError{Status: http.StatusUnprocessableEntity, Message: "Expected 'file' to be a file-like object, not 'str'."}
	}
	n, err := countBytes(p, maxFile)
	switch {
	case errors.Is(err, errFileTooLarge):
		return badRequest("audio_filesize_mb", "Maximum file size exceeded (parameter=audio_filesize_mb): the limit is %d bytes", maxFile)
	case err != nil:
		return formReadError(err)
	}
	f.hasFile, f.fileBytes, f.fileName = true, n, audioName(p.FileName())
	return nil
}

// countBytes reads r to its end through one fixed buffer and returns how
// many bytes it held, failing with errFileTooLarge at the first byte past max.
func countBytes(r io.Reader, max int64) (int64, error) {
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		n += int64(k)
		if n > max {
			return n, errFileTooLarge
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// readField reads a text field's value, bounded.
func readField(p *multipart.Part, field string) (string, error) {
	b, err := io.ReadAll(io.LimitReader(p, maxFormFieldBytes+1))
	if err != nil {
		return "", formReadError(err)
	}
	if len(b) > maxFormFieldBytes {
		return "", badRequest(field, "field %s is longer than %d bytes", field, maxFormFieldBytes)
	}
	if !utf8.Valid(b) {
		return "", badRequest(field, "field %s is not valid UTF-8", field)
	}
	return string(b), nil
}

// set stores a known field's value, parsed as pydantic parses form strings.
func (f *audioForm) set(name string, kind formField, v string) error {
	switch kind {
	case fieldBool:
		b, ok := parseFormBool(v)
		if !ok {
			return badRequest(name, "field %s: expected a boolean, got %q", name, truncateString(v, 40))
		}
		switch name {
		case "stream":
			f.stream = b
		case "stream_include_usage":
			f.includeUsage = b
		default:
			f.continuousUsage = b
		}
	case fieldInt:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return badRequest(name, "field %s: expected an integer, got %q", name, truncateString(v, 40))
		}
		f.maxTokens = &n
	case fieldFloat:
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
			return badRequest(name, "field %s: expected a number, got %q", name, truncateString(v, 40))
		}
	case fieldString:
		switch name {
		case "model":
			f.model, f.modelSet = v, true
		case "prompt":
			f.prompt = v
		case "response_format":
			switch v {
			case "json", "text", "srt", "verbose_json", "vtt":
				f.responseFormat = v
			default:
				return badRequest(name, "response_format must be one of json, text, srt, verbose_json, vtt; got %q", truncateString(v, 40))
			}
		}
	}
	return nil
}

// check applies the form-wide rules of vLLM's request model.
func (f *audioForm) check() error {
	if !f.hasFile {
		return badRequest("file", "field required: file")
	}
	if !f.stream {
		if f.includeUsage {
			return badRequest("stream_include_usage", "Stream options can only be defined when `stream=True`.")
		}
		if f.continuousUsage {
			return badRequest("stream_continuous_usage_stats", "Stream options can only be defined when `stream=True`.")
		}
	}
	return nil
}

// parseFormBool accepts what pydantic accepts for a boolean given as text.
func parseFormBool(v string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "t", "yes", "y", "on":
		return true, true
	case "0", "false", "f", "no", "n", "off":
		return false, true
	}
	return false, false
}

// formReadError maps a failure to read the body: past the caller's
// http.MaxBytesReader is 413, anything else a malformed form.
func formReadError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return &apiError{Status: http.StatusRequestEntityTooLarge, Message: "request body exceeds " + strconv.FormatInt(tooBig.Limit, 10) + " bytes"}
	}
	return badRequest("", "malformed multipart/form-data body")
}

// audioName makes an uploaded file's base name safe to repeat as one word of
// the transcript: control characters, spaces and invalid UTF-8 become '_',
// and it is cut to maxAudioNameBytes at a character boundary.
func audioName(name string) string {
	name = strings.ToValidUTF8(name, "_")
	var b strings.Builder
	for _, r := range name {
		if r <= ' ' || r == 0x7f || r == utf8.RuneError {
			r = '_'
		}
		if b.Len()+utf8.RuneLen(r) > maxAudioNameBytes {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}
