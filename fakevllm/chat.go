package fakevllm

import (
	"encoding/json"

	"github.com/anvil-llm/anvil/engine"
)

// responder renders one endpoint's answer, streamed or ordinary. A stream is
// begin, then first when the first token exists, then one delta per batch of
// new tokens (the last one with the finish), then end. appendText is the
// text of generated tokens [from, to).
type responder interface {
	appendText(dst []byte, from, to int) []byte
	begin(sw *sseWriter) error
	first(sw *sseWriter) error
	delta(sw *sseWriter, text string, p progress) error
	end(sw *sseWriter, p progress) error
	body(text string, p progress) any
}

// reply is what every responder knows about its request.
type reply struct {
	id      string
	created int64
	model   string // the model name vLLM reports (see Server.replyModel)
	g       genRequest
	noUsage bool // the no_usage fault: the answer reports no usage at all
}

// appendText is the text generation endpoints' filler words.
func (r *reply) appendText(dst []byte, from, to int) []byte { return appendTokens(dst, from, to) }

// usage is vLLM's UsageInfo, fields in vLLM's order.
type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	TotalTokens      int `json:"total_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

func (r *reply) usage(generated int) *usage {
	if r.noUsage {
		return nil
	}
	return &usage{PromptTokens: r.g.promptTokens, TotalTokens: r.g.promptTokens + generated, CompletionTokens: generated}
}

// continuous is the per-chunk usage of stream_options.continuous_usage_stats.
func (r *reply) continuous(generated int) *usage {
	if !r.g.continuousUsage {
		return nil
	}
	return r.usage(generated)
}

// jsonNull() is an explicitly set null (vLLM serializes with exclude_unset, so
// fields it sets to None appear as null while unset ones are absent).
func jsonNull() json.RawMessage { return json.RawMessage("null") }

func finishString(p progress) *string {
	if !p.finished {
		return nil
	}
	s := p.reason.String()
	return &s
}

// visibleTokens is how many generated tokens have text: a natural stop's
// last token is EOS, counted in usage but never shown. The cap at
// stopAfter-1 hides it even from a reader that sees it before the finish.
func visibleTokens(p progress) int {
	vis := p.generated
	if p.finished && p.reason == engine.FinishStop && vis > 0 {
		vis--
	}
	if p.stopAfter > 0 {
		vis = min(vis, p.stopAfter-1)
	}
	return vis
}

// --- chat completions ---

type chatResponder struct{ reply }

type chatChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []chatChunkChoice `json:"choices"`
	Usage   *usage            `json:"usage,omitempty"`
}

type chatChunkChoice struct {
	Index        int             `json:"index"`
	Delta        chatDelta       `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
	StopReason   json.RawMessage `json:"stop_reason,omitempty"`
}

type chatDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

func (r *chatResponder) chunk(choices []chatChunkChoice, u *usage) chatChunk {
	return chatChunk{ID: r.id, Object: "chat.completion.chunk", Created: r.created, Model: r.model, Choices: choices, Usage: u}
}

func (r *chatResponder) begin(*sseWriter) error { return nil }

// first is vLLM's role chunk, sent on the first engine output.
func (r *chatResponder) first(sw *sseWriter) error {
	empty := ""
	c := chatChunkChoice{Delta: chatDelta{Role: "assistant", Content: &empty}, Logprobs: jsonNull()}
	return sw.data(r.chunk([]chatChunkChoice{c}, r.continuous(0)))
}

func (r *chatResponder) delta(sw *sseWriter, text string, p progress) error {
	c := chatChunkChoice{Delta: chatDelta{Content: &text}, Logprobs: jsonNull(), FinishReason: finishString(p)}
	if p.finished {
		c.StopReason = jsonNull()
	}
	return sw.data(r.chunk([]chatChunkChoice{c}, r.continuous(p.generated)))
}

func (r *chatResponder) end(sw *sseWriter, p progress) error {
	if r.g.includeUsage && !r.noUsage {
		if err := sw.data(r.chunk([]chatChunkChoice{}, r.usage(p.generated))); err != nil {
			return err
		}
	}
	return sw.done()
}

type chatCompletion struct {
	ID             string          `json:"id"`
	Object         string          `json:"object"`
	Created        int64           `json:"created"`
	Model          string          `json:"model"`
	Choices        []chatChoice    `json:"choices"`
	Usage          *usage          `json:"usage"`
	PromptLogprobs json.RawMessage `json:"prompt_logprobs"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      chatMessage     `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
	StopReason   json.RawMessage `json:"stop_reason"`
}

type chatMessage struct {
	Role             string          `json:"role"`
	Content          string          `json:"content"`
	ReasoningContent json.RawMessage `json:"reasoning_content"`
	ToolCalls        []struct{}      `json:"tool_calls"`
}

func (r *chatResponder) body(text string, p progress) any {
	return chatCompletion{
		ID: r.id, Object: "chat.completion", Created: r.created, Model: r.model,
		Choices: []chatChoice{{
			Message:  chatMessage{Role: "assistant", Content: text, ReasoningContent: jsonNull(), ToolCalls: []struct{}{}},
			Logprobs: jsonNull(), FinishReason: p.reason.String(), StopReason: jsonNull(),
		}},
		Usage: r.usage(p.generated), PromptLogprobs: jsonNull(),
	}
}

// --- completions ---

type completionResponder struct{ reply }

type completionChunk struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *usage             `json:"usage,omitempty"`
}

type completionChoice struct {
	Index          int             `json:"index"`
	Text           string          `json:"text"`
	Logprobs       json.RawMessage `json:"logprobs"`
	FinishReason   *string         `json:"finish_reason"`
	StopReason     json.RawMessage `json:"stop_reason"`
	PromptLogprobs json.RawMessage `json:"prompt_logprobs,omitempty"`
}

func (r *completionResponder) chunk(choices []completionChoice, u *usage) completionChunk {
	return completionChunk{ID: r.id, Object: "text_completion", Created: r.created, Model: r.model, Choices: choices, Usage: u}
}

func (r *completionResponder) begin(*sseWriter) error { return nil }
func (r *completionResponder) first(*sseWriter) error { return nil }

func (r *completionResponder) delta(sw *sseWriter, text string, p progress) error {
	c := completionChoice{Text: text, Logprobs: jsonNull(), FinishReason: finishString(p), StopReason: jsonNull()}
	return sw.data(r.chunk([]completionChoice{c}, r.continuous(p.generated)))
}

func (r *completionResponder) end(sw *sseWriter, p progress) error {
	if r.g.includeUsage && !r.noUsage {
		if err := sw.data(r.chunk([]completionChoice{}, r.usage(p.generated))); err != nil {
			return err
		}
	}
	return sw.done()
}

func (r *completionResponder) body(text string, p progress) any {
	reason := p.reason.String()
	c := completionChoice{Text: text, Logprobs: jsonNull(), FinishReason: &reason, StopReason: jsonNull(), PromptLogprobs: jsonNull()}
	return r.chunk([]completionChoice{c}, r.usage(p.generated))
}
