package request

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

		{"escaped keys are read decoded", ChatCompletions, `{"mod\u0065l":"m","m\u0065ssages":[{"c\u006fntent":"h\u00e9"}]}`,
			Request{Model: "m", PromptTokens: EstimateTokens(3, 1)}, nil},
		{"decoded text length counts", ChatCompletions, `{"model":"m","messages":[{"content":"\ud83d\ude00\u00e9\n\ud800x"}]}`,
			Request{Model: "m", PromptTokens: EstimateTokens(4+2+1+3+1, 1)}, nil},
		{"invalid utf-8 counts as replacement characters", ChatCompletions, "{\"model\":\"m\",\"messages\":[{\"content\":\"a\xffb\"}]}",
			Request{Model: "m", PromptTokens: EstimateTokens(5, 1)}, nil},
		{"every copy of content is measured", ChatCompletions, `{"model":"m","messages":[{"content":"0123456789","content":"abc"}]}`,
			Request{Model: "m", PromptTokens: EstimateTokens(13, 1)}, nil},
		{"folded content is measured too", ChatCompletions, `{"model":"m","messages":[{"content":"","CONTENT":"0123456789"}]}`,
			Request{Model: "m", PromptTokens: EstimateTokens(10, 1)}, nil},
		{"folded text is measured", ChatCompletions, `{"model":"m","messages":[{"content":[{"type":"text","TEXT":"abcdef"}]}]}`,
			Request{Model: "m", PromptTokens: EstimateTokens(6, 1)}, nil},
		{"folded media key is media", ChatCompletions, `{"model":"m","messages":[{"content":[{"Image_URL":{"url":"x"}}]}]}`,
			Request{Model: "m", Media: true, PromptTokens: EstimateTokens(0, 1)}, nil},
		{"folded type naming media is media", ChatCompletions, `{"model":"m","messages":[{"content":[{"type":"text","TYPE":"image_url"}]}]}`,
			Request{Model: "m", Media: true, PromptTokens: EstimateTokens(0, 1)}, nil},
		{"responses media item text is measured", Responses, `{"model":"m","input":[{"type":"input_image","text":"abcdef"}]}`,
			Request{Model: "m", Media: true, PromptTokens: EstimateTokens(6, 1)}, nil},
		{"both output fields: the larger gates", ChatCompletions, `{"model":"m","max_tokens":90,"max_completion_tokens":9,"messages":[{"content":"a"}]}`,
			Request{Model: "m", MaxOutput: 90, PromptTokens: EstimateTokens(1, 1)}, nil},
		{"another endpoint's field passes through", ChatCompletions, `{"model":"m","MAX_OUTPUT_TOKENS":5,"prompt":7,"messages":[{"content":"a"}]}`,
			Request{Model: "m", PromptTokens: EstimateTokens(1, 1)}, nil},
		{"duplicates of unread fields pass through", ChatCompletions, `{"model":"m","temperature":1,"temperature":2,"messages":[{"content":"a"}]}`,
			Request{Model: "m", PromptTokens: EstimateTokens(1, 1)}, nil},
		{"tool_choice none escaped", ChatCompletions, `{"model":"m","tool_choice":"n\u006fne","messages":[{"content":"a"}]}`,
			Request{Model: "m", PromptTokens: EstimateTokens(1, 1)}, nil},
		{"null token ids count", Completions, `{"model":"m","prompt":[[1,null],null,-9223372036854775808]}`,
			Request{Model: "m", PromptTokens: EstimateTokens(12, 0)}, nil},

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
		// Issue 13: folded and duplicated keys, whole numbers with a fraction, strict JSON.
		{"MAX_TOKENS", ChatCompletions, `{"model":"m","MAX_TOKENS":400,"messages":[{"content":"a"}]}`, Request{}, &KeyError{Field: "max_tokens"}},
		{"Kelvin sign in max_tokens", ChatCompletions, "{\"model\":\"m\",\"max_to\u212aens\":400,\"messages\":[{\"content\":\"a\"}]}", Request{}, &KeyError{Field: "max_tokens"}},
		{"escaped Kelvin sign in max_tokens", ChatCompletions, `{"model":"m","max_to\u212aens":400,"messages":[{"content":"a"}]}`, Request{}, &KeyError{Field: "max_tokens"}},
		{"long s in messages", ChatCompletions, "{\"model\":\"m\",\"messages\":[{\"content\":\"a\"}],\"me\u017f\u017fages\":[{\"content\":\"5007 tokens\"}]}", Request{}, &KeyError{Field: "messages"}},
		{"folded model", Completions, `{"model":"m","Model":"x","prompt":"a"}`, Request{}, &KeyError{Field: "model"}},
		{"folded stream", Completions, `{"model":"m","Stream":true,"prompt":"a"}`, Request{}, &KeyError{Field: "stream"}},
		{"folded tools", Completions, `{"model":"m","TOOLS":[{}],"prompt":"a"}`, Request{}, &KeyError{Field: "tools"}},
		{"folded instructions", Responses, `{"model":"m","input":"a","Instructions":"b"}`, Request{}, &KeyError{Field: "instructions"}},
		{"folded max_output_tokens", Responses, `{"model":"m","input":"a","Max_Output_Tokens":9}`, Request{}, &KeyError{Field: "max_output_tokens"}},
		{"duplicate max_tokens", Completions, `{"model":"m","max_tokens":1,"max_tokens":400,"prompt":"a"}`, Request{}, &KeyError{Field: "max_tokens", Duplicate: true}},
		{"duplicate model", Completions, `{"model":"m","prompt":"a","model":"m"}`, Request{}, &KeyError{Field: "model", Duplicate: true}},
		{"escaped duplicate messages", ChatCompletions, `{"model":"m","messages":[{"content":"a"}],"m\u0065ssages":[{"content":"b"}]}`, Request{}, &KeyError{Field: "messages", Duplicate: true}},
		{"max_tokens 2.0", Completions, `{"model":"m","max_tokens":2.0,"prompt":"a"}`, Request{}, ErrBadMaxTokens},
		{"max_tokens 2e0", Completions, `{"model":"m","max_tokens":2e0,"prompt":"a"}`, Request{}, ErrBadMaxTokens},
		{"max_tokens -0", Completions, `{"model":"m","max_tokens":-0,"prompt":"a"}`, Request{}, ErrBadMaxTokens},
		{"max_tokens over the limit", Completions, `{"model":"m","max_tokens":1099511627777,"prompt":"a"}`, Request{}, ErrBadMaxTokens},
		{"bad max_tokens beside a good one", ChatCompletions, `{"model":"m","max_completion_tokens":5,"max_tokens":"x","messages":[{"content":"a"}]}`, Request{}, ErrBadMaxTokens},
		{"trailing bracket", ChatCompletions, `{"model":"m","messages":[{"content":"a"}]} ]`, Request{}, ErrBadJSON},
		{"invalid escape in an unread field", ChatCompletions, `{"model":"m","x":"\q","messages":[{"content":"a"}]}`, Request{}, ErrBadJSON},
		{"trailing comma in an unread field", ChatCompletions, `{"model":"m","x":[1,],"messages":[{"content":"a"}]}`, Request{}, ErrBadJSON},
		{"leading zero", ChatCompletions, `{"model":"m","x":01,"messages":[{"content":"a"}]}`, Request{}, ErrBadJSON},
		{"control character in a string", ChatCompletions, "{\"model\":\"m\",\"x\":\"\t\",\"messages\":[{\"content\":\"a\"}]}", Request{}, ErrBadJSON},
		{"nesting beyond encoding/json's limit", ChatCompletions, `{"model":"m","messages":[{"content":"a"}],"x":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`, Request{}, ErrBadJSON},
		{"functions wrong type beside tools", ChatCompletions, `{"model":"m","tools":[{}],"functions":5,"messages":[{"content":"a"}]}`, Request{}, ErrBadField},
		{"folded type wrong type", ChatCompletions, `{"model":"m","messages":[{"content":[{"TYPE":5}]}]}`, Request{}, ErrBadField},
		{"token id with a fraction", Completions, `{"model":"m","prompt":[[1.0]]}`, Request{}, ErrBadField},
		{"token id beyond int64", Completions, `{"model":"m","prompt":[9223372036854775808]}`, Request{}, ErrBadField},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse(c.ep, []byte(c.body))
			if ke, ok := c.err.(*KeyError); ok {
				var got *KeyError
				require.ErrorAs(t, err, &got)
				assert.Equal(t, ke, got)
				return
			}
			if c.err != nil {
				require.ErrorIs(t, err, c.err)
				return
			}
			require.NoError(t, err)
			got.body, got.model = nil, [2]int{}
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
		{"endpoint refused on a replica tier", Request{Endpoint: Embeddings}, Limits{Replica: true}, ErrEndpointRefused},
		{"endpoint gate before the others", Request{Endpoint: AudioSpeech, Media: true}, Limits{Replica: true}, ErrEndpointRefused},
		{"replica endpoint passes", Request{Endpoint: Responses}, Limits{Replica: true}, nil},
		{"any endpoint on a direct tier", Request{Endpoint: Embeddings}, Limits{}, nil},
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

// TestParseMaterializesNothing: whatever the body's shape, the hostile 90,000-key megabyte included,
// the parse allocates one thing, the model name.
func TestParseMaterializesNothing(t *testing.T) {
	for _, c := range benchBodies() {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.ep, c.body)
			require.NoError(t, err)
			assert.LessOrEqual(t, testing.AllocsPerRun(5, func() { _, _ = Parse(c.ep, c.body) }), 1.0)
		})
	}
}

// TestBodyIsByteExact: the rewritten body is the caller's bytes with only the model literal replaced;
// spacing, key order, escapes and duplicates of fields the router does not read survive.
func TestBodyIsByteExact(t *testing.T) {
	in := " {\"temperature\" : 0.50,\"model\" :\t\"al\\u0069as\" ,\"x\":\"\\u003c/\\/\",\"x\":1e2,\"messages\":[{\"role\":\"user\",\"content\":\"hi\\n\"}]} \n"
	r, err := Parse(ChatCompletions, []byte(in))
	require.NoError(t, err)
	assert.Equal(t, "alias", r.Model)
	assert.Equal(t, strings.Replace(in, `"al\u0069as"`, `"served/model"`, 1), string(r.Body("served/model")))
	assert.Equal(t, strings.Replace(in, `"al\u0069as"`, `"a\"b\u003c"`, 1), string(r.Body(`a"b<`)), "the served name is JSON-escaped")
	assert.Equal(t, in, string(r.body), "the caller's bytes are not modified")
}

// TestAppendJSONStringIsEncodingJSON: the served model name goes upstream exactly as encoding/json
// would quote it, with or without the fast path.
func TestAppendJSONStringIsEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "meta-llama/Llama-3.1-8B-Instruct", "a b~", `q"`, `back\slash`, "<&>", "tab\t",
		"\x7f", "é", "\u2028", "bad\xff", "nul\x00"} {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(appendJSONString([]byte("x"), s))[1:], "%q", s)
	}
}
