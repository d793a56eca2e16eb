package fakevllm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// endpoint says which OpenAI surface a request came in on.
type endpoint uint8

const (
	endpointChat endpoint = iota + 1
	endpointCompletions
	endpointResponses
	endpointTranscription
	endpointTranslation
	endpointSpeech
)

// limits are what request validation needs from the server's configuration.
type limits struct {
	maxModelLen   int // prompt + output tokens
	naturalCap    int // upper bound of the natural stop length
	maxMessages   int // chat messages / responses input items
	maxPromptIDs  int // token IDs in a completions prompt
	maxTextFields int // text parts across the request
}

// genRequest is a validated generation request, whatever its endpoint.
type genRequest struct {
	endpoint        endpoint
	model           string // as requested; "" means the default served name
	promptTokens    int
	maxTokens       int // resolved: the request's limit or max_model_len - prompt
	maxTokensParam  int // the request's own limit, 0 when absent
	stopAfter       int // natural stop length, 0 = none (ignore_eos or max 1)
	stream          bool
	includeUsage    bool // stream_options.include_usage
	continuousUsage bool // stream_options.continuous_usage_stats
}

// Common request fields; every one is optional, and null is the same as absent.
type commonBody struct {
	Model         *string        `json:"model"`
	Stream        *bool          `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options"`
	IgnoreEOS     *bool          `json:"ignore_eos"`
	N             *int64         `json:"n"`
}

type streamOptions struct {
	IncludeUsage         *bool `json:"include_usage"`
	ContinuousUsageStats *bool `json:"continuous_usage_stats"`
}

type chatBody struct {
	commonBody
	Messages            json.RawMessage `json:"messages"`
	MaxTokens           *int64          `json:"max_tokens"`
	MaxCompletionTokens *int64          `json:"max_completion_tokens"`
}

type completionBody struct {
	commonBody
	Prompt    json.RawMessage `json:"prompt"`
	MaxTokens *int64          `json:"max_tokens"`
}

type responsesBody struct {
	commonBody
	Input           json.RawMessage `json:"input"`
	Instructions    *string         `json:"instructions"`
	MaxOutputTokens *int64          `json:"max_output_tokens"`
}

// decodeRequest parses and validates one request body for ep. Errors are
// *apiError with status 400; nothing here touches the engine.
func decodeRequest(ep endpoint, body []byte, lim limits) (genRequest, error) {
	if err := checkObject(body); err != nil {
		return genRequest{}, err
	}
	switch ep {
	case endpointChat:
		return decodeChat(body, lim)
	case endpointCompletions:
		return decodeCompletion(body, lim)
	case endpointResponses:
		return decodeResponses(body, lim)
	}
	return genRequest{}, badRequest("", "unknown endpoint")
}

// checkObject rejects anything but exactly one JSON object.
func checkObject(body []byte) error {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return badRequest("", "request body is empty; expected a JSON object")
	}
	if trimmed[0] != '{' {
		return badRequest("", "request body must be a JSON object")
	}
	if !json.Valid(body) {
		return badRequest("", "request body is not valid JSON")
	}
	return nil
}

// unmarshalStrict decodes body (one JSON object) into v and turns type errors into a 400 that
// names the field.
func unmarshalStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil { // checkObject has ruled out trailing data
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := strings.TrimPrefix(te.Field, "commonBody.")
			if field == "" {
				field = "body"
			}
			return badRequest(field, "field %s: expected %s, got JSON %s", field, jsonKind(te.Type), te.Value)
		}
		return badRequest("", "request body is not valid JSON")
	}
	return nil
}

func decodeChat(body []byte, lim limits) (genRequest, error) {
	var b chatBody
	if err := unmarshalStrict(body, &b); err != nil {
		return genRequest{}, err
	}
	p := prompt{hash: newPromptHasher()}
	if err := p.addMessages("messages", b.Messages, lim, "text"); err != nil {
		return genRequest{}, err
	}
	p.tokens += chatPrimerTokens
	param, limit := "max_tokens", b.MaxTokens
	if b.MaxCompletionTokens != nil { // vLLM: max_completion_tokens wins over the deprecated max_tokens
		param, limit = "max_completion_tokens", b.MaxCompletionTokens
	}
	return finish(endpointChat, b.commonBody, p, "messages", param, limit, lim)
}

func decodeCompletion(body []byte, lim limits) (genRequest, error) {
	var b completionBody
	if err := unmarshalStrict(body, &b); err != nil {
		return genRequest{}, err
	}
	p := prompt{hash: newPromptHasher()}
	if err := p.addCompletionPrompt(b.Prompt, lim); err != nil {
		return genRequest{}, err
	}
	return finish(endpointCompletions, b.commonBody, p, "prompt", "max_tokens", b.MaxTokens, lim)
}

func decodeResponses(body []byte, lim limits) (genRequest, error) {
	var b responsesBody
	if err := unmarshalStrict(body, &b); err != nil {
		return genRequest{}, err
	}
	p := prompt{hash: newPromptHasher()}
	if b.Instructions != nil {
		p.addText("system", *b.Instructions)
		p.tokens += chatMessageTokens
	}
	if err := p.addResponsesInput(b.Input, lim); err != nil {
		return genRequest{}, err
	}
	p.tokens += chatPrimerTokens
	return finish(endpointResponses, b.commonBody, p, "input", "max_output_tokens", b.MaxOutputTokens, lim)
}

// finish applies the checks common to every endpoint, in vLLM's order.
func finish(ep endpoint, c commonBody, p prompt, promptParam, limitParam string, limit *int64, lim limits) (genRequest, error) {
	g := genRequest{endpoint: ep, promptTokens: p.tokens}
	if c.Model != nil {
		g.model = *c.Model
	}
	if c.N != nil && *c.N != 1 {
		if *c.N < 1 {
			return g, badRequest("n", "n must be at least 1, got %d.", *c.N)
		}
		return g, badRequest("n", "n > 1 is not supported by this server")
	}
	if g.promptTokens >= lim.maxModelLen {
		return g, badRequest(promptParam, "This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.",
			lim.maxModelLen, g.promptTokens)
	}
	room := lim.maxModelLen - g.promptTokens
	g.maxTokens = room
	if limit != nil {
		v := *limit
		if v < 1 {
			return g, badRequest(limitParam, "%s must be at least 1, got %d.", limitParam, v)
		}
		if v > int64(room) {
			return g, badRequest(limitParam, "This model's maximum context length is %d tokens. However, you requested %s tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
				lim.maxModelLen, addedTokens(int64(g.promptTokens), v), g.promptTokens, v)
		}
		g.maxTokens, g.maxTokensParam = int(v), int(v)
	}
	if c.IgnoreEOS == nil || !*c.IgnoreEOS {
		g.stopAfter = naturalStop(p.hash.sum(), g.maxTokens, lim.naturalCap)
	}
	g.stream = c.Stream != nil && *c.Stream
	if o := c.StreamOptions; o != nil {
		if !g.stream {
			return g, badRequest("stream_options", "Stream options can only be defined when `stream=True`.")
		}
		g.includeUsage = o.IncludeUsage != nil && *o.IncludeUsage
		g.continuousUsage = g.includeUsage && o.ContinuousUsageStats != nil && *o.ContinuousUsageStats
	}
	return g, nil
}

// addedTokens formats a+b without overflowing (b may be near MaxInt64).
func addedTokens(a, b int64) string {
	if b > (1<<62) || a > (1<<62) {
		return fmt.Sprintf("more than %d", int64(1)<<62)
	}
	return fmt.Sprint(a + b)
}

// jsonKind names a Go type as the JSON value it decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}
