package fakevllm

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestModelsListingGolden: /v1/models with several served names, an extra
// base model and LoRA adapters, byte for byte (synctest fixes the clock, the
// seed fixes the permission IDs). The shape is vLLM's show_available_models:
// base cards (root = the model, parent null, max_model_len), then adapter
// cards (root = the adapter path, parent = the first served name,
// max_model_len null), every field present.
func TestModelsListingGolden(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := tinyOptions()
		o.Models = []string{"org/model", "model-alias"}
		o.ExtraModels = []string{"other/base"}
		o.LoRA = []string{"sql-lora", "chat-lora"}
		p := startPipe(t, o)
		defer p.stop()
		status, body := get(t, p.client, p.url+"/v1/models")
		require.Equal(t, http.StatusOK, status)
		var pretty bytes.Buffer
		require.NoError(t, json.Indent(&pretty, body, "", "  "))
		pretty.WriteByte('\n')
		golden := filepath.Join("testdata", "models_with_adapters.json")
		if *update {
			require.NoError(t, os.MkdirAll("testdata", 0o755))
			require.NoError(t, os.WriteFile(golden, pretty.Bytes(), 0o644))
		}
		want, err := os.ReadFile(golden)
		require.NoError(t, err)
		assert.Equal(t, string(want), pretty.String())
	})
}

// TestModelNamesInRequests: an adapter or an extra model may be named by a
// request and is reported back; another served name reports the first one,
// as vLLM does; anything else is 404.
func TestModelNamesInRequests(t *testing.T) {
	o := tinyOptions()
	o.Models = []string{testModel, "alias"}
	o.ExtraModels = []string{"other/base"}
	o.LoRA = []string{"sql-lora"}
	m := startLoopback(t, o)
	tests := map[string]string{"": testModel, testModel: testModel, "alias": testModel, "other/base": "other/base", "sql-lora": "sql-lora"}
	for requested, reported := range tests {
		t.Run("model "+requested, func(t *testing.T) {
			body := `{"prompt":"x","max_tokens":2`
			if requested != "" {
				body += `,"model":"` + requested + `"`
			}
			for _, path := range []string{"/v1/completions", "/v1/chat/completions", "/v1/responses"} {
				b := body
				switch path {
				case "/v1/chat/completions":
					b = strings.Replace(b, `"prompt":"x"`, `"messages":[{"role":"user","content":"x"}]`, 1)
				case "/v1/responses":
					b = strings.Replace(strings.Replace(b, `"prompt":"x"`, `"input":"x"`, 1), "max_tokens", "max_output_tokens", 1)
				}
				resp := post(t, context.Background(), http.DefaultClient, m.url+path, b+"}")
				require.Equal(t, http.StatusOK, resp.StatusCode, path)
				assert.Equal(t, reported, decodeJSON(t, string(readAll(t, resp)))["model"], path)
			}
		})
	}
	resp := post(t, context.Background(), http.DefaultClient, m.url+"/v1/completions", `{"model":"/adapters/sql-lora","prompt":"x"}`)
	assert.JSONEq(t, errorJSON(404, "model", "The model `/adapters/sql-lora` does not exist."), string(readAll(t, resp)))
}

func TestModelOptionsValidation(t *testing.T) {
	long := strings.Repeat("a", 257)
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "m" + strings.Repeat("x", i)
		}
		return out
	}
	tests := map[string]struct {
		o   Options
		msg string
	}{
		"adapter named like a served model": {Options{Models: []string{"a"}, LoRA: []string{"a"}}, `LoRA adapter name "a" appears twice (already among the served model names)`},
		"adapter twice":                     {Options{Models: []string{"a"}, LoRA: []string{"l", "l"}}, `LoRA adapter name "l" appears twice (already among the LoRA adapter names)`},
		"extra named like an adapter":       {Options{Models: []string{"a"}, ExtraModels: []string{"l"}, LoRA: []string{"l"}}, `LoRA adapter name "l" appears twice (already among the extra model names)`},
		"extra named like a served model":   {Options{Models: []string{"a"}, ExtraModels: []string{"a"}}, `extra model name "a" appears twice (already among the served model names)`},
		"adapter with a space":              {Options{Models: []string{"a"}, LoRA: []string{"my lora"}}, `LoRA adapter name "my lora" must be 1-256 printable characters without spaces`},
		"empty adapter":                     {Options{Models: []string{"a"}, LoRA: []string{""}}, `LoRA adapter name "" must be`},
		"long extra model":                  {Options{Models: []string{"a"}, ExtraModels: []string{long}}, "extra model name"},
		"too many adapters":                 {Options{Models: []string{"a"}, LoRA: many(MaxLoRAAdapters + 1)}, "at most 64 LoRA adapters"},
		"too many extra models":             {Options{Models: []string{"a"}, ExtraModels: many(MaxExtraModels + 1)}, "at most 16 extra models"},
		"negative audio bound":              {Options{Models: []string{"a"}, MaxAudioBytes: -1}, "must be positive"},
		"huge audio bound":                  {Options{Models: []string{"a"}, MaxAudioBytes: 1 << 50}, "must be at most"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.o.Validate()
			require.ErrorIs(t, err, ErrInvalidOptions)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
	ok := Options{Models: []string{"a", "b"}, ExtraModels: []string{"c"}, LoRA: many(MaxLoRAAdapters)}
	assert.NoError(t, ok.Validate())
	s, err := NewServer(ok)
	require.NoError(t, err)
	defer s.Close()
	ok.LoRA[0] = "changed"
	assert.Equal(t, "m", s.opts.LoRA[0], "the server keeps its own copy")
}
