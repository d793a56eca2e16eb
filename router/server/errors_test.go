package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/request"
)

type openAIError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

// Every refusal before admission answers a fixed OpenAI-shaped error, reserves nothing and calls no
// member.
func TestRefusalsReserveNothing(t *testing.T) {
	ms := startMembers(t, 2)
	yaml := replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2, extra: "limits:\n  max_body_bytes: 16384\n"})
	r := startRouter(t, yaml)
	big := `{"model":"chat","messages":[{"role":"user","content":"` + strings.Repeat("x", 20000) + `"}]}`
	cases := []struct {
		name    string
		path    string
		auth    string
		body    string
		status  int
		message string
		code    string
	}{
		{"no token", "/v1/chat/completions", "", chatBody(4, false), 401, "missing or invalid bearer token", "invalid_api_key"},
		{"wrong token", "/v1/chat/completions", "Bearer nope", chatBody(4, false), 401, "missing or invalid bearer token", "invalid_api_key"},
		{"wrong scheme", "/v1/chat/completions", "Basic " + callerToken, chatBody(4, false), 401, "missing or invalid bearer token", "invalid_api_key"},
		{"admin token is not a caller token", "/v1/chat/completions", "Bearer " + adminToken, chatBody(4, false), 401, "missing or invalid bearer token", "invalid_api_key"},
		{"too large", "/v1/chat/completions", "", big, 413, "request body is too large", "request_too_large"},
		{"not json", "/v1/chat/completions", "", `{"model":`, 400, "request body must be a JSON object", "invalid_request"},
		{"missing model", "/v1/chat/completions", "", `{"messages":[{"content":"a"}]}`, 400, "'model' is required and must be a non-empty string", "invalid_request"},
		{"missing messages", "/v1/chat/completions", "", `{"model":"chat"}`, 400, "request has no prompt: 'messages', 'prompt' or 'input' is required", "invalid_request"},
		{"bad max_tokens", "/v1/chat/completions", "", `{"model":"chat","max_tokens":-3,"messages":[{"content":"a"}]}`, 400, request.ErrBadMaxTokens.Error(), "invalid_request"},
		{"MAX_TOKENS past the output gate", "/v1/chat/completions", "", `{"model":"chat","MAX_TOKENS":400,"max_tokens":4,"messages":[{"content":"a"}]}`, 400, "a key differs from the field 'max_tokens' only by letter case; use the exact name", "invalid_request"},
		{"Kelvin-sign max_tokens", "/v1/chat/completions", "", "{\"model\":\"chat\",\"max_to\u212aens\":400,\"messages\":[{\"content\":\"a\"}]}", 400, "a key differs from the field 'max_tokens' only by letter case; use the exact name", "invalid_request"},
		{"long-s messages past the context gate", "/v1/chat/completions", "", "{\"model\":\"chat\",\"messages\":[{\"content\":\"a\"}],\"me\u017f\u017fages\":[{\"content\":\"" + strings.Repeat("z", 15000) + "\"}]}", 400, "a key differs from the field 'messages' only by letter case; use the exact name", "invalid_request"},
		{"duplicate max_tokens", "/v1/chat/completions", "", `{"model":"chat","max_tokens":4,"max_tokens":400,"messages":[{"content":"a"}]}`, 400, "field 'max_tokens' appears more than once", "invalid_request"},
		{"max_tokens 2.0", "/v1/chat/completions", "", `{"model":"chat","max_tokens":2.0,"messages":[{"content":"a"}]}`, 400, request.ErrBadMaxTokens.Error(), "invalid_request"},
		{"wrong field type", "/v1/chat/completions", "", `{"model":"chat","stream":"yes","messages":[{"content":"a"}]}`, 400, "field 'stream' has the wrong type", "invalid_request"},
		{"unknown alias", "/v1/chat/completions", "", `{"model":"nope","messages":[{"content":"a"}]}`, 404, "the requested model does not exist", "model_not_found"},
		{"output gate", "/v1/chat/completions", "", `{"model":"chat","max_tokens":513,"messages":[{"content":"a"}]}`, 400, "requested output tokens exceed the model's maximum output", "max_tokens_exceeded"},
		{"context gate", "/v1/completions", "", `{"model":"chat","max_tokens":500,"prompt":"` + strings.Repeat("y", 11000) + `"}`, 400, "estimated prompt tokens plus requested output tokens exceed the model's context window", "context_length_exceeded"},
		{"tools gate", "/v1/chat/completions", "", `{"model":"chat","tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"content":"a"}]}`, 400, "this model does not accept tools", "tools_not_allowed"},
		{"media gate", "/v1/chat/completions", "", `{"model":"chat","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:"}}]}]}`, 400, "this model does not accept image, audio, video or file content", "media_not_allowed"},
		{"embeddings never reach replica tiers", "/v1/embeddings", "", `{"model":"chat","input":"a"}`, 400, "this model does not serve this endpoint", "endpoint_not_supported"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, r.http.URL+c.path, strings.NewReader(c.body))
			require.NoError(t, err)
			switch c.auth {
			case "":
				if c.status != 401 {
					req.Header.Set("Authorization", "Bearer "+callerToken)
				}
			default:
				req.Header.Set("Authorization", c.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			r.wait(t, 1)
			assert.Equal(t, c.status, resp.StatusCode)
			var e openAIError
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
			assert.Equal(t, c.message, e.Error.Message)
			assert.Equal(t, c.code, e.Error.Code)
			assert.NotEmpty(t, e.Error.Type)
		})
	}
	assert.Zero(t, totalCalls(ms), "no refusal reaches a member")
	s := r.snapshot(t, "replicas")
	assertSettled(t, s)
	assert.Zero(t, s.Acquired, "no refusal reserves anything")
	for _, rec := range r.srv.Decisions().Recent(100) {
		assert.Zero(t, rec.Attempts)
		assert.Equal(t, decisionlog.OutcomeRefused, rec.Outcome)
	}
}

func TestQuiescedAndExhaustedAre503WithRetryAfter(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2}))

	status, body := r.admin(t, `{"action":"quiesce","tier":"replicas","reason":"maintenance"}`)
	require.Equal(t, http.StatusOK, status, body)
	code, out, hdr := r.do(t, "/v1/chat/completions", chatBody(4, false))
	r.wait(t, 1)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "1", hdr.Get("Retry-After"))
	assert.Contains(t, out, `"code":"quiesced"`)

	status, body = r.admin(t, `{"action":"readmit","tier":"replicas"}`)
	require.Equal(t, http.StatusOK, status, body)
	// No member ready: exhausted, nothing reserved, nothing called.
	for _, m := range ms {
		m.srv.CloseClientConnections()
		m.srv.Close()
	}
	r.srv.ProbeNow(t.Context())
	code, out, hdr = r.do(t, "/v1/chat/completions", chatBody(4, false))
	r.wait(t, 1)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "1", hdr.Get("Retry-After"))
	assert.Contains(t, out, `"code":"capacity_exhausted"`)
	assert.Zero(t, totalCalls(ms))
	s := r.snapshot(t, "replicas")
	assertSettled(t, s)
	assert.Zero(t, s.Acquired)
	recs := r.srv.Decisions().Recent(2)
	require.Len(t, recs, 2)
	for _, rec := range recs {
		assert.Equal(t, decisionlog.OutcomeNotAdmitted, rec.Outcome)
		assert.Nil(t, rec.ReplicaScheduler, "exhaustion carries no scheduler payload")
	}
}

// TestUnknownRoutesAndMethods: with a token, an unknown route is 404 and a wrong method 405; without
// one, both are the same 401 as any other path of the scope: authentication comes before routing.
func TestUnknownRoutesAndMethods(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{}))
	get := func(path, token string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, r.http.URL+path, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		r.wait(t, 1)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		path, token string
		status      int
		code        string
	}{
		{"/v1/nothing", callerToken, http.StatusNotFound, "not_found"},
		{"/v1/chat/completions", callerToken, http.StatusMethodNotAllowed, "method_not_allowed"},
		{"/v1/models/", callerToken, http.StatusNotFound, "not_found"},
		{"/v1/nothing", "", http.StatusUnauthorized, "invalid_api_key"},
		{"/v1/chat/completions", "", http.StatusUnauthorized, "invalid_api_key"},
		{"/v1/models/", "", http.StatusUnauthorized, "invalid_api_key"},
		{"/nothing", "", http.StatusNotFound, "not_found"},
	} {
		status, body := get(c.path, c.token)
		assert.Equal(t, c.status, status, "%s with token %q", c.path, c.token)
		assert.Contains(t, body, `"code":"`+c.code+`"`, c.path)
	}
}
