package relay

import (
	"bytes"

	"github.com/anvil-llm/anvil/internal/jsonscan"
	"github.com/anvil-llm/anvil/router/decisionlog"
)

// Usage: the relay reads the token counts the upstream itself reports, never estimates them. It
// looks in three places, which between them cover the OpenAI endpoints vLLM serves:
//
//   - an ordinary 2xx JSON body's top-level "usage" (chat and text completions, embeddings, a
//     Responses object);
//   - a 2xx event stream's events, each event's top-level "usage": the chunk stream_options.
//     include_usage asks for (the router never adds that option: a caller that wants its stream
//     counted sets it) and, with continuous_usage_stats, every chunk's running total;
//   - a Responses stream's "response" object's "usage", which response.completed (or
//     response.incomplete) carries.
//
// The last report in a stream wins (running totals only grow). A usage object counts when its
// prompt_tokens (or Responses' input_tokens) is a non-negative JSON integer; completion_tokens (or
// output_tokens) is 0 when absent, as an embedding generates none, and must be one too when present.
// Anything else (no usage, null, another shape, a count past decisionlog.MaxTokens, a body that is
// not JSON) leaves the answer's usage unknown. An error answer is never read.
//
// The read costs a bytes.Contains over what is already in memory; only a piece that holds the
// key usage" is walked, with internal/jsonscan, in place and without allocating.

// readUsage returns the usage doc reports at its top level or in its top-level "response" object.
func readUsage(doc []byte) (decisionlog.Usage, bool) {
	// The filter's needle starts with a letter, not the quote: JSON is full of quotes, and bytes.Index
	// checks every occurrence of its needle's first byte.
	if !bytes.Contains(doc, []byte(`usage"`)) {
		return decisionlog.Usage{}, false
	}
	i := jsonscan.SkipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return decisionlog.Usage{}, false
	}
	w := usageWalk{doc: doc}
	end, err := jsonscan.EachMember(doc, i, 0, w.top)
	if err != nil || jsonscan.SkipSpace(doc, end) != len(doc) {
		return decisionlog.Usage{}, false // not one JSON document: no usage is trusted from it
	}
	return w.u, w.ok
}

// noteUsage keeps the usage a stream's event reports: a running total, or the final report; the last
// one stands.
func noteUsage(res *Result, ev event, info eventInfo) {
	if ev.dataLines == 0 || info.done {
		return
	}
	if u, ok := readUsage(ev.data); ok {
		res.Usage = u
	}
}

// usageWalk holds one read's state: the document and the last well-formed usage found in it.
type usageWalk struct {
	doc []byte
	u   decisionlog.Usage
	ok  bool
}

// top is the callback over the document's members.
func (w *usageWalk) top(m jsonscan.Member) (int, error) {
	switch {
	case isKey(m, "usage"):
		return w.usage(m.Value, 1)
	case isKey(m, "response") && m.Value < len(w.doc) && w.doc[m.Value] == '{':
		return jsonscan.EachMember(w.doc, m.Value, 1, w.inResponse)
	}
	return jsonscan.Skip(w.doc, m.Value, 1)
}

// inResponse is the callback over a Responses object's members.
func (w *usageWalk) inResponse(m jsonscan.Member) (int, error) {
	if isKey(m, "usage") {
		return w.usage(m.Value, 2)
	}
	return jsonscan.Skip(w.doc, m.Value, 2)
}

// usage reads the usage value at i (depth containers around it): an object of counts, or anything
// else, which is skipped and leaves what an earlier member reported.
func (w *usageWalk) usage(i, depth int) (int, error) {
	if i >= len(w.doc) || w.doc[i] != '{' {
		return jsonscan.Skip(w.doc, i, depth)
	}
	c := usageCounts{doc: w.doc, depth: depth + 1, prompt: -1, completion: -1}
	end, err := jsonscan.EachMember(w.doc, i, depth, c.member)
	if err == nil && !c.bad && c.prompt >= 0 {
		w.u = decisionlog.Usage{Prompt: c.prompt, Completion: max(c.completion, 0), Reported: true}
		w.ok = true
	}
	return end, err
}

// usageCounts reads one usage object's counts. prompt and completion are -1 until seen; bad says a
// count was not one, which makes the whole object unknown.
type usageCounts struct {
	doc                []byte
	depth              int
	prompt, completion int64
	bad                bool
}

func (c *usageCounts) member(m jsonscan.Member) (int, error) {
	var dst *int64
	switch {
	case isKey(m, "prompt_tokens"), isKey(m, "input_tokens"):
		dst = &c.prompt
	case isKey(m, "completion_tokens"), isKey(m, "output_tokens"):
		dst = &c.completion
	default:
		return jsonscan.Skip(c.doc, m.Value, c.depth)
	}
	end, n, ok := count(c.doc, m.Value)
	if !ok {
		c.bad = true
		return jsonscan.Skip(c.doc, m.Value, c.depth)
	}
	*dst = n
	return end, nil
}

// count reads a token count at doc[i]: a JSON integer, 0..decisionlog.MaxTokens.
func count(doc []byte, i int) (int, int64, bool) {
	end, integer, err := jsonscan.Number(doc, i)
	if err != nil || !integer || doc[i] == '-' || end-i > 16 {
		return end, 0, false
	}
	var n int64
	for _, d := range doc[i:end] {
		n = n*10 + int64(d-'0')
	}
	return end, n, n <= decisionlog.MaxTokens
}

// isKey reports whether a member's key, as written (no escapes), is k.
func isKey(m jsonscan.Member, k string) bool { return m.Flags == 0 && string(m.Key) == k }
