package request

import (
	"bytes"
	"encoding/json"
	"math"
)

// This file keeps the request parser as it was before issue 13 (encoding/json into maps, the body
// re-encoded on the way out) as a test oracle: the new parser must never accept what this one refused,
// and must measure what both accept at least as this one did.

// oracleParse decodes a request body once. It refuses anything that is not a JSON oracleObject with a model
// string and the endpoint's prompt field, and measures the prompt conservatively.
func oracleParse(ep Endpoint, body []byte) (Request, error) {
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&fields); err != nil || fields == nil || dec.More() {
		return Request{}, ErrBadJSON
	}
	if _, err := dec.Token(); err == nil {
		return Request{}, ErrBadJSON // trailing data after the oracleObject
	}
	r := Request{Endpoint: ep}
	if err := json.Unmarshal(fields["model"], &r.Model); err != nil || r.Model == "" {
		return Request{}, ErrMissingModel
	}
	if raw, ok := fields["stream"]; ok && !oracleIsNull(raw) {
		if err := json.Unmarshal(raw, &r.Stream); err != nil {
			return Request{}, &FieldError{"stream"}
		}
	}
	var err error
	if r.MaxOutput, err = oracleMaxOutput(ep, fields); err != nil {
		return Request{}, err
	}
	if r.Tools, err = oracleWantsTools(fields); err != nil {
		return Request{}, err
	}
	m := oracleMeasure{}
	if err := m.prompt(ep, fields); err != nil {
		return Request{}, err
	}
	r.PromptTokens, r.Media = m.tokens(), m.media
	return r, nil
}

func oracleIsNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// oracleMaxOutputFields lists, per endpoint, the fields that request output tokens, in OpenAI's precedence.
var oracleMaxOutputFields = [...][]string{
	ChatCompletions: {"max_completion_tokens", "max_tokens"},
	Completions:     {"max_tokens"},
	Responses:       {"max_output_tokens"},
	Embeddings:      nil,
	AudioSpeech:     nil,
}

func oracleMaxOutput(ep Endpoint, fields map[string]json.RawMessage) (int64, error) {
	for _, name := range oracleMaxOutputFields[ep] {
		raw, ok := fields[name]
		if !ok || oracleIsNull(raw) {
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

func oracleWantsTools(fields map[string]json.RawMessage) (bool, error) {
	for _, name := range []string{"tools", "functions"} {
		raw, ok := fields[name]
		if !ok || oracleIsNull(raw) {
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
	if raw, ok := fields["tool_choice"]; ok && !oracleIsNull(raw) {
		var s string
		if json.Unmarshal(raw, &s) == nil && s == "none" {
			return false, nil
		}
		return true, nil
	}
	return false, nil
}

// oracleMeasure accumulates prompt text size, message count and media presence while walking the body.
type oracleMeasure struct {
	bytes, messages int64
	media           bool
	seen            bool
}

func (m *oracleMeasure) tokens() int64 { return EstimateTokens(m.bytes, m.messages) }

func (m *oracleMeasure) prompt(ep Endpoint, fields map[string]json.RawMessage) error {
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
		if raw, ok := fields["instructions"]; ok && !oracleIsNull(raw) {
			if err := m.text(raw, "instructions"); err != nil {
				return err
			}
		}
	case Embeddings:
		if err := m.textOrList(fields["input"], "input"); err != nil {
			return err
		}
	case AudioSpeech:
		if raw, ok := fields["input"]; ok && !oracleIsNull(raw) {
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

func (m *oracleMeasure) text(raw json.RawMessage, field string) error {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return &FieldError{field}
	}
	m.bytes += int64(len(s))
	return nil
}

// textOrList accepts a string, a list of strings, or token ID lists (counted one token per ID, at three
// bytes each so the estimate stays conservative).
func (m *oracleMeasure) textOrList(raw json.RawMessage, field string) error {
	if len(raw) == 0 || oracleIsNull(raw) {
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

// oracleObject decodes a JSON oracleObject with exact, case-sensitive keys. Struct decoding would fold case and let
// "Content" shadow "content", which the upstream (exact-key) still reads: a gate bypass.
func oracleObject(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, false
	}
	return fields, true
}

// oracleTypeOf reads an oracleObject's "type" string; absent means "".
func oracleTypeOf(fields map[string]json.RawMessage) (string, bool) {
	raw, ok := fields["type"]
	if !ok || oracleIsNull(raw) {
		return "", true
	}
	var t string
	return t, json.Unmarshal(raw, &t) == nil
}

func (m *oracleMeasure) messageList(raw json.RawMessage, field string) error {
	if len(raw) == 0 || oracleIsNull(raw) {
		return nil
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(raw, &msgs); err != nil || len(msgs) == 0 {
		return &FieldError{field}
	}
	m.seen = true
	for _, rawMsg := range msgs {
		msg, ok := oracleObject(rawMsg)
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

// oracleMediaParts are the content-part types that carry images, audio, video or files in the chat and
// Responses dialects. A part also counts as media when it carries one of these as a key, whatever its
// type says, because servers accept typeless media parts.
var oracleMediaParts = map[string]bool{
	"image_url": true, "input_image": true, "input_audio": true, "audio_url": true,
	"video_url": true, "input_video": true, "file": true, "input_file": true,
	"image": true, "image_embeds": true, "audio": true, "video": true,
}

// oracleIsMedia reports whether a content part or Responses item carries media.
func oracleIsMedia(fields map[string]json.RawMessage, typ string) bool {
	if oracleMediaParts[typ] {
		return true
	}
	for k := range fields {
		if oracleMediaParts[k] {
			return true
		}
	}
	return false
}

func (m *oracleMeasure) content(raw json.RawMessage, field string) error {
	if len(raw) == 0 || oracleIsNull(raw) {
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
		p, ok := oracleObject(rawPart)
		if !ok {
			return &FieldError{field}
		}
		typ, ok := oracleTypeOf(p)
		if !ok {
			return &FieldError{field}
		}
		if oracleIsMedia(p, typ) {
			m.media = true
		}
		if text, ok := p["text"]; ok && !oracleIsNull(text) {
			if err := m.text(text, field); err != nil {
				return err
			}
		}
	}
	return nil
}

// responsesInput accepts the Responses API input: a string, or a list of items that are either
// messages ({role, content}) or typed items.
func (m *oracleMeasure) responsesInput(raw json.RawMessage) error {
	if len(raw) == 0 || oracleIsNull(raw) {
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
		it, ok := oracleObject(item)
		if !ok {
			return &FieldError{"input"}
		}
		typ, ok := oracleTypeOf(it)
		if !ok {
			return &FieldError{"input"}
		}
		m.messages++
		if oracleIsMedia(it, typ) {
			m.media = true
			continue
		}
		if text, ok := it["text"]; ok && !oracleIsNull(text) {
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
