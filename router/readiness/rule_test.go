package readiness

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tritonList renders a /v1/models body in the shape of Triton's OpenAI frontend: every model of the
// repository, owned by the server, no parent or root.
func tritonList(ids ...string) string {
	var entries []string
	for _, id := range ids {
		entries = append(entries, `{"id":"`+id+`","object":"model","created":1,"owned_by":"Triton Inference Server"}`)
	}
	return `{"object":"list","data":[` + strings.Join(entries, ",") + `]}`
}

// TestRuleCheckModels: both rules demand the served model by its exact ID; only the Triton rule
// takes the TensorRT-LLM ensemble's own steps beside it, and nothing else.
func TestRuleCheckModels(t *testing.T) {
	repo := tritonList("ensemble", "postprocessing", "preprocessing", "tensorrt_llm", "tensorrt_llm_bls")
	cases := []struct {
		name           string
		body, served   string
		openai, triton Verdict
	}{
		{"a TensorRT-LLM repository serving its ensemble", repo, "ensemble", ExtraModel, Ready},
		{"served through the BLS model", repo, "tensorrt_llm_bls", ExtraModel, Ready},
		{"the ensemble alone", tritonList("ensemble"), "ensemble", Ready, Ready},
		{"another model in the repository", tritonList("ensemble", "tensorrt_llm", "whisper"), "ensemble", ExtraModel, ExtraModel},
		{"the served model missing", tritonList("preprocessing", "tensorrt_llm"), "ensemble", WrongModel, WrongModel},
		{"a step's name in another case", tritonList("ensemble", "Preprocessing"), "ensemble", ExtraModel, ExtraModel},
		{"llama.cpp lists its model path", `{"object":"list","data":[{"id":"/models/llama-3.1-8b-q4_k_m.gguf","object":"model","created":1,"owned_by":"llamacpp","meta":{"n_ctx_train":131072}}]}`,
			"/models/llama-3.1-8b-q4_k_m.gguf", Ready, Ready},
		{"llama.cpp path against a base name", `{"object":"list","data":[{"id":"/models/llama-3.1-8b-q4_k_m.gguf","object":"model"}]}`,
			"llama-3.1-8b-q4_k_m.gguf", WrongModel, WrongModel},
		{"malformed", `{"data":[{"id":"ensemble"}]}x`, "ensemble", WrongModel, WrongModel},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.openai, RuleOpenAI.CheckModels([]byte(tc.body), tc.served), "openai rule")
			assert.Equal(t, tc.openai, CheckModels([]byte(tc.body), tc.served), "the package rule is the openai one")
			assert.Equal(t, tc.triton, RuleTriton.CheckModels([]byte(tc.body), tc.served), "triton rule")
		})
	}
	assert.Equal(t, []string{"ensemble", "preprocessing", "postprocessing", "tensorrt_llm", "tensorrt_llm_bls"}, TritonEnsembleParts())
}

// TestProberFollowsTheRule: a Triton member is probed on /health/ready (it has no /health), an
// OpenAI-shaped one on /health, and each model list is read by its target's rule.
func TestProberFollowsTheRule(t *testing.T) {
	serve := func(health string) *httptest.Server {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(tritonList("ensemble", "tensorrt_llm")))
		})
		mux.HandleFunc("GET "+health, func(http.ResponseWriter, *http.Request) {})
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		return srv
	}
	triton, plain := serve("/health/ready"), serve("/health")
	targets := []Target{
		{Tier: "t", Member: "a", BaseURL: triton.URL, ServedModel: "ensemble", Rule: RuleTriton},
		{Tier: "t", Member: "b", BaseURL: triton.URL + "/", ServedModel: "ensemble"},
		{Tier: "t", Member: "c", BaseURL: plain.URL, ServedModel: "ensemble", Rule: RuleTriton},
	}
	p := NewProber(http.DefaultClient, targets, time.Second, 2*time.Second)
	p.ProbeAll(context.Background())
	assert.Equal(t, []MemberVerdict{{"a", Ready}, {"b", ExtraModel}, {"c", Unhealthy}}, p.State().Verdicts("t"))

	// A rule change is a new target: the verdict starts over.
	targets[1].Rule = RuleTriton
	fresh := p.Retarget(targets, time.Second, 2*time.Second)
	require.Len(t, fresh, 1)
	assert.Equal(t, Unprobed, p.State().Verdicts("t")[1].Verdict)
	p.ProbeTargets(context.Background(), fresh)
	assert.Equal(t, Ready, p.State().Verdicts("t")[1].Verdict)
}

// FuzzRuleCheckModels: the Triton rule only ever forgives the TensorRT-LLM steps: it finds the
// served model exactly when the OpenAI rule does, is ready whenever the OpenAI rule is, and an
// extra model under it is one under the OpenAI rule too.
func FuzzRuleCheckModels(f *testing.F) {
	f.Add(tritonList("ensemble", "postprocessing", "preprocessing", "tensorrt_llm", "tensorrt_llm_bls"), "ensemble")
	f.Add(tritonList("ensemble", "whisper"), "ensemble")
	f.Add(`{"data":[{"id":"tensorrt_llm"},{"id":"m","parent":"tensorrt_llm"}]}`, "tensorrt_llm")
	f.Add(`{"data":[{"id":"ensemble"}]} x`, "ensemble")
	f.Fuzz(func(t *testing.T, body, served string) {
		openai, triton := RuleOpenAI.CheckModels([]byte(body), served), RuleTriton.CheckModels([]byte(body), served)
		require.Contains(t, []Verdict{Ready, WrongModel, ExtraModel}, triton)
		assert.Equal(t, openai == WrongModel, triton == WrongModel, "the served model is found by both or neither")
		if openai == Ready {
			assert.Equal(t, Ready, triton)
		}
		if triton == ExtraModel {
			assert.Equal(t, ExtraModel, openai)
		}
	})
}
