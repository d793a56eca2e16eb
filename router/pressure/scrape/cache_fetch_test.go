package scrape_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/pressure"
	"github.com/anvil-llm/anvil/router/pressure/scrape"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// pages serves a canned /metrics answer per host; a missing host is a transport error.
type pages map[string]struct {
	status int
	body   string
}

func (p pages) RoundTrip(r *http.Request) (*http.Response, error) {
	page, ok := p[r.URL.Host]
	if !ok || r.URL.Path != "/metrics" {
		return nil, io.ErrUnexpectedEOF
	}
	return &http.Response{StatusCode: page.status, Header: http.Header{}, Request: r,
		Body: io.NopCloser(bytes.NewReader([]byte(page.body)))}, nil
}

// TestCacheDefaultFetch runs the production collector (Fetch with the cache's
// client) end to end on fake time: adapter classes become typed pressure.
func TestCacheDefaultFetch(t *testing.T) {
	run, wait := "vllm:num_requests_running", "vllm:num_requests_waiting"
	valid := gauge(run, "1") + gauge(wait, "1") + gauge("vllm:kv_cache_usage_perc", "0.25")
	transport := pages{
		"ok.test":        {200, valid},
		"garbage.test":   {200, "vllm:num_requests_running{ 1 2 3\n"},
		"missing.test":   {200, gauge("vllm:num_requests_waiting_by_reason", "5")},
		"nan.test":       {200, gauge(run, "NaN") + gauge(wait, "1")},
		"error.test":     {500, valid},
		"other.test":     {200, "vllm:num_requests_running{model_name=\"other\"} 1\n"},
		"legacy-kv.test": {200, gauge("vllm:gpu_cache_usage_perc", "0.9")},
	}
	spec := pressure.TierSpec{ID: "chat", ServedModel: llama}
	for _, id := range []string{"ok", "garbage", "missing", "nan", "error", "other", "legacy-kv", "down"} {
		spec.Members = append(spec.Members, pressure.MemberSpec{ID: id, Endpoint: "http://" + id + ".test/", Capacity: 4})
	}
	synctest.Test(t, func(t *testing.T) {
		c, err := scrape.NewCache([]pressure.TierSpec{spec}, &http.Client{Transport: transport}, scrape.Options{})
		require.NoError(t, err)
		defer c.Close()
		snap(t, c, "chat")
		synctest.Wait()
		m := snap(t, c, "chat")
		assert.Equal(t, freshBusy(t), m["ok"])
		assert.Equal(t, mustPressure(t, scheduler.FreshnessFresh, 900_000, true, scheduler.SignalMissing, scheduler.SignalValid), m["legacy-kv"])
		for _, id := range []string{"garbage", "missing", "other"} {
			assert.Equal(t, scheduler.UnknownPressure(), m[id], id)
		}
		// A NaN series is invalid, never missing: the evidence says what the page held.
		assert.Equal(t, mustPressure(t, scheduler.FreshnessUnknown, 0, false, scheduler.SignalInvalid, scheduler.SignalMissing), m["nan"])
		for _, id := range []string{"error", "down"} {
			assert.Equal(t, failed(t), m[id], id)
		}
		assert.Equal(t, 0, c.Pending())
	})
}
