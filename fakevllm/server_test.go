package fakevllm

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
)

func TestOptionsValidation(t *testing.T) {
	tests := map[string]Options{
		"no models":        {},
		"empty model name": {Models: []string{""}},
		"spaces in name":   {Models: []string{"a b"}},
		"duplicate names":  {Models: []string{"a", "a"}},
		"bad profile":      {Models: []string{"a"}, Profile: engine.Profile{Name: "x"}},
		"bad faults":       {Models: []string{"a"}, Faults: Faults{KVBlocks: -1}},
		"kv beyond pool":   {Models: []string{"a"}, Profile: engine.TinyProfile(), Faults: Faults{KVBlocks: 65}},
		"negative body":    {Models: []string{"a"}, MaxBodyBytes: -1},
	}
	for name, o := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Error(t, o.Validate())
			s, err := NewServer(o)
			assert.Error(t, err)
			assert.Nil(t, s)
		})
	}
	assert.NoError(t, Options{Models: []string{"a", "org/model:v1"}}.Validate())
}

func TestModelsHealthVersion(t *testing.T) {
	o := tinyOptions()
	o.Models = []string{testModel, "alias/two"}
	m := startLoopback(t, o)
	c := http.DefaultClient

	status, body := get(t, c, m.url+"/v1/models")
	require.Equal(t, http.StatusOK, status)
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID, Object, OwnedBy, Root string
			MaxModelLen               int `json:"max_model_len"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &list))
	assert.Equal(t, "list", list.Object)
	require.Len(t, list.Data, 2)
	assert.Equal(t, testModel, list.Data[0].ID)
	assert.Equal(t, "alias/two", list.Data[1].ID)
	assert.Equal(t, "model", list.Data[0].Object)
	assert.Equal(t, 1024, list.Data[0].MaxModelLen)

	status, body = get(t, c, m.url+"/health")
	assert.Equal(t, http.StatusOK, status)
	assert.Empty(t, body)
	status, body = get(t, c, m.url+"/version")
	assert.Equal(t, http.StatusOK, status)
	assert.JSONEq(t, `{"version":"`+VLLMVersion+`"}`, string(body))
	status, body = get(t, c, m.url+"/nope")
	assert.Equal(t, http.StatusNotFound, status)
	assert.JSONEq(t, `{"detail":"Not Found"}`, string(body))
	status, body = get(t, c, m.url+"/v1/chat/completions")
	assert.Equal(t, http.StatusMethodNotAllowed, status)
	assert.JSONEq(t, `{"detail":"Method Not Allowed"}`, string(body))

	// The second served name is accepted; responses report the first, as vLLM does.
	resp := post(t, context.Background(), c, m.url+"/v1/completions", `{"model":"alias/two","prompt":"hi","max_tokens":2}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, testModel, decodeJSON(t, string(readAll(t, resp)))["model"])
}

func TestOrdinaryResponses(t *testing.T) {
	m := startLoopback(t, tinyOptions())
	ctx := context.Background()

	t.Run("chat length", func(t *testing.T) {
		resp := post(t, ctx, http.DefaultClient, m.url+"/v1/chat/completions", chatReq("hello", 4, `"ignore_eos":true`))
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		var got struct {
			ID, Object, Model string
			Choices           []struct {
				Message struct {
					Role, Content string
				}
				FinishReason string `json:"finish_reason"`
			}
			Usage usage
		}
		require.NoError(t, json.Unmarshal(readAll(t, resp), &got))
		assert.True(t, strings.HasPrefix(got.ID, "chatcmpl-"))
		assert.Equal(t, "chat.completion", got.Object)
		require.Len(t, got.Choices, 1)
		assert.Equal(t, "assistant", got.Choices[0].Message.Role)
		assert.Equal(t, string(appendTokens(nil, 0, 4)), got.Choices[0].Message.Content)
		assert.Equal(t, "length", got.Choices[0].FinishReason)
		assert.Equal(t, usage{PromptTokens: 3 + 4 + 2, CompletionTokens: 4, TotalTokens: 13}, got.Usage)
	})
	t.Run("chat natural stop", func(t *testing.T) {
		body := chatReq("a prompt that stops by itself", 50, "")
		g, err := decodeRequest(endpointChat, []byte(body), m.srv.lim)
		require.NoError(t, err)
		require.Positive(t, g.stopAfter)
		resp := post(t, ctx, http.DefaultClient, m.url+"/v1/chat/completions", body)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		out := decodeJSON(t, string(readAll(t, resp)))
		choice := out["choices"].([]any)[0].(map[string]any)
		assert.Equal(t, "stop", choice["finish_reason"])
		// The EOS token is counted but has no text.
		assert.Equal(t, string(appendTokens(nil, 0, g.stopAfter-1)), choice["message"].(map[string]any)["content"])
		assert.Equal(t, json.Number(jsonNumber(g.stopAfter)), out["usage"].(map[string]any)["completion_tokens"])
	})
	t.Run("completions", func(t *testing.T) {
		resp := post(t, ctx, http.DefaultClient, m.url+"/v1/completions", `{"prompt":[1,2,3],"max_tokens":3,"ignore_eos":true}`)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		out := decodeJSON(t, string(readAll(t, resp)))
		assert.Equal(t, "text_completion", out["object"])
		choice := out["choices"].([]any)[0].(map[string]any)
		assert.Equal(t, "the engine schedules", choice["text"])
		assert.Equal(t, "length", choice["finish_reason"])
	})
	t.Run("responses incomplete at max_output_tokens", func(t *testing.T) {
		resp := post(t, ctx, http.DefaultClient, m.url+"/v1/responses", `{"input":"hi","max_output_tokens":2,"ignore_eos":true}`)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		out := decodeJSON(t, string(readAll(t, resp)))
		assert.Equal(t, "response", out["object"])
		assert.Equal(t, "incomplete", out["status"])
		assert.Equal(t, map[string]any{"reason": "max_output_tokens"}, out["incomplete_details"])
		item := out["output"].([]any)[0].(map[string]any)
		assert.Equal(t, "the engine", item["content"].([]any)[0].(map[string]any)["text"])
		u := out["usage"].(map[string]any)
		assert.Equal(t, json.Number("2"), u["output_tokens"])
	})

	mt := m.srv.Metrics()
	assert.Equal(t, uint64(4), mt.Success.Total())
	assert.Zero(t, mt.Running)
	assert.Zero(t, mt.KVUsage)
}

func jsonNumber(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestBadInputLeavesEngineUntouched checks status, OpenAI error body and
// that the engine never saw the request.
func TestBadInputLeavesEngineUntouched(t *testing.T) {
	o := tinyOptions()
	o.MaxBodyBytes = 4096
	m := startLoopback(t, o)
	tests := []struct {
		name, path, body string
		status           int
		errType, param   string
		msg              string
	}{
		{"malformed JSON", "/v1/chat/completions", `{"messages":`, 400, "BadRequestError", "", "not valid JSON"},
		{"wrong type", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":"5"}`, 400, "BadRequestError", "max_tokens", "expected an integer"},
		{"missing messages", "/v1/chat/completions", `{"model":"` + testModel + `"}`, 400, "BadRequestError", "messages", "field required"},
		{"missing prompt", "/v1/completions", `{}`, 400, "BadRequestError", "prompt", "field required"},
		{"missing input", "/v1/responses", `{"model":"` + testModel + `"}`, 400, "BadRequestError", "input", "field required"},
		{"negative max_tokens", "/v1/completions", `{"prompt":"x","max_tokens":-1}`, 400, "BadRequestError", "max_tokens", "at least 1, got -1"},
		{"absurd max_tokens", "/v1/completions", `{"prompt":"x","max_tokens":100000000}`, 400, "BadRequestError", "max_tokens", "maximum context length is 1024 tokens"},
		{"unknown model", "/v1/chat/completions", `{"model":"other","messages":[{"role":"user","content":"x"}]}`, 404, "NotFoundError", "model", "The model `other` does not exist."},
		{"oversized body", "/v1/completions", `{"prompt":"` + strings.Repeat("x", 5000) + `"}`, 413, "RequestEntityTooLargeError", "", "exceeds 4096 bytes"},
		{"bad fake-error header", "/v1/completions", `{"prompt":"x"}`, 400, "BadRequestError", "", "X-Fake-Error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if strings.Contains(tc.name, "header") {
				hdr = []string{ErrorHeader, "abc"}
			}
			resp := post(t, context.Background(), http.DefaultClient, m.url+tc.path, tc.body, hdr...)
			body := readAll(t, resp)
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			var eb struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Code    int     `json:"code"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(body, &eb), "%s", body)
			assert.Contains(t, eb.Error.Message, tc.msg)
			assert.Equal(t, tc.errType, eb.Error.Type)
			assert.Equal(t, tc.status, eb.Error.Code)
			if tc.param == "" {
				assert.Nil(t, eb.Error.Param)
			} else if assert.NotNil(t, eb.Error.Param) {
				assert.Equal(t, tc.param, *eb.Error.Param)
			}
		})
	}
	mt := m.srv.Metrics()
	assert.Zero(t, mt.Submitted, "no bad request reached the engine")
	assert.Zero(t, mt.Steps)
	assert.Zero(t, mt.PromptTokens)
}

func TestClosingRefusesNewWork(t *testing.T) {
	m := startLoopback(t, tinyOptions())
	m.srv.beginClose()
	st, _ := get(t, http.DefaultClient, m.url+"/health")
	assert.Equal(t, http.StatusServiceUnavailable, st)
	status, typ := errorOf(t, post(t, context.Background(), http.DefaultClient, m.url+"/v1/completions", simpleCompletion))
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Equal(t, "ServiceUnavailableError", typ)
	m.srv.Close()
	m.srv.Close() // idempotent
	assert.Equal(t, uint64(0), m.srv.Metrics().Submitted, "metrics stay readable after Close")
}

// Every answer names the fake, whatever the route, method or status: a client can tell it from a
// real vLLM by what it observes.
func TestEveryAnswerIdentifiesTheFake(t *testing.T) {
	m := startLoopback(t, tinyOptions())
	cases := []struct {
		method, path, body string
		status             int
	}{
		{http.MethodGet, "/v1/models", "", http.StatusOK},
		{http.MethodGet, "/health", "", http.StatusOK},
		{http.MethodGet, "/version", "", http.StatusOK},
		{http.MethodGet, "/metrics", "", http.StatusOK},
		{http.MethodPost, "/v1/completions", `{"model":"` + testModel + `","prompt":"hi","max_tokens":2}`, http.StatusOK},
		{http.MethodPost, "/v1/completions", `{"prompt":`, http.StatusBadRequest},
		{http.MethodGet, "/no/such/route", "", http.StatusNotFound},
		{http.MethodDelete, "/v1/models", "", http.StatusMethodNotAllowed},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), c.method, m.url+c.path, strings.NewReader(c.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_ = readAll(t, resp)
			assert.Equal(t, c.status, resp.StatusCode)
			assert.Equal(t, IdentityValue, resp.Header.Get(IdentityHeader))
		})
	}
}
