package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/adapter"
	"github.com/anvil-llm/anvil/scenarios"
)

// runWorld runs a scenario with a hook between building the world and starting it.
func runWorld(t *testing.T, sc *scenarios.Scenario, hook func(*world)) *Result {
	t.Helper()
	w, err := newWorld(sc, Options{})
	require.NoError(t, err)
	w.prepare()
	hook(w)
	w.start()
	w.loop()
	return w.finish()
}

// TestEngineScenariosReadThroughTheirAdapter: an engine scenario's scrapes read the virtual
// members' pages with that engine's adapter, and nothing else: the same run with another engine's
// adapter swapped in finds no signal on any page (every scrape unknown), so the fresh pressure of
// the real run is that adapter's reading.
func TestEngineScenariosReadThroughTheirAdapter(t *testing.T) {
	for _, e := range []string{adapter.SGLang, adapter.TRTLLM, adapter.LlamaCpp, adapter.TGI} {
		t.Run(e, func(t *testing.T) {
			sc := lookup(t, "engine-"+e)
			var engine string
			r := runWorld(t, sc, func(w *world) { engine = w.press.pages.engine })
			assert.Equal(t, e, engine)
			assert.Positive(t, r.Telemetry.Completed[pressure.ClassOK])
			if e != adapter.TGI { // TGI's page is empty until a member's first request
				assert.Zero(t, r.Telemetry.Completed[pressure.ClassUnknown])
			}

			other := adapter.ReadVLLM
			r = runWorld(t, lookup(t, "engine-"+e), func(w *world) { w.press.pages.read = other })
			assert.Zero(t, r.Telemetry.Completed[pressure.ClassOK], "another engine's adapter reads nothing on these pages")
			assert.Positive(t, r.Telemetry.Completed[pressure.ClassUnknown])
		})
	}
}

// TestEngineRefusedByTheRouterConfig: a scenario's engine is the router's key, validated by the
// router's config model when the scenario loads.
func TestEngineRefusedByTheRouterConfig(t *testing.T) {
	sc := lookup(t, "engine-tgi")
	sc.Tier.Engine = "ollama"
	_, err := Run(sc, Options{})
	require.ErrorIs(t, err, ErrScenario)
	assert.Contains(t, err.Error(), "tiers[0].engine: must be one of vllm, sglang, trtllm, llamacpp, tgi")
}
