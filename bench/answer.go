package bench

import (
	"errors"
	"strconv"

	"github.com/anvil-llm/anvil/internal/jsonscan"
)

// Errors of answer parsing; the client maps them to Malformed details.
var (
	errAnswer      = errors.New("not the expected OpenAI JSON")
	errStreamError = errors.New("error event in the stream")
)

// frameKind is what one stream frame means to the measurement.
type frameKind uint8

const (
	frameOther frameKind = iota // role-only, finish without text, usage, lifecycle events
	frameToken                  // carries generated text: a content chunk
	frameEnd                    // the stream's terminal frame: [DONE], response.completed
)

// usage is a response's token accounting, when the server reported it.
type usage struct {
	prompt, output int64
	set            bool
}

// answerParser decodes the frames and bodies of one endpoint. It decodes only what the
// measurement reads, into fields that record presence and emptiness without copying text, and it
// is reused for every frame of a stream.
type answerParser struct {
	ep  Endpoint
	doc answerJSON
}

// answerJSON is the union of the fields read from chat and completion chunks and bodies and from
// Responses events and bodies. scanAnswer fills it exactly as encoding/json would decode into it
// (the json tags and the custom types below are that contract), without reflection.
type answerJSON struct {
	Object   tag           `json:"object"`
	Type     tag           `json:"type"`
	Status   tag           `json:"status"`
	Choices  [1]choiceJSON `json:"choices"` // a JSON array shorter than one leaves the zero choice
	Delta    textFlag      `json:"delta"`
	Usage    usageJSON     `json:"usage"`
	Response responseJSON  `json:"response"`
	Error    present       `json:"error"`
}

type choiceJSON struct {
	Delta   contentJSON `json:"delta"`
	Message contentJSON `json:"message"`
	Text    textFlag    `json:"text"`
}

type contentJSON struct {
	Content textFlag `json:"content"`
}

type responseJSON struct {
	Usage usageJSON `json:"usage"`
}

type usageJSON struct {
	PromptTokens     optInt `json:"prompt_tokens"`
	CompletionTokens optInt `json:"completion_tokens"`
	InputTokens      optInt `json:"input_tokens"`
	OutputTokens     optInt `json:"output_tokens"`
}

func (u usageJSON) read() usage {
	switch {
	case u.CompletionTokens.set:
		return usage{prompt: u.PromptTokens.v, output: u.CompletionTokens.v, set: true}
	case u.OutputTokens.set:
		return usage{prompt: u.InputTokens.v, output: u.OutputTokens.v, set: true}
	}
	return usage{}
}

func (p *answerParser) decode(data []byte) error {
	p.doc = answerJSON{}
	if err := scanAnswer(data, &p.doc); err != nil {
		return errAnswer
	}
	if p.doc.Error {
		return errStreamError
	}
	return nil
}

// frame classifies one stream frame's data.
func (p *answerParser) frame(data []byte) (frameKind, usage, error) {
	if string(data) == "[DONE]" {
		if p.ep == Responses {
			return frameOther, usage{}, nil // the Responses stream ends with response.completed
		}
		return frameEnd, usage{}, nil
	}
	if err := p.decode(data); err != nil {
		return frameOther, usage{}, err
	}
	d := &p.doc
	switch p.ep {
	case Chat, Completions:
		want := tagChatChunk
		if p.ep == Completions {
			want = tagTextCompletion
		}
		if d.Object != want {
			return frameOther, usage{}, errAnswer
		}
		c := d.Choices[0]
		if c.Delta.Content || c.Text {
			return frameToken, d.Usage.read(), nil
		}
		return frameOther, d.Usage.read(), nil
	}
	switch d.Type {
	case tagNone:
		return frameOther, usage{}, errAnswer // every Responses event names its type
	case tagTextDelta:
		if d.Delta {
			return frameToken, usage{}, nil
		}
	case tagCompleted, tagIncomplete:
		return frameEnd, d.Response.Usage.read(), nil
	case tagFailed, tagErrorEvent:
		return frameOther, usage{}, errStreamError
	}
	return frameOther, usage{}, nil
}

// body checks an ordinary (non-streamed) answer and reads its usage and whether it carries text.
func (p *answerParser) body(data []byte) (usage, bool, error) {
	if err := p.decode(data); err != nil {
		return usage{}, false, err
	}
	d := &p.doc
	switch p.ep {
	case Chat:
		if d.Object != tagChatCompletion {
			return usage{}, false, errAnswer
		}
		return d.Usage.read(), bool(d.Choices[0].Message.Content), nil
	case Completions:
		if d.Object != tagTextCompletion {
			return usage{}, false, errAnswer
		}
		return d.Usage.read(), bool(d.Choices[0].Text), nil
	}
	if d.Object != tagResponse {
		return usage{}, false, errAnswer
	}
	switch d.Status {
	case tagStatusCompleted, tagIncomplete:
		return d.Usage.read(), true, nil
	case tagFailed:
		return usage{}, false, errStreamError
	}
	return usage{}, false, errAnswer
}

// tag is a known JSON string value (an object type, an event type or a status), read without
// keeping the string.
type tag uint8

const (
	tagNone tag = iota // absent or null
	tagOther
	tagChatChunk       // chat.completion.chunk
	tagChatCompletion  // chat.completion
	tagTextCompletion  // text_completion
	tagResponse        // response
	tagTextDelta       // response.output_text.delta
	tagCompleted       // response.completed
	tagIncomplete      // response.incomplete, or the status incomplete
	tagFailed          // response.failed, or the status failed
	tagErrorEvent      // error
	tagStatusCompleted // the status completed
)

// maxTagBytes holds the longest tag ("response.output_text.delta") decoded.
const maxTagBytes = 32

func (t *tag) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*t = tagNone
		return nil
	}
	if len(b) < 2 || b[0] != '"' {
		return errAnswer
	}
	end, flags, err := jsonscan.String(b, 0)
	if err != nil || end != len(b) {
		return errAnswer // unreachable: b is a validated string literal
	}
	var buf [maxTagBytes]byte
	s, ok := jsonscan.DecodeSmall(b[1:end-1], flags, buf[:])
	if !ok {
		*t = tagOther // longer than every tag
		return nil
	}
	switch string(s) {
	case "chat.completion.chunk":
		*t = tagChatChunk
	case "chat.completion":
		*t = tagChatCompletion
	case "text_completion":
		*t = tagTextCompletion
	case "response":
		*t = tagResponse
	case "response.output_text.delta":
		*t = tagTextDelta
	case "response.completed":
		*t = tagCompleted
	case "response.incomplete", "incomplete":
		*t = tagIncomplete
	case "response.failed", "failed":
		*t = tagFailed
	case "error":
		*t = tagErrorEvent
	case "completed":
		*t = tagStatusCompleted
	default:
		*t = tagOther
	}
	return nil
}

// textFlag records whether a text field holds a non-empty string; null counts as empty.
type textFlag bool

func (f *textFlag) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		*f = false
	case len(b) >= 2 && b[0] == '"':
		*f = len(b) > 2
	default:
		return errAnswer
	}
	return nil
}

// present records whether a field holds anything but null.
type present bool

func (p *present) UnmarshalJSON(b []byte) error {
	*p = string(b) != "null"
	return nil
}

// optInt is a non-negative integer that may be absent or null.
type optInt struct {
	v   int64
	set bool
}

func (o *optInt) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*o = optInt{}
		return nil
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || v < 0 || v > maxTokens {
		return errAnswer
	}
	*o = optInt{v: v, set: true}
	return nil
}

// maxTokens bounds any token count read from an answer or a raw file: below 2^53, so every count
// survives a JSON round trip.
const maxTokens = 1<<53 - 1
