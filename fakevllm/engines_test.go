package fakevllm

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func engineOptions(engine string) Options {
	o := tinyOptions()
	o.Engine = engine
	return o
}

// TestEngineModelsShape: each engine's /v1/models as that engine answers it.
func TestEngineModelsShape(t *testing.T) {
	type card struct {
		ID      string  `json:"id"`
		OwnedBy string  `json:"owned_by"`
		Root    *string `json:"root"`
		Created int64   `json:"created"`
	}
	for _, tc := range []struct {
		engine, owner string
		ids           []string
		root          bool
	}{
		{"sglang", "sglang", []string{testModel}, true},
		{"trtllm", "Triton Inference Server", []string{"ensemble", "postprocessing", "preprocessing", "tensorrt_llm", "tensorrt_llm_bls", testModel}, false},
		{"llamacpp", "llamacpp", []string{testModel}, false},
		{"tgi", testModel, []string{testModel}, false},
	} {
		t.Run(tc.engine, func(t *testing.T) {
			m := startLoopback(t, engineOptions(tc.engine))
			status, body := get(t, http.DefaultClient, m.url+"/v1/models")
			require.Equal(t, http.StatusOK, status)
			var list struct {
				Object string `json:"object"`
				Data   []card `json:"data"`
			}
			require.NoError(t, json.Unmarshal(body, &list), string(body))
			assert.Equal(t, "list", list.Object)
			var ids []string
			for _, c := range list.Data {
				ids = append(ids, c.ID)
				assert.Equal(t, tc.owner, c.OwnedBy)
				assert.Equal(t, tc.root, c.Root != nil, "root field")
			}
			assert.Equal(t, tc.ids, ids)
		})
	}
}

// TestEngineHealthPath: Triton's frontend answers /health/ready and has no /health; the others
// answer /health.
func TestEngineHealthPath(t *testing.T) {
	for _, e := range Engines() {
		t.Run(e, func(t *testing.T) {
			m := startLoopback(t, engineOptions(e))
			plain, _ := get(t, http.DefaultClient, m.url+"/health")
			ready, _ := get(t, http.DefaultClient, m.url+"/health/ready")
			if e == "trtllm" {
				assert.Equal(t, []int{404, 200}, []int{plain, ready})
			} else {
				assert.Equal(t, []int{200, 404}, []int{plain, ready})
			}
		})
	}
}

// TestEngineMetricsNames: a member prints its engine's pressure families and no vLLM ones; the
// missing fault drops that engine's pressure families.
func TestEngineMetricsNames(t *testing.T) {
	for _, tc := range []struct{ engine, family string }{
		{"sglang", "sglang:num_running_reqs{engine_type=\"unified\",model_name=\"test-model\",pp_rank=\"0\",tp_rank=\"0\"} 0"},
		{"trtllm", "nv_trt_llm_request_metrics{model=\"test-model\",request_type=\"waiting\",version=\"1\"} 0"},
		{"llamacpp", "llamacpp:requests_deferred 0"},
		{"tgi", "tgi_batch_max_total_tokens 1024"}, // its request series appear with the first request
	} {
		t.Run(tc.engine, func(t *testing.T) {
			m := startLoopback(t, engineOptions(tc.engine))
			_, body := get(t, http.DefaultClient, m.url+"/metrics")
			assert.Contains(t, string(body), "\n"+tc.family+"\n")
			assert.NotContains(t, string(body), "vllm:")
			require.NoError(t, m.srv.SetFaults(Faults{Metrics: MetricsFault{Mode: MetricsMissing}}))
			_, body = get(t, http.DefaultClient, m.url+"/metrics")
			name, _, _ := strings.Cut(tc.family, "{")
			name, _, _ = strings.Cut(name, " ")
			assert.NotContains(t, string(body), name)
		})
	}
}

// TestEngineTritonEnsembleMember: a trtllm member serving Triton's ensemble lists it once among the
// repository's steps and labels its nv_trt_llm_* series with the backend model, tensorrt_llm.
func TestEngineTritonEnsembleMember(t *testing.T) {
	o := engineOptions("trtllm")
	o.Models = []string{"ensemble"}
	m := startLoopback(t, o)
	_, body := get(t, http.DefaultClient, m.url+"/v1/models")
	assert.Equal(t, 1, strings.Count(string(body), `"id":"ensemble"`), string(body))
	_, body = get(t, http.DefaultClient, m.url+"/metrics")
	assert.Contains(t, string(body), "\nnv_trt_llm_request_metrics{model=\"tensorrt_llm\",request_type=\"waiting\",version=\"1\"} 0\n")
	assert.NotContains(t, string(body), `model="ensemble",request_type`)
}

func TestEngineOptionsRefused(t *testing.T) {
	o := engineOptions("ollama")
	require.ErrorIs(t, o.Validate(), ErrInvalidOptions)
	for _, e := range []string{"trtllm", "llamacpp", "tgi"} {
		o := engineOptions(e)
		o.LoRA = []string{"sql"}
		assert.ErrorIs(t, o.Validate(), ErrInvalidOptions, e)
	}
	o = engineOptions("sglang")
	o.LoRA = []string{"sql"}
	assert.NoError(t, o.Validate())
}
