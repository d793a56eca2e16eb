package request

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/anvil-llm/anvil/internal/jsonscan"
)

// Request is what the gates need from a parsed body: never the prompt itself.
type Request struct {
	Endpoint     Endpoint
	Model        string // the alias the caller named
	Stream       bool
	PromptTokens int64 // conservative estimate, see EstimateTokens
	MaxOutput    int64 // requested output tokens; 0 when the caller asked for none explicitly
	Tools        bool  // tools, functions or a tool_choice other than "none"
	Media        bool  // image, audio, video or file content parts

	body  []byte // the caller's bytes: relayed unchanged but for the model value
	model [2]int // the model value's string literal in body, quotes included
}

// Request errors. Their text is the fixed message the caller sees.
var (
	ErrBadJSON        = errors.New("request body must be a JSON object")
	ErrMissingModel   = errors.New("'model' is required and must be a non-empty string")
	ErrBadField       = errors.New("request field has the wrong type")
	ErrMissingInput   = errors.New("request has no prompt: 'messages', 'prompt' or 'input' is required")
	ErrBadMaxTokens   = errors.New("requested max output tokens must be a positive integer written without a fraction or exponent")
	ErrDuplicateField = errors.New("a request field appears more than once")
	ErrFoldedKey      = errors.New("a request key differs from a field name only by letter case")
)

// FieldError names the offending field; errors.Is(err, ErrBadField) holds.
type FieldError struct{ Field string }

func (e *FieldError) Error() string { return fmt.Sprintf("field '%s' has the wrong type", e.Field) }
func (e *FieldError) Unwrap() error { return ErrBadField }

// KeyError refuses a key the parser cannot read unambiguously: a second copy of a field the router
// reads (errors.Is ErrDuplicateField), or a key that is not exactly such a field's name but equals it
// under Unicode simple case folding (errors.Is ErrFoldedKey), which encoding/json-style upstreams
// would read as that field. Field is always the router's own spelling, never the caller's key.
type KeyError struct {
	Field     string
	Duplicate bool
}

func (e *KeyError) Error() string {
	if e.Duplicate {
		return fmt.Sprintf("field '%s' appears more than once", e.Field)
	}
	return fmt.Sprintf("a key differs from the field '%s' only by letter case; use the exact name", e.Field)
}

func (e *KeyError) Unwrap() error {
	if e.Duplicate {
		return ErrDuplicateField
	}
	return ErrFoldedKey
}

// field is a top-level body field the router reads.
type field uint8

const (
	fieldModel field = iota
	fieldStream
	fieldMaxCompletionTokens
	fieldMaxTokens
	fieldMaxOutputTokens
	fieldTools
	fieldFunctions
	fieldToolChoice
	fieldMessages
	fieldPrompt
	fieldInput
	fieldInstructions
	numFields
)

var fieldNames = [numFields]string{"model", "stream", "max_completion_tokens", "max_tokens",
	"max_output_tokens", "tools", "functions", "tool_choice", "messages", "prompt", "input", "instructions"}

type fieldSet uint16

func setOf(fs ...field) fieldSet {
	var s fieldSet
	for _, f := range fs {
		s |= 1 << f
	}
	return s
}

func (s fieldSet) has(f field) bool { return s&(1<<f) != 0 }

// maxOutputFields lists, per endpoint, the fields that request output tokens.
var maxOutputFields = [...][]field{
	ChatCompletions: {fieldMaxCompletionTokens, fieldMaxTokens},
	Completions:     {fieldMaxTokens},
	Responses:       {fieldMaxOutputTokens},
	Embeddings:      nil,
	AudioSpeech:     nil,
}

// readFields is, per endpoint, every top-level field the parser reads: these are the keys that must
// appear at most once and exactly spelled.
var readFields = [...]fieldSet{
	ChatCompletions: setOf(fieldModel, fieldStream, fieldTools, fieldFunctions, fieldToolChoice,
		fieldMaxCompletionTokens, fieldMaxTokens, fieldMessages),
	Completions: setOf(fieldModel, fieldStream, fieldTools, fieldFunctions, fieldToolChoice,
		fieldMaxTokens, fieldPrompt),
	Responses: setOf(fieldModel, fieldStream, fieldTools, fieldFunctions, fieldToolChoice,
		fieldMaxOutputTokens, fieldInput, fieldInstructions),
	Embeddings:  setOf(fieldModel, fieldStream, fieldTools, fieldFunctions, fieldToolChoice, fieldInput),
	AudioSpeech: setOf(fieldModel, fieldStream, fieldTools, fieldFunctions, fieldToolChoice, fieldInput),
}

// maxTokensLimit bounds what a caller may request so arithmetic on it never overflows.
const maxTokensLimit = 1 << 40

// maxKeyBytes bounds a decoded key that can still equal a field name under case folding (the longest
// name is 21 ASCII letters; a folded letter takes at most 3 bytes).
const maxKeyBytes = 64

// Parse reads a request body once, in place. It refuses anything that is not one JSON object
// (as encoding/json would refuse it), with the model string and the endpoint's prompt field, and
// measures the prompt conservatively. It materializes nothing it does not read: unknown fields are
// validated and skipped, and only the model name is copied.
//
// Keys are exact: a field the router reads must appear once, spelled exactly (escapes decoded); a key
// that differs from one only by case (Unicode simple folding, so "MAX_TOKENS" and a Kelvin-sign
// "max_to\u212aens" alike) is refused with a KeyError. Inside messages, content parts and Responses
// items, every key that folds to "content", "text" or "type", and every copy of one, is measured, and
// a key folding to a media key marks media: the estimate holds whichever copy an upstream reads.
// The bodies of multipart endpoints are forms, never JSON: FormRequest describes them.
func Parse(ep Endpoint, body []byte) (Request, error) {
	if ep.Multipart() || int(ep) >= len(endpointPaths) {
		return Request{}, ErrBadJSON
	}
	p := parser{b: body, read: readFields[ep]}
	if err := p.scan(); err != nil {
		return Request{}, err
	}
	r, err := p.request(ep)
	if err != nil {
		return Request{}, err
	}
	return r, nil
}

// FormRequest describes a multipart audio request (a transcription or a translation) from the fields
// the router reads of its form: the model alias and whether the caller asked for a stream. Its prompt
// is audio, which the router cannot measure before it has streamed the upload, so the token gates see
// no prompt and no requested output; the media gate applies.
func FormRequest(ep Endpoint, model string, stream bool) (Request, error) {
	if !ep.Multipart() {
		return Request{}, ErrBadField
	}
	if model == "" {
		return Request{}, ErrMissingModel
	}
	return Request{Endpoint: ep, Model: model, Stream: stream, Media: true}, nil
}

// Body returns the body to send upstream: the caller's bytes with the model value replaced by the tier's
// served model name (JSON-quoted). Every other byte (key order, spacing, escapes, fields the router does
// not read, duplicates of those) is relayed exactly as the caller sent it.
func (r Request) Body(servedModel string) []byte {
	out := make([]byte, 0, len(r.body)-(r.model[1]-r.model[0])+len(servedModel)+2)
	out = append(out, r.body[:r.model[0]]...)
	out = appendJSONString(out, servedModel)
	return append(out, r.body[r.model[1]:]...)
}

// appendJSONString appends s quoted as encoding/json marshals it: as it is when no byte needs an
// escape (model names never do), else through json.Marshal.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			lit, _ := json.Marshal(s) // a string always marshals
			return append(dst, lit...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// parser holds one body and where its top-level fields start; at[f] is 0 when f is absent (no value
// can start at 0, inside the object).
type parser struct {
	b      []byte
	read   fieldSet
	at     [numFields]int
	keyErr *KeyError // the first duplicate or folded key
}

// scan validates the whole body as one JSON object and records where each field the endpoint reads
// starts. Key errors are kept for after validation: broken JSON is ErrBadJSON whatever its keys.
func (p *parser) scan() error {
	b := p.b
	i := jsonscan.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return ErrBadJSON
	}
	end, err := jsonscan.EachMember(b, i, 0, func(m jsonscan.Member) (int, error) {
		p.note(m)
		return jsonscan.Skip(b, m.Value, 1)
	})
	if err != nil || jsonscan.SkipSpace(b, end) != len(b) {
		return ErrBadJSON
	}
	if p.keyErr != nil {
		return p.keyErr
	}
	return nil
}

// note classifies one top-level key.
func (p *parser) note(m jsonscan.Member) {
	var buf [maxKeyBytes]byte
	key, ok := jsonscan.DecodeSmall(m.Key, m.Flags, buf[:])
	if !ok {
		return
	}
	for f := range numFields {
		if !p.read.has(f) {
			continue
		}
		name := fieldNames[f]
		switch {
		case string(key) == name:
			if p.at[f] != 0 {
				p.fail(&KeyError{Field: name, Duplicate: true})
			}
			p.at[f] = m.Value
			return
		case equalFold(key, name):
			p.fail(&KeyError{Field: name})
			return
		}
	}
}

func (p *parser) fail(err *KeyError) {
	if p.keyErr == nil {
		p.keyErr = err
	}
}

// value returns where field f's value starts, and false when f is absent or null.
func (p *parser) value(f field) (int, bool) {
	i := p.at[f]
	return i, i != 0 && p.b[i] != 'n'
}

// request interprets the recorded fields, in a fixed order so a body with several faults always gets
// the same answer.
func (p *parser) request(ep Endpoint) (Request, error) {
	b := p.b
	r := Request{Endpoint: ep, body: b}
	i := p.at[fieldModel]
	if i == 0 || b[i] != '"' {
		return Request{}, ErrMissingModel
	}
	end, flags, _ := jsonscan.String(b, i)
	if end-i == 2 {
		return Request{}, ErrMissingModel
	}
	r.Model, r.model = decodeString(b[i+1:end-1], flags), [2]int{i, end}
	if i, ok := p.value(fieldStream); ok {
		switch b[i] {
		case 't':
			r.Stream = true
		case 'f':
		default:
			return Request{}, &FieldError{"stream"}
		}
	}
	var err error
	if r.MaxOutput, err = p.maxOutput(ep); err != nil {
		return Request{}, err
	}
	if r.Tools, err = p.wantsTools(); err != nil {
		return Request{}, err
	}
	m := measure{b: b}
	if err := m.prompt(ep, p); err != nil {
		return Request{}, err
	}
	r.PromptTokens, r.Media = m.tokens(), m.media || ep.Audio()
	return r, nil
}

// maxOutput is the largest output request among the endpoint's fields: whichever one an upstream
// honours, the gate has seen at least that much.
func (p *parser) maxOutput(ep Endpoint) (int64, error) {
	var most int64
	for _, f := range maxOutputFields[ep] {
		i, ok := p.value(f)
		if !ok {
			continue
		}
		n, err := positiveInteger(p.b, i)
		if err != nil {
			return 0, err
		}
		most = max(most, n)
	}
	return most, nil
}

// positiveInteger reads a max-tokens value: a JSON integer literal, 1..maxTokensLimit. A whole number
// written as 2.0 or 2e0 is refused: the router relays the caller's bytes, and upstreams disagree about
// such numbers (Pydantic reads 2.0 as 2, Go's encoding/json refuses it for an integer).
func positiveInteger(b []byte, i int) (int64, error) {
	end, integer, err := jsonscan.Number(b, i)
	if err != nil || !integer || b[i] == '-' || end-i > 13 { // 2^40 has 13 digits
		return 0, ErrBadMaxTokens
	}
	var n int64
	for _, c := range b[i:end] {
		n = n*10 + int64(c-'0')
	}
	if n < 1 || n > maxTokensLimit {
		return 0, ErrBadMaxTokens
	}
	return n, nil
}

func (p *parser) wantsTools() (bool, error) {
	tools := false
	for _, f := range []field{fieldTools, fieldFunctions} {
		i, ok := p.value(f)
		if !ok {
			continue
		}
		if p.b[i] != '[' {
			return false, &FieldError{fieldNames[f]}
		}
		tools = tools || p.b[jsonscan.SkipSpace(p.b, i+1)] != ']'
	}
	if tools {
		return true, nil
	}
	i, ok := p.value(fieldToolChoice)
	if !ok {
		return false, nil
	}
	return !isString(p.b, i, "none"), nil
}

// isString reports whether the value at b[i] is a string literal that decodes to s.
func isString(b []byte, i int, s string) bool {
	if b[i] != '"' {
		return false
	}
	end, flags, _ := jsonscan.String(b, i)
	var buf [maxKeyBytes]byte
	got, ok := jsonscan.DecodeSmall(b[i+1:end-1], flags, buf[:])
	return ok && string(got) == s
}

// decodeString returns a validated string literal's decoded contents.
func decodeString(raw []byte, flags jsonscan.Flags) string {
	if flags&jsonscan.Escaped == 0 && (flags == 0 || utf8.Valid(raw)) {
		return string(raw)
	}
	out := make([]byte, 0, len(raw))
	jsonscan.Unescape(raw, func(r rune) bool {
		out = utf8.AppendRune(out, r)
		return true
	})
	return string(out)
}

// EstimateTokens is the gate's documented, conservative prompt estimate: one token per three bytes of
// UTF-8 text (real tokenizers average about four for English, fewer bytes per token only for unusual
// text), plus four tokens of framing per message and three for the reply primer. Overestimating refuses
// a borderline prompt early instead of letting the upstream fail it after a reservation.
func EstimateTokens(textBytes, messages int64) int64 {
	return (textBytes+2)/3 + 4*messages + 3
}
