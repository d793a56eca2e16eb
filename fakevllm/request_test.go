package fakevllm

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testLimits() limits {
	return limits{maxModelLen: 1024, naturalCap: 256, maxMessages: 8, maxPromptIDs: 1024, maxTextFields: 16}
}

func TestEstimateTextTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{{"", 0}, {"a", 1}, {"abcd", 1}, {"abcde", 2}, {strings.Repeat("x", 400), 100}, {"héllo", 2}} {
		assert.Equal(t, tc.want, EstimateTextTokens(tc.in), "%q", tc.in)
	}
}

func TestDecodeValid(t *testing.T) {
	lim := testLimits()
	tests := []struct {
		name       string
		ep         endpoint
		body       string
		prompt     int // expected prompt tokens
		max        int
		param      int
		stream     bool
		usage      bool
		continuous bool
		ignoreEOS  bool
	}{
		{name: "chat string content", ep: endpointChat, body: `{"model":"m","messages":[{"role":"user","content":"abcdefgh"}]}`,
			prompt: chatPrimerTokens + chatMessageTokens + 2, max: 1024 - 9},
		{name: "chat parts and null content", ep: endpointChat,
			body:   `{"messages":[{"role":"system","content":[{"type":"text","text":"abcd"},{"type":"text","text":"e"}]},{"role":"assistant","content":null}],"max_tokens":10}`,
			prompt: chatPrimerTokens + 2*chatMessageTokens + 2, max: 10, param: 10},
		{name: "max_completion_tokens wins", ep: endpointChat,
			body:   `{"messages":[{"role":"user","content":"hi"}],"max_tokens":10,"max_completion_tokens":20,"ignore_eos":true}`,
			prompt: chatPrimerTokens + chatMessageTokens + 1, max: 20, param: 20, ignoreEOS: true},
		{name: "chat stream with usage", ep: endpointChat,
			body:   `{"messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`,
			prompt: chatPrimerTokens + chatMessageTokens + 1, max: 1024 - 8, stream: true, usage: true, continuous: true},
		{name: "nulls are absent", ep: endpointChat,
			body:   `{"model":null,"messages":[{"role":"user","content":"hi"}],"max_tokens":null,"stream":null,"n":null}`,
			prompt: chatPrimerTokens + chatMessageTokens + 1, max: 1024 - 8},
		{name: "completion string", ep: endpointCompletions, body: `{"prompt":"abcdefghi","max_tokens":5}`, prompt: 3, max: 5, param: 5},
		{name: "completion token IDs", ep: endpointCompletions, body: `{"prompt":[1,2,3,4,5],"max_tokens":5,"n":1}`, prompt: 5, max: 5, param: 5},
		{name: "completion one-element batch", ep: endpointCompletions, body: `{"prompt":["abcd"]}`, prompt: 1, max: 1023},
		{name: "completion one-element ID batch", ep: endpointCompletions, body: `{"prompt":[[9,9]]}`, prompt: 2, max: 1022},
		{name: "responses string", ep: endpointResponses, body: `{"input":"abcd","max_output_tokens":7}`,
			prompt: chatPrimerTokens + chatMessageTokens + 1, max: 7, param: 7},
		{name: "responses items and instructions", ep: endpointResponses,
			body:   `{"instructions":"abcd","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"abcdefgh"}]},{"role":"assistant","content":"x"}]}`,
			prompt: chatPrimerTokens + 3*chatMessageTokens + 1 + 2 + 1, max: 1024 - (chatPrimerTokens + 3*chatMessageTokens + 4)},
		{name: "unknown fields are accepted, as vLLM does", ep: endpointChat,
			body:   `{"messages":[{"role":"user","content":"hi","name":"x"}],"temperature":0.2,"tools":[]}`,
			prompt: chatPrimerTokens + chatMessageTokens + 1, max: 1024 - 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := decodeRequest(tc.ep, []byte(tc.body), lim)
			require.NoError(t, err)
			assert.Equal(t, tc.prompt, g.promptTokens, "prompt tokens")
			assert.Equal(t, tc.max, g.maxTokens, "max tokens")
			assert.Equal(t, tc.param, g.maxTokensParam)
			assert.Equal(t, tc.stream, g.stream)
			assert.Equal(t, tc.usage, g.includeUsage)
			assert.Equal(t, tc.continuous, g.continuousUsage)
			if tc.ignoreEOS {
				assert.Zero(t, g.stopAfter)
			} else {
				assert.GreaterOrEqual(t, g.stopAfter, 1)
				assert.Less(t, g.stopAfter, g.maxTokens)
			}
		})
	}
}

func TestNaturalStopDeterministicAndBounded(t *testing.T) {
	a, err := decodeRequest(endpointChat, []byte(`{"messages":[{"role":"user","content":"same"}],"max_tokens":100}`), testLimits())
	require.NoError(t, err)
	b, err := decodeRequest(endpointChat, []byte(`{"stream":true,"messages":[{"role":"user","content":"same"}],"max_tokens":100}`), testLimits())
	require.NoError(t, err)
	assert.Equal(t, a.stopAfter, b.stopAfter, "stream or not, the same prompt stops at the same length")
	for h := range uint64(500) {
		for _, max := range []int{2, 3, 10, 100, 1000} {
			n := naturalStop(h, max, 256)
			assert.GreaterOrEqual(t, n, 1)
			assert.Less(t, n, max)
			assert.LessOrEqual(t, n, 256)
		}
	}
	assert.Zero(t, naturalStop(42, 1, 256), "max 1 cannot stop naturally before it")
}

func TestDecodeInvalid(t *testing.T) {
	long := `"` + strings.Repeat("abcd", 1030) + `"`
	tests := []struct {
		name  string
		ep    endpoint
		body  string
		param string
		msg   string
	}{
		{"empty body", endpointChat, ``, "", "empty"},
		{"not an object", endpointChat, `[1]`, "", "JSON object"},
		{"malformed JSON", endpointChat, `{"messages":[`, "", "not valid JSON"},
		{"trailing data", endpointChat, `{"messages":[{"role":"user","content":"x"}]} {}`, "", "not valid JSON"},
		{"missing messages", endpointChat, `{"model":"m"}`, "messages", "field required"},
		{"null messages", endpointChat, `{"messages":null}`, "messages", "field required"},
		{"messages not an array", endpointChat, `{"messages":"hi"}`, "messages", "array"},
		{"empty messages", endpointChat, `{"messages":[]}`, "messages", "at least one"},
		{"too many messages", endpointChat, `{"messages":[` + strings.Repeat(`{"role":"u","content":"x"},`, 8) + `{"role":"u","content":"x"}]}`, "messages", "more than 8"},
		{"message not an object", endpointChat, `{"messages":[3]}`, "messages[0]", "object"},
		{"missing role", endpointChat, `{"messages":[{"content":"x"}]}`, "messages[0].role", "role"},
		{"role wrong type", endpointChat, `{"messages":[{"role":5,"content":"x"}]}`, "messages[0]", "object"},
		{"content wrong type", endpointChat, `{"messages":[{"role":"user","content":5}]}`, "messages[0].content", "string or an array"},
		{"image part", endpointChat, `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, "messages[0].content[0]", "text only"},
		{"max_tokens wrong type", endpointChat, `{"messages":[{"role":"user","content":"x"}],"max_tokens":"ten"}`, "max_tokens", "expected an integer"},
		{"max_tokens fraction", endpointChat, `{"messages":[{"role":"user","content":"x"}],"max_tokens":1.5}`, "max_tokens", "expected an integer"},
		{"max_tokens zero", endpointChat, `{"messages":[{"role":"user","content":"x"}],"max_tokens":0}`, "max_tokens", "at least 1, got 0"},
		{"max_tokens negative", endpointChat, `{"messages":[{"role":"user","content":"x"}],"max_tokens":-5}`, "max_tokens", "at least 1, got -5"},
		{"max_tokens absurd", endpointChat, `{"messages":[{"role":"user","content":"x"}],"max_tokens":9223372036854775807}`, "max_tokens", "maximum context length is 1024"},
		{"max_tokens overflow", endpointChat, `{"messages":[{"role":"user","content":"x"}],"max_tokens":1e30}`, "max_tokens", "expected an integer"},
		{"max_completion_tokens negative", endpointChat, `{"messages":[{"role":"user","content":"x"}],"max_completion_tokens":-1}`, "max_completion_tokens", "at least 1"},
		{"stream wrong type", endpointChat, `{"messages":[{"role":"user","content":"x"}],"stream":"yes"}`, "stream", "expected a boolean"},
		{"stream_options without stream", endpointChat, `{"messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}}`, "stream_options", "stream=True"},
		{"n above one", endpointChat, `{"messages":[{"role":"user","content":"x"}],"n":2}`, "n", "not supported"},
		{"n zero", endpointChat, `{"messages":[{"role":"user","content":"x"}],"n":0}`, "n", "at least 1"},
		{"model wrong type", endpointChat, `{"model":1,"messages":[{"role":"user","content":"x"}]}`, "model", "expected a string"},
		{"prompt too long", endpointChat, `{"messages":[{"role":"user","content":` + long + `}]}`, "messages", "input tokens"},
		{"missing prompt", endpointCompletions, `{"max_tokens":3}`, "prompt", "field required"},
		{"empty prompt", endpointCompletions, `{"prompt":""}`, "prompt", "must not be empty"},
		{"empty ID prompt", endpointCompletions, `{"prompt":[]}`, "prompt", "must not be empty"},
		{"negative token ID", endpointCompletions, `{"prompt":[1,-2]}`, "prompt", "negative"},
		{"batched prompts", endpointCompletions, `{"prompt":["a","b"]}`, "prompt", "batched"},
		{"prompt wrong type", endpointCompletions, `{"prompt":{"x":1}}`, "prompt", "must be a string"},
		{"prompt mixed batch", endpointCompletions, `{"prompt":[{"a":1}]}`, "prompt", "must be a string"},
		{"missing input", endpointResponses, `{"max_output_tokens":3}`, "input", "field required"},
		{"empty input", endpointResponses, `{"input":""}`, "input", "must not be empty"},
		{"function call item", endpointResponses, `{"input":[{"type":"function_call_output","call_id":"x","output":"y"}]}`, "input[0].type", "not supported"},
		{"max_output_tokens negative", endpointResponses, `{"input":"x","max_output_tokens":-3}`, "max_output_tokens", "at least 1"},
		{"instructions wrong type", endpointResponses, `{"input":"x","instructions":5}`, "instructions", "expected a string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeRequest(tc.ep, []byte(tc.body), testLimits())
			require.Error(t, err)
			var ae *apiError
			require.True(t, errors.As(err, &ae), "error %v is an apiError", err)
			assert.Equal(t, http.StatusBadRequest, ae.Status)
			assert.Equal(t, tc.param, ae.Param)
			assert.Contains(t, ae.Message, tc.msg)
		})
	}
}

func TestErrorBodyShape(t *testing.T) {
	e := &apiError{Status: 404, Message: "gone", Param: "model"}
	assert.JSONEq(t, `{"error":{"message":"gone","type":"NotFoundError","param":"model","code":404}}`, string(e.body()))
	e = &apiError{Status: 503, Message: "down"}
	assert.JSONEq(t, `{"error":{"message":"down","type":"ServiceUnavailableError","param":null,"code":503}}`, string(e.body()))
	assert.Equal(t, "InternalServerError", errorType(502))
	assert.Equal(t, "BadRequestError", errorType(418))
}

// FuzzDecodeRequest: any body on any endpoint yields a request within the
// limits or a 400, never a panic.
func FuzzDecodeRequest(f *testing.F) {
	seeds := []string{
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"prompt":[1,2,3],"max_tokens":2,"ignore_eos":true}`,
		`{"input":[{"role":"user","content":[{"type":"input_text","text":"x"}]}],"instructions":"be brief"}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"max_completion_tokens":-1}`,
		`{"prompt":[["a"]]}`, `[]`, `{`, `{"n":2}`, `null`,
	}
	for i, s := range seeds {
		f.Add(uint8(i%3), []byte(s))
	}
	lim := testLimits()
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		ep := endpoint(which%3) + endpointChat
		g, err := decodeRequest(ep, body, lim)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Message == "" {
				t.Fatalf("error %v is not a 400 apiError", err)
			}
			return
		}
		if g.promptTokens < 1 || g.maxTokens < 1 || g.promptTokens+g.maxTokens > lim.maxModelLen {
			t.Fatalf("out of limits: prompt %d max %d", g.promptTokens, g.maxTokens)
		}
		if g.stopAfter < 0 || (g.stopAfter > 0 && g.stopAfter >= g.maxTokens) {
			t.Fatalf("stop %d not below max %d", g.stopAfter, g.maxTokens)
		}
	})
}
