package sim

import (
	"strconv"
	"strings"

	"github.com/anvil-llm/anvil/router/request"
)

// bytesPerToken is how much English text one real token stands for. Prompt bodies carry that much
// text per token, so the router's conservative estimate (one token per three bytes) overestimates
// them as it would in production.
const bytesPerToken = 4

// ChatTemplateTokens are the tokens a member's chat template adds to the prompt of the virtual
// caller's chat completion (one user message): the fake vLLM counts 3 for the template's primer and
// 4 per message, and its engine prefills them with the text, as vLLM prefills its chat template's
// tokens. The module root's simfake_test.go pins the number against a real fakevllm server.
const ChatTemplateTokens = 7

// parseMemo runs the real request parser, request.Parse, on real chat-completion bodies.
// Parse is pure and measures the prompt and the output request independently, so the sim
// parses one body per distinct prompt length and one per distinct (max_tokens, stream) pair and
// remembers the results: a request's gate inputs are the parser's own outputs for its two halves.
// Parsing a multi-kilobyte body costs tens of microseconds; memoizing keeps the hour-long
// scenarios fast without bypassing the parser. The maps are only ever looked up, never iterated.
type parseMemo struct {
	alias   string
	prompts map[int]promptParse
	outputs map[int64]outputParse
}

type promptParse struct {
	tokens int64
	media  bool
	err    error
}

type outputParse struct {
	maxOutput int64
	stream    bool
	tools     bool
	err       error
}

func newParseMemo(alias string) parseMemo {
	return parseMemo{alias: alias, prompts: map[int]promptParse{}, outputs: map[int64]outputParse{}}
}

// request returns the parsed request for a prompt of prompt tokens asking for output tokens.
func (p *parseMemo) request(prompt, output int, stream bool) (request.Request, error) {
	pp, ok := p.prompts[prompt]
	if !ok {
		pp = p.parsePrompt(prompt)
		p.prompts[prompt] = pp
	}
	if pp.err != nil {
		return request.Request{}, pp.err
	}
	key := int64(output) << 1
	if stream {
		key |= 1
	}
	op, ok := p.outputs[key]
	if !ok {
		op = p.parseOutput(output, stream)
		p.outputs[key] = op
	}
	if op.err != nil {
		return request.Request{}, op.err
	}
	return request.Request{
		Endpoint: request.ChatCompletions, Model: p.alias, Stream: op.stream,
		PromptTokens: pp.tokens, MaxOutput: op.maxOutput, Tools: op.tools, Media: pp.media,
	}, nil
}

func (p *parseMemo) parsePrompt(tokens int) promptParse {
	var b strings.Builder
	b.WriteString(`{"model":`)
	b.WriteString(strconv.Quote(p.alias))
	b.WriteString(`,"messages":[{"role":"user","content":"`)
	b.WriteString(promptText(tokens * bytesPerToken))
	b.WriteString(`"}]}`)
	r, err := request.Parse(request.ChatCompletions, []byte(b.String()))
	return promptParse{tokens: r.PromptTokens, media: r.Media, err: err}
}

func (p *parseMemo) parseOutput(tokens int, stream bool) outputParse {
	body := `{"model":` + strconv.Quote(p.alias) + `,"stream":` + strconv.FormatBool(stream) +
		`,"max_tokens":` + strconv.Itoa(tokens) + `,"messages":[{"role":"user","content":""}]}`
	r, err := request.Parse(request.ChatCompletions, []byte(body))
	return outputParse{maxOutput: r.MaxOutput, stream: r.Stream, tools: r.Tools, err: err}
}

// promptText is n bytes of plain ASCII prose.
func promptText(n int) string {
	const words = "the quick brown fox jumps over the lazy dog while the scheduler counts leases "
	var b strings.Builder
	b.Grow(n)
	for b.Len() < n {
		b.WriteString(words[:min(len(words), n-b.Len())])
	}
	return b.String()
}
