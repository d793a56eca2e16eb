package fakevllm

import (
	"encoding/json"

	"github.com/anvil-llm/anvil/engine"
)

// responsesResponder renders the Responses API. A stream is the OpenAI event
// sequence vLLM emits: response.created and response.in_progress at once;
// response.output_item.added and response.content_part.added with the first
// token; one response.output_text.delta per batch of new text; then
// response.output_text.done, response.content_part.done,
// response.output_item.done and response.completed. Every event carries a
// sequence_number; there is no [DONE] frame.
type responsesResponder struct {
	reply
	itemID string
	seq    int
	text   []byte // accumulated output text, for the .done events
}

type responseObject struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	CreatedAt         int64           `json:"created_at"`
	Model             string          `json:"model"`
	Status            string          `json:"status"`
	Output            []outputItem    `json:"output"`
	Usage             *responsesUsage `json:"usage"`
	IncompleteDetails *incomplete     `json:"incomplete_details"`
	MaxOutputTokens   *int            `json:"max_output_tokens"`
	ParallelToolCalls bool            `json:"parallel_tool_calls"`
	Tools             []struct{}      `json:"tools"`
	Error             json.RawMessage `json:"error"`
}

type incomplete struct {
	Reason string `json:"reason"`
}

type outputItem struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Role    string       `json:"role"`
	Status  string       `json:"status"`
	Content []outputText `json:"content"`
}

type outputText struct {
	Type        string     `json:"type"`
	Text        string     `json:"text"`
	Annotations []struct{} `json:"annotations"`
}

type responsesUsage struct {
	InputTokens         int            `json:"input_tokens"`
	InputTokensDetails  map[string]int `json:"input_tokens_details"`
	OutputTokens        int            `json:"output_tokens"`
	OutputTokensDetails map[string]int `json:"output_tokens_details"`
	TotalTokens         int            `json:"total_tokens"`
}

// Stream event payloads.
type (
	responseEvent struct {
		Type           string         `json:"type"`
		SequenceNumber int            `json:"sequence_number"`
		Response       responseObject `json:"response"`
	}
	itemEvent struct {
		Type           string     `json:"type"`
		SequenceNumber int        `json:"sequence_number"`
		OutputIndex    int        `json:"output_index"`
		Item           outputItem `json:"item"`
	}
	partEvent struct {
		Type           string     `json:"type"`
		SequenceNumber int        `json:"sequence_number"`
		ItemID         string     `json:"item_id"`
		OutputIndex    int        `json:"output_index"`
		ContentIndex   int        `json:"content_index"`
		Part           outputText `json:"part"`
	}
	textEvent struct {
		Type           string     `json:"type"`
		SequenceNumber int        `json:"sequence_number"`
		ItemID         string     `json:"item_id"`
		OutputIndex    int        `json:"output_index"`
		ContentIndex   int        `json:"content_index"`
		Delta          *string    `json:"delta,omitempty"`
		Text           *string    `json:"text,omitempty"`
		Logprobs       []struct{} `json:"logprobs"`
	}
)

func (r *responsesResponder) next() int {
	n := r.seq
	r.seq++
	return n
}

func (r *responsesResponder) response(status string, output []outputItem, p *progress) responseObject {
	o := responseObject{
		ID: r.id, Object: "response", CreatedAt: r.created, Model: r.model, Status: status,
		Output: output, Tools: []struct{}{}, Error: jsonNull(),
	}
	if r.g.maxTokensParam > 0 {
		v := r.g.maxTokensParam
		o.MaxOutputTokens = &v
	}
	if p != nil && !r.noUsage {
		o.Usage = &responsesUsage{
			InputTokens: r.g.promptTokens, OutputTokens: p.generated, TotalTokens: r.g.promptTokens + p.generated,
			InputTokensDetails: map[string]int{"cached_tokens": 0}, OutputTokensDetails: map[string]int{"reasoning_tokens": 0},
		}
		if p.reason == engine.FinishLength {
			o.IncompleteDetails = &incomplete{Reason: "max_output_tokens"}
		}
	}
	return o
}

func (r *responsesResponder) item(status, text string, withContent bool) outputItem {
	it := outputItem{ID: r.itemID, Type: "message", Role: "assistant", Status: status, Content: []outputText{}}
	if withContent {
		it.Content = []outputText{textPart(text)}
	}
	return it
}

func textPart(text string) outputText {
	return outputText{Type: "output_text", Text: text, Annotations: []struct{}{}}
}

// finalStatus is "incomplete" when the output hit max_output_tokens.
func finalStatus(p progress) string {
	if p.reason == engine.FinishLength {
		return "incomplete"
	}
	return "completed"
}

func (r *responsesResponder) begin(sw *sseWriter) error {
	for _, typ := range []string{"response.created", "response.in_progress"} {
		ev := responseEvent{Type: typ, SequenceNumber: r.next(), Response: r.response("in_progress", []outputItem{}, nil)}
		if err := sw.event(typ, ev); err != nil {
			return err
		}
	}
	return nil
}

func (r *responsesResponder) first(sw *sseWriter) error {
	added := itemEvent{Type: "response.output_item.added", SequenceNumber: r.next(), Item: r.item("in_progress", "", false)}
	if err := sw.event(added.Type, added); err != nil {
		return err
	}
	part := partEvent{Type: "response.content_part.added", SequenceNumber: r.next(), ItemID: r.itemID, Part: textPart("")}
	return sw.event(part.Type, part)
}

func (r *responsesResponder) delta(sw *sseWriter, text string, _ progress) error {
	if text == "" {
		return nil // EOS carries no text, and the Responses API sends no empty deltas
	}
	r.text = append(r.text, text...)
	ev := textEvent{Type: "response.output_text.delta", SequenceNumber: r.next(), ItemID: r.itemID, Delta: &text, Logprobs: []struct{}{}}
	return sw.event(ev.Type, ev)
}

func (r *responsesResponder) end(sw *sseWriter, p progress) error {
	full := string(r.text)
	textDone := textEvent{Type: "response.output_text.done", SequenceNumber: r.next(), ItemID: r.itemID, Text: &full, Logprobs: []struct{}{}}
	if err := sw.event(textDone.Type, textDone); err != nil {
		return err
	}
	partDone := partEvent{Type: "response.content_part.done", SequenceNumber: r.next(), ItemID: r.itemID, Part: textPart(full)}
	if err := sw.event(partDone.Type, partDone); err != nil {
		return err
	}
	item := r.item("completed", full, true)
	itemDone := itemEvent{Type: "response.output_item.done", SequenceNumber: r.next(), Item: item}
	if err := sw.event(itemDone.Type, itemDone); err != nil {
		return err
	}
	done := responseEvent{Type: "response.completed", SequenceNumber: r.next(), Response: r.response(finalStatus(p), []outputItem{item}, &p)}
	return sw.event(done.Type, done)
}

func (r *responsesResponder) body(text string, p progress) any {
	return r.response(finalStatus(p), []outputItem{r.item("completed", text, true)}, &p)
}
