package anvil_test

// This file pins what the simulator's virtual members prefill against the fake vLLM: a chat
// completion of one user message of 4n bytes of text (the body the simulator's caller sends) is
// n prompt tokens plus the chat template's, and the template's count is sim.ChatTemplateTokens.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine/profile"
	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/sim"
)

func TestSimPrefillsWhatTheFakeCounts(t *testing.T) {
	p, err := profile.Lookup("tiny")
	require.NoError(t, err)
	srv, err := fakevllm.NewServer(fakevllm.Options{Models: []string{"sim/model"}, Profile: p})
	require.NoError(t, err)
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	for _, n := range []int{1, 16, 250} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			text := strings.Repeat("word", n)
			body := fmt.Sprintf(`{"model":"sim/model","messages":[{"role":"user","content":%q}],"max_tokens":1}`, text)
			resp, err := http.Post(hs.URL+"/v1/chat/completions", "application/json", bytes.NewReader([]byte(body)))
			require.NoError(t, err)
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			var answer struct {
				Usage struct {
					PromptTokens int `json:"prompt_tokens"`
				} `json:"usage"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&answer))
			assert.Equal(t, n+sim.ChatTemplateTokens, answer.Usage.PromptTokens)
		})
	}
}
