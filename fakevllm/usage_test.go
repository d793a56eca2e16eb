package fakevllm

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// usageCase is one kind of answer and where its usage is.
type usageCase struct {
	name, path, body string
	stream           bool
}

func usageCases() []usageCase {
	return []usageCase{
		{"chat", "/v1/chat/completions", chatReq("count these words", 5, `"ignore_eos":true`), false},
		{"chat stream", "/v1/chat/completions", chatReq("count these words", 5, `"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true`), true},
		{"completion stream", "/v1/completions", `{"model":"` + testModel + `","prompt":"x y z","max_tokens":4,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}`, true},
		{"responses", "/v1/responses", `{"model":"` + testModel + `","input":"count these words","max_output_tokens":6}`, false},
		{"responses stream", "/v1/responses", `{"model":"` + testModel + `","input":"count these words","max_output_tokens":6,"stream":true}`, true},
	}
}

// answerUsage returns the counts an answer reports (Responses' names read as prompt/completion) and
// whether it reported any.
func answerUsage(t *testing.T, c usageCase, body []byte) (prompt, completion int, ok bool) {
	t.Helper()
	docs := []string{string(body)}
	if c.stream {
		frames, err := newSSEReader(strings.NewReader(string(body))).all()
		require.NoError(t, err)
		docs = docs[:0]
		for _, f := range frames {
			docs = append(docs, f.data)
		}
	}
	for _, d := range docs {
		var doc struct {
			Usage    *json.RawMessage `json:"usage"`
			Response *struct {
				Usage *json.RawMessage `json:"usage"`
			} `json:"response"`
		}
		if json.Unmarshal([]byte(d), &doc) != nil {
			continue // [DONE]
		}
		raw := doc.Usage
		if doc.Response != nil {
			raw = doc.Response.Usage
		}
		if raw == nil || string(*raw) == "null" {
			continue
		}
		var u struct {
			Prompt     int `json:"prompt_tokens"`
			Completion int `json:"completion_tokens"`
			Input      int `json:"input_tokens"`
			Output     int `json:"output_tokens"`
		}
		require.NoError(t, json.Unmarshal(*raw, &u))
		prompt, completion, ok = u.Prompt+u.Input, u.Completion+u.Output, true
	}
	return prompt, completion, ok
}

// TestUsageIsTheEnginesCount: every kind of answer reports the tokens the engine itself counted (its
// vllm:prompt_tokens_total and vllm:generation_tokens_total move by exactly the reported amounts),
// and the no_usage fault makes every one of them report none.
func TestUsageIsTheEnginesCount(t *testing.T) {
	for _, noUsage := range []bool{false, true} {
		o := tinyOptions()
		o.Faults = Faults{NoUsage: noUsage}
		m := startLoopback(t, o)
		for _, c := range usageCases() {
			before := m.srv.Metrics()
			resp := post(t, context.Background(), http.DefaultClient, m.url+c.path, c.body)
			require.Equal(t, http.StatusOK, resp.StatusCode, c.name)
			prompt, completion, ok := answerUsage(t, c, readAll(t, resp))
			after := m.srv.Metrics()
			if noUsage {
				assert.False(t, ok, "%s reports no usage", c.name)
				continue
			}
			require.True(t, ok, "%s reports usage", c.name)
			assert.Positive(t, prompt, c.name)
			assert.Equal(t, after.PromptTokens-before.PromptTokens, uint64(prompt), "%s prompt tokens", c.name)
			assert.Equal(t, after.GenerationTokens-before.GenerationTokens, uint64(completion), "%s completion tokens", c.name)
		}
	}
}
