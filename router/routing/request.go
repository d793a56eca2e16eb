package routing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// Endpoint names the OpenAI surface a request arrived on; it decides which body fields carry the prompt
// and the requested output, and whether replica tiers may serve it at all.
type Endpoint uint8

const (
	ChatCompletions Endpoint = iota
	Completions
	Responses
	Embeddings
	AudioTranscriptions // multipart/form-data in, text (JSON or SSE) out
	AudioTranslations   // multipart/form-data in, text (JSON or SSE) out
	AudioSpeech         // JSON in, audio bytes out
)

var endpointPaths = [...]string{"/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/embeddings",
	"/v1/audio/transcriptions", "/v1/audio/translations", "/v1/audio/speech"}

// Path is the upstream path of the endpoint.
func (e Endpoint) Path() string { return endpointPaths[e] }

// ReplicaEligible reports whether replica tiers may serve the endpoint. Embeddings and the audio routes
// (purpose routes) resolve only to direct tiers; replica scheduling never applies to them.
func (e Endpoint) ReplicaEligible() bool {
	return e == ChatCompletions || e == Completions || e == Responses
}

// Audio reports whether the endpoint is one of the audio routes. Audio is media: a tier serves them
// only when its media gate allows media.
func (e Endpoint) Audio() bool {
	return e == AudioTranscriptions || e == AudioTranslations || e == AudioSpeech
}

// Multipart reports whether the endpoint's body is a multipart/form-data form (FormRequest) instead of
// a JSON object (ParseRequest).
func (e Endpoint) Multipart() bool { return e == AudioTranscriptions || e == AudioTranslations }

// Request is what the gates need from a parsed body: never the prompt itself.
type Request struct {
	Endpoint     Endpoint
	Model        string // the alias the caller named
	Stream       bool
	PromptTokens int64 // conservative estimate, see EstimateTokens
	MaxOutput    int64 // requested output tokens; 0 when the caller asked for none explicitly
	Tools        bool  // tools, functions or a tool_choice other than "none"
	Media        bool  // image, audio, video or file content parts

	fields map[string]json.RawMessage
}

// Request errors. Their text is the fixed message the caller sees.
var (
	ErrBadJSON      = errors.New("request body must be a JSON object")
	ErrMissingModel = errors.New("'model' is required and must be a non-empty string")
	ErrBadField     = errors.New("request field has the wrong type")
	ErrMissingInput = errors.New("request has no prompt: 'messages', 'prompt' or 'input' is required")
	ErrBadMaxTokens = errors.New("requested max output tokens must be a positive integer")
)

// FieldError names the offending field; errors.Is(err, ErrBadField) holds.
type FieldError struct{ Field string }

func (e *FieldError) Error() string { return fmt.Sprintf("field '%s' has the wrong type", e.Field) }
func (e *FieldError) Unwrap() error { return ErrBadField }

// ParseRequest decodes a request body once. It refuses anything that is not a JSON object with a model
// string and the endpoint's prompt field, and measures the prompt conservatively. The bodies of
// multipart endpoints are forms, never JSON: FormRequest describes them.
func ParseRequest(ep Endpoint, body []byte) (Request, error) {
	if ep.Multipart() || int(ep) >= len(endpointPaths) {
		return Request{}, ErrBadJSON
	}
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&fields); err != nil || fields == nil || dec.More() {
		return Request{}, ErrBadJSON
	}
	if _, err := dec.Token(); err == nil {
		return Request{}, ErrBadJSON // trailing data after the object
	}
	r := Request{Endpoint: ep, fields: fields}
	if err := json.Unmarshal(fields["model"], &r.Model); err != nil || r.Model == "" {
		return Request{}, ErrMissingModel
	}
	if raw, ok := fields["stream"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &r.Stream); err != nil {
			return Request{}, &FieldError{"stream"}
		}
	}
	var err error
	if r.MaxOutput, err = maxOutput(ep, fields); err != nil {
		return Request{}, err
	}
	if r.Tools, err = wantsTools(fields); err != nil {
		return Request{}, err
	}
	m := measure{}
	if err := m.prompt(ep, fields); err != nil {
		return Request{}, err
	}
	r.PromptTokens, r.Media = m.tokens(), m.media || ep.Audio()
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

// Body returns the body to send upstream with the model field replaced by the tier's served model
// name. Other fields are relayed exactly as the caller sent them.
func (r Request) Body(servedModel string) ([]byte, error) {
	out := make(map[string]json.RawMessage, len(r.fields))
	for k, v := range r.fields {
		out[k] = v
	}
	m, err := json.Marshal(servedModel)
	if err != nil {
		return nil, err
	}
	out["model"] = m
	return json.Marshal(out)
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// maxOutputFields lists, per endpoint, the fields that request output tokens, in OpenAI's precedence.
var maxOutputFields = [...][]string{
	ChatCompletions: {"max_completion_tokens", "max_tokens"},
	Completions:     {"max_tokens"},
	Responses:       {"max_output_tokens"},
	Embeddings:      nil,
	AudioSpeech:     nil,
}

// maxTokensLimit bounds what a caller may request so arithmetic on it never overflows.
const maxTokensLimit = 1 << 40

func maxOutput(ep Endpoint, fields map[string]json.RawMessage) (int64, error) {
	if int(ep) >= len(maxOutputFields) {
		return 0, nil
	}
	for _, name := range maxOutputFields[ep] {
		raw, ok := fields[name]
		if !ok || isNull(raw) {
			continue
		}
		var n json.Number
		if raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
			return 0, ErrBadMaxTokens
		}
		f, err := n.Float64()
		if err != nil || f != math.Trunc(f) || f < 1 || f > maxTokensLimit {
			return 0, ErrBadMaxTokens
		}
		return int64(f), nil
	}
	return 0, nil
}

func wantsTools(fields map[string]json.RawMessage) (bool, error) {
	for _, name := range []string{"tools", "functions"} {
		raw, ok := fields[name]
		if !ok || isNull(raw) {
			continue
		}
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return false, &FieldError{name}
		}
		if len(list) > 0 {
			return true, nil
		}
	}
	if raw, ok := fields["tool_choice"]; ok && !isNull(raw) {
		var s string
		if json.Unmarshal(raw, &s) == nil && s == "none" {
			return false, nil
		}
		return true, nil
	}
	return false, nil
}

// EstimateTokens is the gate's documented, conservative prompt estimate: one token per three bytes of
// UTF-8 text (real tokenizers average about four for English, fewer bytes per token only for unusual
// text), plus four tokens of framing per message and three for the reply primer. Overestimating refuses
// a borderline prompt early instead of letting the upstream fail it after a reservation.
func EstimateTokens(textBytes, messages int64) int64 {
	return (textBytes+2)/3 + 4*messages + 3
}

// measure accumulates prompt text size, message count and media presence while walking the body.
type measure struct {
	bytes, messages int64
	media           bool
	seen            bool
}

func (m *measure) tokens() int64 { return EstimateTokens(m.bytes, m.messages) }

func (m *measure) prompt(ep Endpoint, fields map[string]json.RawMessage) error {
	switch ep {
	case ChatCompletions:
		if err := m.messageList(fields["messages"], "messages"); err != nil {
			return err
		}
	case Completions:
		if err := m.textOrList(fields["prompt"], "prompt"); err != nil {
			return err
		}
	case Responses:
		if err := m.responsesInput(fields["input"]); err != nil {
			return err
		}
		if raw, ok := fields["instructions"]; ok && !isNull(raw) {
			if err := m.text(raw, "instructions"); err != nil {
				return err
			}
		}
	case Embeddings:
		if err := m.textOrList(fields["input"], "input"); err != nil {
			return err
		}
	case AudioSpeech:
		// The text to speak: one string, measured like a prompt so the context gate bounds it.
		if raw, ok := fields["input"]; ok && !isNull(raw) {
			m.seen = true
			if err := m.text(raw, "input"); err != nil {
				return err
			}
		}
	}
	if !m.seen {
		return ErrMissingInput
	}
	return nil
}

func (m *measure) text(raw json.RawMessage, field string) error {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return &FieldError{field}
	}
	m.bytes += int64(len(s))
	return nil
}

// textOrList accepts a string, a list of strings, or token ID lists (counted one token per ID, at three
// bytes each so the estimate stays conservative).
func (m *measure) textOrList(raw json.RawMessage, field string) error {
	if len(raw) == 0 || isNull(raw) {
		return nil
	}
	m.seen = true
	if raw[0] == '"' {
		return m.text(raw, field)
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil || len(list) == 0 {
		return &FieldError{field}
	}
	for _, item := range list {
		switch {
		case len(item) > 0 && item[0] == '"':
			if err := m.text(item, field); err != nil {
				return err
			}
		case len(item) > 0 && item[0] == '[':
			var ids []int64
			if err := json.Unmarshal(item, &ids); err != nil {
				return &FieldError{field}
			}
			m.bytes += 3 * int64(len(ids))
		default:
			var id int64
			if err := json.Unmarshal(item, &id); err != nil {
				return &FieldError{field}
			}
			m.bytes += 3
		}
	}
	return nil
}

// object decodes a JSON object with exact, case-sensitive keys. Struct decoding would fold case and let
// "Content" shadow "content", which the upstream (exact-key) still reads: a gate bypass.
func object(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, false
	}
	return fields, true
}

// typeOf reads an object's "type" string; absent means "".
func typeOf(fields map[string]json.RawMessage) (string, bool) {
	raw, ok := fields["type"]
	if !ok || isNull(raw) {
		return "", true
	}
	var t string
	return t, json.Unmarshal(raw, &t) == nil
}

func (m *measure) messageList(raw json.RawMessage, field string) error {
	if len(raw) == 0 || isNull(raw) {
		return nil
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(raw, &msgs); err != nil || len(msgs) == 0 {
		return &FieldError{field}
	}
	m.seen = true
	for _, rawMsg := range msgs {
		msg, ok := object(rawMsg)
		if !ok {
			return &FieldError{field}
		}
		m.messages++
		if err := m.content(msg["content"], field); err != nil {
			return err
		}
	}
	return nil
}

// mediaParts are the content-part types that carry images, audio, video or files in the chat and
// Responses dialects. A part also counts as media when it carries one of these as a key, whatever its
// type says, because servers accept typeless media parts.
var mediaParts = map[string]bool{
	"image_url": true, "input_image": true, "input_audio": true, "audio_url": true,
	"video_url": true, "input_video": true, "file": true, "input_file": true,
	"image": true, "image_embeds": true, "audio": true, "video": true,
}

// isMedia reports whether a content part or Responses item carries media.
func isMedia(fields map[string]json.RawMessage, typ string) bool {
	if mediaParts[typ] {
		return true
	}
	for k := range fields {
		if mediaParts[k] {
			return true
		}
	}
	return false
}

func (m *measure) content(raw json.RawMessage, field string) error {
	if len(raw) == 0 || isNull(raw) {
		return nil // assistant tool-call messages may carry no content
	}
	if raw[0] == '"' {
		return m.text(raw, field)
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return &FieldError{field}
	}
	for _, rawPart := range parts {
		p, ok := object(rawPart)
		if !ok {
			return &FieldError{field}
		}
		typ, ok := typeOf(p)
		if !ok {
			return &FieldError{field}
		}
		if isMedia(p, typ) {
			m.media = true
		}
		if text, ok := p["text"]; ok && !isNull(text) {
			if err := m.text(text, field); err != nil {
				return err
			}
		}
	}
	return nil
}

// responsesInput accepts the Responses API input: a string, or a list of items that are either
// messages ({role, content}) or typed items.
func (m *measure) responsesInput(raw json.RawMessage) error {
	if len(raw) == 0 || isNull(raw) {
		return nil
	}
	if raw[0] == '"' {
		m.seen = true
		m.messages++
		return m.text(raw, "input")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || len(items) == 0 {
		return &FieldError{"input"}
	}
	m.seen = true
	for _, item := range items {
		it, ok := object(item)
		if !ok {
			return &FieldError{"input"}
		}
		typ, ok := typeOf(it)
		if !ok {
			return &FieldError{"input"}
		}
		m.messages++
		if isMedia(it, typ) {
			m.media = true
			continue
		}
		if text, ok := it["text"]; ok && !isNull(text) {
			if err := m.text(text, "input"); err != nil {
				return err
			}
		}
		if err := m.content(it["content"], "input"); err != nil {
			return err
		}
	}
	return nil
}
