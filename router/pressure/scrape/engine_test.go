package scrape_test

import (
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/adapter"
	"github.com/anvil-llm/anvil/router/pressure/scrape"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// TestCacheReadsWithTheTierEngine: each tier's pages are read by its own engine's adapter, so the
// same vLLM page is fresh pressure for a vllm tier and unknown (never a zero) for a tier of another
// engine.
func TestCacheReadsWithTheTierEngine(t *testing.T) {
	valid := gauge("vllm:num_requests_running", "1") + gauge("vllm:num_requests_waiting", "1") +
		gauge("vllm:kv_cache_usage_perc", "0.25")
	transport := pages{}
	var specs []pressure.TierSpec
	for _, e := range adapter.Engines() {
		spec := pressure.TierSpec{ID: e, ServedModel: llama, Engine: e}
		for _, m := range []string{"a", "b"} {
			host := e + "-" + m + ".test"
			transport[host] = struct {
				status int
				body   string
			}{200, valid}
			spec.Members = append(spec.Members, pressure.MemberSpec{ID: m, Endpoint: "http://" + host, Capacity: 4})
		}
		specs = append(specs, spec)
	}
	synctest.Test(t, func(t *testing.T) {
		c, err := scrape.NewCache(specs, &http.Client{Transport: transport}, scrape.Options{})
		require.NoError(t, err)
		defer c.Close()
		for _, e := range adapter.Engines() {
			snap(t, c, e)
		}
		synctest.Wait()
		for _, e := range adapter.Engines() {
			m, err := c.Peek(e)
			require.NoError(t, err)
			want := scheduler.UnknownPressure()
			if e == adapter.VLLM {
				want = freshBusy(t)
			}
			assert.Equal(t, want, m["a"], e)
			assert.Equal(t, want, m["b"], e)
		}
	})
}

// TestCacheRefusesAnUnknownEngine: registration and a staged reload refuse an engine no adapter
// reads, with the fixed sentinel and the tier's position only.
func TestCacheRefusesAnUnknownEngine(t *testing.T) {
	bad := tier("chat", "a", "b")
	bad.Engine = "ollama"
	_, err := scrape.NewCache([]pressure.TierSpec{tier("ok", "a", "b"), bad}, nil, scrape.Options{})
	require.ErrorIs(t, err, adapter.ErrUnknownEngine)
	assert.Equal(t, "adapter: unknown engine: tier 1", err.Error())

	c, err := scrape.NewCache([]pressure.TierSpec{tier("chat", "a", "b")}, nil, scrape.Options{})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Stage([]pressure.TierSpec{bad})
	require.ErrorIs(t, err, adapter.ErrUnknownEngine)
	assert.NotContains(t, err.Error(), "ollama")
}
