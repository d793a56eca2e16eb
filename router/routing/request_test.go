package routing

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRequest(t *testing.T) {
	cases := []struct {
		name string
		ep   Endpoint
		body string
		want Request
		err  error
	}{
		{"chat minimal", ChatCompletions, `{"model":"m","messages":[{"role":"user","content":"hello"}]}`,
			Request{Model: "m", PromptTokens: EstimateTokens(5, 1)}, nil},
		{"chat stream and max_tokens", ChatCompletions, `{"model":"m","stream":true,"max_tokens":7,"messages":[{"role":"user","content":"hi"}]}`,
			Request{Model: "m", Stream: true, MaxOutput: 7, PromptTokens: EstimateTokens(2, 1)}, nil},
		{"chat max_completion_tokens wins", ChatCompletions, `{"model":"m","max_tokens":7,"max_completion_tokens":9,"messages":[{"role":"user","content":"hi"}]}`,
			Request{Model: "m", MaxOutput: 9, PromptTokens: EstimateTokens(2, 1)}, nil},
		{"chat parts with image", ChatCompletions, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"abc"},{"type":"image_url","image_url":{"url":"x"}}]}]}`,
			Request{Model: "m", Media: true, PromptTokens: EstimateTokens(3, 1)}, nil},
		{"chat tools", ChatCompletions, `{"model":"m","tools":[{"type":"function"}],"messages":[{"role":"user","content":"a"}]}`,
			Request{Model: "m", Tools: true, PromptTokens: EstimateTokens(1, 1)}, nil},
		{"tool_choice none is not tools", ChatCompletions, `{"model":"m","tool_choice":"none","tools":[],"messages":[{"role":"user","content":"a"}]}`,
			Request{Model: "m", PromptTokens: EstimateTokens(1, 1)}, nil},
		{"tool_choice auto is tools", ChatCompletions, `{"model":"m","tool_choice":"auto","messages":[{"role":"user","content":"a"}]}`,
			Request{Model: "m", Tools: true, PromptTokens: EstimateTokens(1, 1)}, nil},
		{"completions string", Completions, `{"model":"m","prompt":"abcdef","max_tokens":3}`,
			Request{Model: "m", MaxOutput: 3, PromptTokens: EstimateTokens(6, 0)}, nil},
		{"completions token ids", Completions, `{"model":"m","prompt":[[1,2,3]]}`,
			Request{Model: "m", PromptTokens: EstimateTokens(9, 0)}, nil},
		{"responses string", Responses, `{"model":"m","input":"abc","max_output_tokens":5,"instructions":"be brief"}`,
			Request{Model: "m", MaxOutput: 5, PromptTokens: EstimateTokens(11, 1)}, nil},
		{"responses items with audio", Responses, `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"ab"},{"type":"input_audio"}]}]}`,
			Request{Model: "m", Media: true, PromptTokens: EstimateTokens(2, 1)}, nil},
		{"wrong-case type cannot hide an image", ChatCompletions, `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","Type":"text","image_url":{"url":"x"}}]}]}`,
			Request{Model: "m", Media: true, PromptTokens: EstimateTokens(0, 1)}, nil},
		{"typeless media part", ChatCompletions, `{"model":"m","messages":[{"role":"user","content":[{"image_url":{"url":"x"}}]}]}`,
			Request{Model: "m", Media: true, PromptTokens: EstimateTokens(0, 1)}, nil},
		{"wrong-case content cannot shrink the prompt", ChatCompletions, `{"model":"m","messages":[{"role":"user","content":"0123456789","Content":""}]}`,
			Request{Model: "m", PromptTokens: EstimateTokens(10, 1)}, nil},
		{"responses wrong-case type cannot hide media", Responses, `{"model":"m","input":[{"type":"input_image","Type":"input_text","image_url":"x"}]}`,
			Request{Model: "m", Media: true, PromptTokens: EstimateTokens(0, 1)}, nil},
		{"embeddings list", Embeddings, `{"model":"m","input":["ab","cd"]}`,
			Request{Model: "m", PromptTokens: EstimateTokens(4, 0)}, nil},
		{"speech is media with its input measured", AudioSpeech, `{"model":"m","input":"say this","voice":"alloy"}`,
			Request{Model: "m", Media: true, PromptTokens: EstimateTokens(8, 0)}, nil},
		{"speech without input", AudioSpeech, `{"model":"m","voice":"alloy"}`, Request{}, ErrMissingInput},
		{"speech input wrong type", AudioSpeech, `{"model":"m","input":["a"]}`, Request{}, ErrBadField},
		{"a form endpoint has no JSON body", AudioTranscriptions, `{"model":"m","input":"x"}`, Request{}, ErrBadJSON},
		{"an undefined endpoint", Endpoint(200), `{"model":"m","input":"x"}`, Request{}, ErrBadJSON},

		{"not json", ChatCompletions, `{"model":`, Request{}, ErrBadJSON},
		{"array body", ChatCompletions, `[1]`, Request{}, ErrBadJSON},
		{"null body", ChatCompletions, `null`, Request{}, ErrBadJSON},
		{"trailing data", ChatCompletions, `{"model":"m","messages":[{"content":"a"}]} {}`, Request{}, ErrBadJSON},
		{"missing model", ChatCompletions, `{"messages":[{"content":"a"}]}`, Request{}, ErrMissingModel},
		{"model wrong type", ChatCompletions, `{"model":3,"messages":[{"content":"a"}]}`, Request{}, ErrMissingModel},
		{"empty model", ChatCompletions, `{"model":"","messages":[{"content":"a"}]}`, Request{}, ErrMissingModel},
		{"missing messages", ChatCompletions, `{"model":"m"}`, Request{}, ErrMissingInput},
		{"messages wrong type", ChatCompletions, `{"model":"m","messages":"hi"}`, Request{}, ErrBadField},
		{"empty messages", ChatCompletions, `{"model":"m","messages":[]}`, Request{}, ErrBadField},
		{"content wrong type", ChatCompletions, `{"model":"m","messages":[{"content":5}]}`, Request{}, ErrBadField},
		{"stream wrong type", ChatCompletions, `{"model":"m","stream":"yes","messages":[{"content":"a"}]}`, Request{}, ErrBadField},
		{"negative max_tokens", ChatCompletions, `{"model":"m","max_tokens":-1,"messages":[{"content":"a"}]}`, Request{}, ErrBadMaxTokens},
		{"zero max_tokens", ChatCompletions, `{"model":"m","max_tokens":0,"messages":[{"content":"a"}]}`, Request{}, ErrBadMaxTokens},
		{"fractional max_tokens", Completions, `{"model":"m","max_tokens":1.5,"prompt":"a"}`, Request{}, ErrBadMaxTokens},
		{"absurd max_tokens", Completions, `{"model":"m","max_tokens":1e300,"prompt":"a"}`, Request{}, ErrBadMaxTokens},
		{"string max_tokens", Completions, `{"model":"m","max_tokens":"5","prompt":"a"}`, Request{}, ErrBadMaxTokens},
		{"tools wrong type", ChatCompletions, `{"model":"m","tools":{},"messages":[{"content":"a"}]}`, Request{}, ErrBadField},
		{"missing prompt", Completions, `{"model":"m"}`, Request{}, ErrMissingInput},
		{"prompt wrong type", Completions, `{"model":"m","prompt":{}}`, Request{}, ErrBadField},
		{"missing input", Responses, `{"model":"m"}`, Request{}, ErrMissingInput},
		{"input wrong type", Responses, `{"model":"m","input":5}`, Request{}, ErrBadField},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseRequest(c.ep, []byte(c.body))
			if c.err != nil {
				require.ErrorIs(t, err, c.err)
				return
			}
			require.NoError(t, err)
			got.fields = nil
			c.want.Endpoint = c.ep
			assert.Equal(t, c.want, got)
		})
	}
}

func TestEndpoints(t *testing.T) {
	cases := []struct {
		ep                        Endpoint
		path                      string
		replica, audio, multipart bool
	}{
		{ChatCompletions, "/v1/chat/completions", true, false, false},
		{Completions, "/v1/completions", true, false, false},
		{Responses, "/v1/responses", true, false, false},
		{Embeddings, "/v1/embeddings", false, false, false},
		{AudioTranscriptions, "/v1/audio/transcriptions", false, true, true},
		{AudioTranslations, "/v1/audio/translations", false, true, true},
		{AudioSpeech, "/v1/audio/speech", false, true, false},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			assert.Equal(t, c.path, c.ep.Path())
			assert.Equal(t, c.replica, c.ep.ReplicaEligible())
			assert.Equal(t, c.audio, c.ep.Audio())
			assert.Equal(t, c.multipart, c.ep.Multipart())
		})
	}
	assert.False(t, Endpoint(200).ReplicaEligible(), "an undefined endpoint is never replica-eligible")
}

func TestFormRequest(t *testing.T) {
	r, err := FormRequest(AudioTranscriptions, "whisper", true)
	require.NoError(t, err)
	assert.Equal(t, Request{Endpoint: AudioTranscriptions, Model: "whisper", Stream: true, Media: true}, r)
	_, err = FormRequest(AudioTranslations, "", false)
	assert.ErrorIs(t, err, ErrMissingModel)
	_, err = FormRequest(AudioSpeech, "m", false)
	assert.ErrorIs(t, err, ErrBadField, "speech is JSON, not a form")
	_, err = FormRequest(ChatCompletions, "m", false)
	assert.ErrorIs(t, err, ErrBadField)
}

func TestBodyRewritesOnlyTheModel(t *testing.T) {
	r, err := ParseRequest(ChatCompletions, []byte(`{"model":"alias","temperature":0.5,"messages":[{"role":"user","content":"x"}]}`))
	require.NoError(t, err)
	body, err := r.Body("served/model")
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(body, &got))
	assert.Equal(t, "served/model", got["model"])
	assert.Equal(t, 0.5, got["temperature"])
	assert.Len(t, got["messages"], 1)
}

func TestGates(t *testing.T) {
	l := Limits{MaxContextTokens: 100, MaxOutputTokens: 50}
	cases := []struct {
		name string
		r    Request
		l    Limits
		err  error
	}{
		{"fits exactly", Request{PromptTokens: 50, MaxOutput: 50}, l, nil},
		{"context over by one", Request{PromptTokens: 51, MaxOutput: 50}, l, ErrContextExceeded},
		{"output over", Request{PromptTokens: 1, MaxOutput: 51}, l, ErrOutputExceeded},
		{"no gates", Request{PromptTokens: 1 << 40, MaxOutput: 1 << 40}, Limits{ToolsAllowed: true, MediaAllowed: true}, nil},
		{"tools refused", Request{Tools: true}, l, ErrToolsRefused},
		{"tools allowed", Request{Tools: true}, Limits{ToolsAllowed: true}, nil},
		{"media refused", Request{Media: true}, l, ErrMediaRefused},
		{"media allowed", Request{Media: true}, Limits{MediaAllowed: true}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.ErrorIs(t, c.l.Check(c.r), c.err)
			if c.err == nil {
				assert.NoError(t, c.l.Check(c.r))
			}
		})
	}
}

func TestEstimateIsConservative(t *testing.T) {
	// The estimate must never be below a four-bytes-per-token tokenizer's count for the same text.
	for _, n := range []int64{0, 1, 2, 3, 4, 100, 4097} {
		assert.GreaterOrEqual(t, EstimateTokens(n, 1), (n+3)/4)
	}
}

func FuzzParseRequest(f *testing.F) {
	f.Add(uint8(0), `{"model":"m","messages":[{"role":"user","content":"hello"}]}`)
	f.Add(uint8(1), `{"model":"m","prompt":["a",[1,2]],"max_tokens":3}`)
	f.Add(uint8(2), `{"model":"m","input":[{"type":"input_image"}],"tools":[{}]}`)
	f.Add(uint8(3), `{"model":"m","input":"x"}`)
	f.Add(uint8(6), `{"model":"m","input":"say it","voice":"alloy","speed":1.5}`)
	f.Add(uint8(0), `{"model":"m","messages":[{"content":[{"type":"text","Type":"image_url","text":"a"}],"Content":"b"}]}`)
	f.Fuzz(func(t *testing.T, ep uint8, body string) {
		e := Endpoint(ep % 7)
		r, err := ParseRequest(e, []byte(body))
		if err != nil {
			assert.Zero(t, r.Model)
			return
		}
		assert.NotEmpty(t, r.Model)
		assert.GreaterOrEqual(t, r.PromptTokens, int64(3))
		assert.GreaterOrEqual(t, r.MaxOutput, int64(0))
		out, err := r.Body("served")
		require.NoError(t, err)
		again, err := ParseRequest(e, out)
		require.NoError(t, err, "a rewritten body must parse again")
		assert.Equal(t, r.PromptTokens, again.PromptTokens)
		assert.True(t, strings.Contains(string(out), `"model":"served"`))
	})
}
