package fakevllm

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// prompt is the decoded prompt: its token estimate and a hash of its text.
type prompt struct {
	tokens int
	hash   promptHasher
	texts  int // text fields seen, bounded by limits.maxTextFields
}

func (p *prompt) addText(role, s string) {
	p.hash.add(role, s)
	p.tokens += EstimateTextTokens(s)
	p.texts++
}

// messageBody is one chat message or one Responses input item.
type messageBody struct {
	Type    *string         `json:"type"`
	Role    *string         `json:"role"`
	Content json.RawMessage `json:"content"`
}

type contentPart struct {
	Type *string `json:"type"`
	Text *string `json:"text"`
}

// addMessages adds a non-empty array of messages; textType is the content
// part type that carries text ("text" for chat, "input_text" for Responses).
func (p *prompt) addMessages(param string, raw json.RawMessage, lim limits, textTypes ...string) error {
	if isNull(raw) {
		return badRequest(param, "field required: %s", param)
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return badRequest(param, "%s must be an array of message objects", param)
	}
	if len(msgs) == 0 {
		return badRequest(param, "%s must contain at least one message", param)
	}
	if len(msgs) > lim.maxMessages {
		return badRequest(param, "%s has more than %d messages", param, lim.maxMessages)
	}
	for i, m := range msgs {
		if err := p.addMessage(fmt.Sprintf("%s[%d]", param, i), m, lim, textTypes); err != nil {
			return err
		}
	}
	return nil
}

func (p *prompt) addMessage(param string, raw json.RawMessage, lim limits, textTypes []string) error {
	var m messageBody
	if err := json.Unmarshal(raw, &m); err != nil || isNull(raw) || !isObject(raw) {
		return badRequest(param, "%s must be an object with a string role and a content", param)
	}
	if m.Type != nil && *m.Type != "message" {
		return badRequest(param+".type", "%s.type %q is not supported; only message items are", param, truncateString(*m.Type, 40))
	}
	if m.Role == nil || *m.Role == "" {
		return badRequest(param+".role", "%s.role is required and must be a non-empty string", param)
	}
	p.tokens += chatMessageTokens
	return p.addContent(param+".content", *m.Role, m.Content, lim, textTypes)
}

// addContent adds a message content: a string, an array of text parts, or
// null (an assistant turn that only called tools).
func (p *prompt) addContent(param, role string, raw json.RawMessage, lim limits, textTypes []string) error {
	if isNull(raw) {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		p.addText(role, s)
		return p.checkTexts(param, lim)
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return badRequest(param, "%s must be a string or an array of content parts", param)
	}
	for i, part := range parts {
		if part.Type == nil || !oneOf(*part.Type, textTypes) || part.Text == nil {
			return badRequest(fmt.Sprintf("%s[%d]", param, i), "%s[%d] must be a text part {\"type\": %q, \"text\": ...}; this model accepts text only",
				param, i, textTypes[0])
		}
		p.addText(role, *part.Text)
		if err := p.checkTexts(param, lim); err != nil {
			return err
		}
	}
	return nil
}

func (p *prompt) checkTexts(param string, lim limits) error {
	if p.texts > lim.maxTextFields {
		return badRequest(param, "request has more than %d text fields", lim.maxTextFields)
	}
	return nil
}

// addCompletionPrompt accepts what vLLM accepts for one prompt: a string, an
// array of token IDs, or a one-element batch of either.
func (p *prompt) addCompletionPrompt(raw json.RawMessage, lim limits) error {
	if isNull(raw) {
		return badRequest("prompt", "field required: prompt")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return p.addPromptString(s)
	}
	var ids []int64
	if json.Unmarshal(raw, &ids) == nil {
		return p.addPromptIDs(ids, lim)
	}
	var batch []json.RawMessage
	if err := json.Unmarshal(raw, &batch); err != nil {
		return badRequest("prompt", "prompt must be a string, an array of token IDs, or a one-element array of either")
	}
	if len(batch) != 1 {
		return badRequest("prompt", "batched prompts (%d) are not supported by this server; send one prompt per request", len(batch))
	}
	if json.Unmarshal(batch[0], &s) == nil {
		return p.addPromptString(s)
	}
	if json.Unmarshal(batch[0], &ids) == nil {
		return p.addPromptIDs(ids, lim)
	}
	return badRequest("prompt", "prompt must be a string, an array of token IDs, or a one-element array of either")
}

func (p *prompt) addPromptString(s string) error {
	if s == "" {
		return badRequest("prompt", "prompt must not be empty")
	}
	p.addText("prompt", s)
	return nil
}

func (p *prompt) addPromptIDs(ids []int64, lim limits) error {
	if len(ids) == 0 {
		return badRequest("prompt", "prompt must not be empty")
	}
	if len(ids) > lim.maxPromptIDs {
		return badRequest("prompt", "prompt has more than %d token IDs", lim.maxPromptIDs)
	}
	var buf [20]byte
	for _, id := range ids {
		if id < 0 {
			return badRequest("prompt", "token ID %d is negative", id)
		}
		p.hash.add(string(fmt.Appendf(buf[:0], "%d", id)))
	}
	p.tokens += len(ids)
	return nil
}

// addResponsesInput accepts a string or an array of message items.
func (p *prompt) addResponsesInput(raw json.RawMessage, lim limits) error {
	if isNull(raw) {
		return badRequest("input", "field required: input")
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return badRequest("input", "input must not be empty")
		}
		p.addText("user", s)
		p.tokens += chatMessageTokens
		return nil
	}
	return p.addMessages("input", raw, lim, "input_text", "output_text", "text")
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

func isObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

func oneOf(s string, set []string) bool {
	for _, v := range set {
		if s == v {
			return true
		}
	}
	return false
}
