package bench

import (
	"encoding/json"
	"strconv"
	"strings"
)

// BytesPerToken is how much prompt text stands for one prompt token: four bytes of plain ASCII
// prose, the usual average of English text under BPE tokenizers, the fake vLLM's own estimate and
// the length of the simulator's prompt bodies. A real tokenizer counts these words somewhat
// differently, and the server adds its chat template; reports take the server's prompt count from
// usage when it is given.
const BytesPerToken = 4

// proseUnit is repeated to make prompts: lower-case words and spaces, nothing JSON must escape.
const proseUnit = "the quick brown fox jumps over the lazy dog while the scheduler counts leases "

// bodies builds request bodies. The prompt text is one shared string sliced to each length, so a
// body costs its small JSON frame, not a copy of its prompt.
type bodies struct {
	prose []byte // at least the longest prompt; shared by every body and never written
}

func newBodies(maxPromptTokens int) *bodies {
	n := max(maxPromptTokens, 1) * BytesPerToken
	return &bodies{prose: []byte(strings.Repeat(proseUnit, n/len(proseUnit)+1)[:n])}
}

// parts returns a request body as its three parts (frame head, prompt, frame tail); their
// concatenation is one JSON object. The prompt is promptTokens*BytesPerToken bytes of prose.
func (b *bodies) parts(e Endpoint, model string, promptTokens, maxTokens int, stream, ignoreEOS bool) (head, prompt, tail []byte) {
	q, _ := json.Marshal(model) // a string always marshals
	head = make([]byte, 0, 64+len(q))
	head = append(head, `{"model":`...)
	head = append(head, q...)
	switch e {
	case Chat:
		head = append(head, `,"messages":[{"role":"user","content":"`...)
	case Completions:
		head = append(head, `,"prompt":"`...)
	case Responses:
		head = append(head, `,"input":"`...)
	}
	tail = make([]byte, 0, 128)
	if e == Chat {
		tail = append(tail, `"}]`...)
	} else {
		tail = append(tail, '"')
	}
	if e == Responses {
		tail = append(tail, `,"max_output_tokens":`...)
	} else {
		tail = append(tail, `,"max_tokens":`...)
	}
	tail = strconv.AppendInt(tail, int64(maxTokens), 10)
	if ignoreEOS {
		tail = append(tail, `,"ignore_eos":true`...)
	}
	if stream {
		tail = append(tail, `,"stream":true`...)
		if e != Responses { // the Responses stream reports usage in response.completed
			tail = append(tail, `,"stream_options":{"include_usage":true}`...)
		}
	}
	tail = append(tail, '}')
	n := min(max(promptTokens, 1)*BytesPerToken, len(b.prose))
	return head, b.prose[:n:n], tail
}
