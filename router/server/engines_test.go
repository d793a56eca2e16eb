package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/capacity"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// engineMember starts a fake member that shows itself as engine e serving model.
func engineMember(t *testing.T, e, model string, seed uint64) *member {
	t.Helper()
	m := startMemberWith(t, fakevllm.Options{Models: []string{model}, Profile: engine.TinyProfile(), Seed: seed, Engine: e})
	m.model = model
	return m
}

// warmMember sends one short request straight to a member: an idle member that has served before. (TGI
// prints its request series only from its first request; before it, its pressure is unknown.)
func warmMember(t *testing.T, m *member) {
	t.Helper()
	resp, err := http.Post(m.URL()+"/v1/chat/completions", "application/json", strings.NewReader(
		`{"model":"`+m.served()+`","messages":[{"role":"user","content":"hi"}],"max_tokens":1}`))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// capacityTelemetry reads GET /admin/v1/capacity and returns each member's telemetry of the tier.
func capacityTelemetry(t *testing.T, r *router) map[string]*capacity.Telemetry {
	t.Helper()
	code, body := r.get(t, "/admin/v1/capacity", observerToken)
	require.Equal(t, http.StatusOK, code, body)
	var doc struct {
		Tiers []struct {
			ID      string `json:"id"`
			Members []struct {
				ID        string              `json:"id"`
				Telemetry *capacity.Telemetry `json:"telemetry"`
			} `json:"members"`
		} `json:"tiers"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &doc), body)
	out := map[string]*capacity.Telemetry{}
	for _, tier := range doc.Tiers {
		for _, m := range tier.Members {
			out[m.ID] = m.Telemetry
		}
	}
	return out
}

// TestEveryEngineSteersToTheIdleMember is the acceptance of tiers[].engine: for each engine, a
// capacity tier of two fake members of that engine, one loaded (8 running and 4 waiting against a
// ceiling of 8: 1.5e6 ppm) and one idle. Once both read fresh, sequential requests go to the idle
// one, and the capacity JSON shows the loaded member's exact ppm and the signals its engine's page
// carries (llama.cpp's current page has no KV figure: missing, not zero). A Triton tier serving
// the TensorRT-LLM ensemble reads its members' tensorrt_llm backend series, as Triton labels them.
func TestEveryEngineSteersToTheIdleMember(t *testing.T) {
	for _, e := range fakevllm.Engines() {
		t.Run(e, func(t *testing.T) { steersToTheIdleMember(t, e, servedModel) })
	}
	t.Run("trtllm-ensemble", func(t *testing.T) { steersToTheIdleMember(t, "trtllm", "ensemble") })
}

func steersToTheIdleMember(t *testing.T, e, model string) {
	ms := []*member{engineMember(t, e, model, 1), engineMember(t, e, model, 2)}
	warmMember(t, ms[1])
	slow(t, ms[0], 200)
	r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "capacity", engine: e, memberCeiling: 8, model: model}))
	flood(t, ms[0], 12)
	untilPressure(t, r, func(p map[string]scheduler.Pressure) bool {
		busy, ok := p["m00"].PPM()
		return ok && busy == 1_500_000 && p["m01"].Freshness() == scheduler.FreshnessFresh
	})

	for range 6 {
		code, out, _ := r.do(t, "/v1/chat/completions", chatBody(2, false))
		require.Equal(t, http.StatusOK, code, out)
	}
	r.wait(t, 6)
	assert.Equal(t, []string{"m01", "m01", "m01", "m01", "m01", "m01"}, lastMembers(r, 6))

	tel := capacityTelemetry(t, r)
	require.NotNil(t, tel["m00"])
	assert.Equal(t, scheduler.FreshnessFresh, tel["m00"].Freshness)
	require.NotNil(t, tel["m00"].PressurePPM)
	assert.Equal(t, int64(1_500_000), *tel["m00"].PressurePPM)
	assert.Equal(t, scheduler.SignalValid, tel["m00"].RequestsState)
	wantKV := scheduler.SignalValid
	if e == "llamacpp" {
		wantKV = scheduler.SignalMissing
	}
	assert.Equal(t, wantKV, tel["m00"].KVState)
	assert.Equal(t, scheduler.FreshnessFresh, tel["m01"].Freshness)
}

// TestAnotherEnginesOrModelsPageIsUnknown: beside a member of the tier's engine (fresh), a member
// printing another engine's page, or the tier's engine's page for another model only, reads
// unknown after its scrapes completed: never fresh, never a made-up zero. (llama.cpp's and TGI's
// pages name no model, so only the engine mismatch applies to them.)
func TestAnotherEnginesOrModelsPageIsUnknown(t *testing.T) {
	engines := fakevllm.Engines()
	for i, e := range engines {
		for _, name := range []string{"wrong engine", "another model"} {
			if name == "another model" && (e == "llamacpp" || e == "tgi") {
				continue
			}
			t.Run(e+"/"+name, func(t *testing.T) {
				odd := engineMember(t, engines[(i+1)%len(engines)], servedModel, 2)
				if name == "another model" {
					odd = engineMember(t, e, "other/model", 2)
				}
				ms := []*member{engineMember(t, e, servedModel, 1), odd}
				warmMember(t, ms[0])
				r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "capacity", engine: e, memberCeiling: 8}))
				// Two scrapes of the odd member started means its first one completed (one refresh
				// at a time per member, the next due a second after the last completed).
				untilPressure(t, r, func(p map[string]scheduler.Pressure) bool {
					return odd.scrapes.Load() >= 2 && p["m00"].Freshness() == scheduler.FreshnessFresh
				})
				p, err := r.srv.Pressure("replicas")
				require.NoError(t, err)
				assert.Equal(t, scheduler.UnknownPressure(), p["m01"])
				tel := capacityTelemetry(t, r)
				require.NotNil(t, tel["m01"])
				assert.Equal(t, scheduler.FreshnessUnknown, tel["m01"].Freshness)
				assert.Nil(t, tel["m01"].PressurePPM, "no ppm, least of all 0")
				assert.Equal(t, scheduler.SignalMissing, tel["m01"].RequestsState)
			})
		}
	}
}

// TestEngineChangeReloadsLive: a reload that changes a capacity tier's engine is applied live, names
// the change, and drops the tier's samples: members whose page the new engine cannot read turn
// unknown (their fresh vLLM reading is not carried into the sglang tier), and a reload back reads
// them fresh again.
func TestEngineChangeReloadsLive(t *testing.T) {
	ms := startMembers(t, 2) // vLLM fakes
	yaml := func(e string) string {
		return replicaYAML(ms, tierOpts{strategy: "capacity", engine: e, memberCeiling: 8})
	}
	rig := startReloadRig(t, yaml("vllm"), routerOptions{})
	r := rig.router
	waitPressure(t, r, map[string]scheduler.Freshness{"m00": scheduler.FreshnessFresh, "m01": scheduler.FreshnessFresh})

	resp := rig.apply(t, yaml("sglang"))
	assert.Contains(t, resp.Changes, "tiers.replicas.engine: vllm -> sglang")
	p, err := r.srv.Pressure("replicas")
	require.NoError(t, err)
	assert.Equal(t, scheduler.UnknownPressure(), p["m00"], "the vLLM reading is not the sglang tier's")
	before := ms[0].scrapes.Load()
	untilPressure(t, r, func(p map[string]scheduler.Pressure) bool {
		return ms[0].scrapes.Load() >= before+2 && p["m00"].Freshness() == scheduler.FreshnessUnknown
	})

	rig.apply(t, yaml("vllm"))
	waitPressure(t, r, map[string]scheduler.Freshness{"m00": scheduler.FreshnessFresh, "m01": scheduler.FreshnessFresh})
}
