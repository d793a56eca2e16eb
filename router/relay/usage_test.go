package relay

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

func reported(p, c int64) decisionlog.Usage {
	return decisionlog.Usage{Prompt: p, Completion: c, Reported: true}
}

// TestReadUsage: the counts come from the top-level usage (or a Responses object's), exactly as the
// upstream wrote them, and anything else is unknown.
func TestReadUsage(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      decisionlog.Usage
	}{
		{"chat", `{"id":"c","choices":[],"usage":{"prompt_tokens":12,"total_tokens":46,"completion_tokens":34}}`, reported(12, 34)},
		{"usage first", `{"usage":{"prompt_tokens":1,"completion_tokens":2},"choices":[{"text":"x"}]}`, reported(1, 2)},
		{"embedding", `{"data":[{"embedding":[0.1,-2e-3]}],"usage":{"prompt_tokens":7,"total_tokens":7}}`, reported(7, 0)},
		{"responses object", `{"object":"response","usage":{"input_tokens":5,"output_tokens":9,"total_tokens":14}}`, reported(5, 9)},
		{"response.completed", `{"type":"response.completed","response":{"id":"r","output":[],"usage":{"input_tokens":3,"output_tokens":4}}}`, reported(3, 4)},
		{"spaces", " { \"usage\" : { \"prompt_tokens\" : 2 , \"completion_tokens\" : 3 } } ", reported(2, 3)},
		{"zero", `{"usage":{"prompt_tokens":0,"completion_tokens":0}}`, reported(0, 0)},
		{"max", `{"usage":{"prompt_tokens":9007199254740991,"completion_tokens":1}}`, reported(decisionlog.MaxTokens, 1)},
		{"last of duplicates", `{"usage":{"prompt_tokens":1,"completion_tokens":1},"usage":{"prompt_tokens":2,"completion_tokens":2}}`, reported(2, 2)},
		{"null after a report", `{"usage":{"prompt_tokens":1,"completion_tokens":1},"usage":null}`, reported(1, 1)},
		// Unknown.
		{"none", `{"id":"c","choices":[]}`, decisionlog.Usage{}},
		{"null", `{"usage":null}`, decisionlog.Usage{}},
		{"created event", `{"type":"response.created","response":{"usage":null}}`, decisionlog.Usage{}},
		{"no prompt", `{"usage":{"completion_tokens":3}}`, decisionlog.Usage{}},
		{"audio duration", `{"text":"hi","usage":{"type":"duration","seconds":3}}`, decisionlog.Usage{}},
		{"negative", `{"usage":{"prompt_tokens":-1,"completion_tokens":3}}`, decisionlog.Usage{}},
		{"fraction", `{"usage":{"prompt_tokens":1.5,"completion_tokens":3}}`, decisionlog.Usage{}},
		{"exponent", `{"usage":{"prompt_tokens":1e2,"completion_tokens":3}}`, decisionlog.Usage{}},
		{"string count", `{"usage":{"prompt_tokens":"1","completion_tokens":3}}`, decisionlog.Usage{}},
		{"bad completion", `{"usage":{"prompt_tokens":1,"completion_tokens":null}}`, decisionlog.Usage{}},
		{"past the bound", `{"usage":{"prompt_tokens":9007199254740992,"completion_tokens":1}}`, decisionlog.Usage{}},
		{"huge", `{"usage":{"prompt_tokens":123456789012345678901234567890,"completion_tokens":1}}`, decisionlog.Usage{}},
		{"nested elsewhere", `{"choices":[{"usage":{"prompt_tokens":1,"completion_tokens":1}}]}`, decisionlog.Usage{}},
		{"in a string", `{"content":"\"usage\":{\"prompt_tokens\":1}"}`, decisionlog.Usage{}},
		{"escaped key", `{"us\u0061ge":{"prompt_tokens":1,"completion_tokens":1}}`, decisionlog.Usage{}},
		{"not json", `{"usage":{"prompt_tokens":1,"completion_tokens":1}`, decisionlog.Usage{}},
		{"trailing data", `{"usage":{"prompt_tokens":1,"completion_tokens":1}}0`, decisionlog.Usage{}},
		{"array", `[{"usage":{"prompt_tokens":1,"completion_tokens":1}}]`, decisionlog.Usage{}},
		{"empty", ``, decisionlog.Usage{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := readUsage([]byte(tc.doc))
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.want.Reported, ok)
		})
	}
}

// TestReadUsageAllocatesNothing: the read runs on every relayed body and event.
func TestReadUsageAllocatesNothing(t *testing.T) {
	doc := ordinaryUsage1KiB()
	ev := responses64()
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		_, _ = readUsage(doc)
		_, _ = readUsage(ev[bytes.LastIndex(ev, []byte("data: "))+6:])
	}))
}

// FuzzReadUsage holds readUsage to encoding/json: whatever it reports, json.Unmarshal reads the same
// counts from the same place; and it never reports from a document json.Valid refuses.
func FuzzReadUsage(f *testing.F) {
	for _, s := range []string{`{"usage":{"prompt_tokens":12,"completion_tokens":34}}`,
		`{"type":"response.completed","response":{"usage":{"input_tokens":3,"output_tokens":4}}}`,
		`{"usage":{"prompt_tokens":7}}`, `{"usage":null}`, `{"usage":{"prompt_tokens":-0,"completion_tokens":1e1}}`,
		`{"usage":1,"usage":{"prompt_tokens":1,"completion_tokens":1}}`, string(ordinaryUsage1KiB())} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		got, ok := readUsage(doc)
		if !ok {
			return
		}
		require.True(t, json.Valid(doc))
		var top map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(doc, &top))
		// The escaped-key and duplicate-key cases encoding/json reads differently are not reported
		// from: the fuzz only checks the counts of plain documents.
		raw := top["usage"]
		if resp, found := top["response"]; found && (len(raw) == 0 || string(raw) == "null") {
			var inner map[string]json.RawMessage
			if json.Unmarshal(resp, &inner) == nil {
				raw = inner["usage"]
			}
		}
		var u map[string]json.RawMessage
		if json.Unmarshal(raw, &u) != nil {
			return // reported from an earlier duplicate key, which encoding/json overwrote
		}
		p, c := u["prompt_tokens"], u["completion_tokens"]
		if p == nil {
			p, c = u["input_tokens"], u["output_tokens"]
		}
		var pn, cn int64
		if json.Unmarshal(p, &pn) != nil || pn != got.Prompt {
			return // duplicates or mixed spellings: the last one the walk saw wins
		}
		if c != nil {
			require.NoError(t, json.Unmarshal(c, &cn))
		}
		assert.LessOrEqual(t, got.Prompt, int64(decisionlog.MaxTokens))
		assert.GreaterOrEqual(t, got.Completion, int64(0))
	})
}

// TestRelayReadsUsage: the relay's Result carries the upstream's own counts for an ordinary body, a
// chat stream's include_usage chunk and a Responses stream's response.completed; nothing for an error
// answer or a stream that reports none.
func TestRelayReadsUsage(t *testing.T) {
	for _, tc := range []struct {
		name        string
		status      int
		contentType string
		body        string
		stream      bool
		want        decisionlog.Usage
	}{
		{"ordinary", 200, "application/json", string(ordinaryUsage1KiB()), false, reported(12, 128)},
		{"stream with include_usage", 200, "text/event-stream", string(sse64Usage()), true, reported(12, 64)},
		{"responses stream", 200, "text/event-stream", string(responses64()), true, reported(12, 64)},
		{"stream without usage", 200, "text/event-stream", string(sse64()), true, decisionlog.Usage{}},
		{"ordinary without usage", 200, "application/json", string(ordinary1KiB()), false, decisionlog.Usage{}},
		{"error answer", 400, "application/json", `{"error":{"message":"x"},"usage":{"prompt_tokens":1,"completion_tokens":1}}`, false, decisionlog.Usage{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUpstream(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			})
			f := newFront(t, New(nil, Options{}), baseUpstream(u, tc.stream))
			resp, body, res := f.call(t)
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.Equal(t, tc.body, body, "relayed unchanged")
			assert.Equal(t, tc.want, res.Usage)
		})
	}
}
