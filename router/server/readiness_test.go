package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// readinessView reads GET /admin/v1/admission: tier -> member -> readiness verdict.
func readinessView(t *testing.T, r *router) map[string]map[string]string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, r.http.URL+"/admin/v1/admission", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	r.wait(t, 1)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var tiers []struct {
		ID      string `json:"id"`
		Members []struct {
			ID        string `json:"id"`
			Readiness string `json:"readiness"`
		} `json:"members"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tiers))
	out := map[string]map[string]string{}
	for _, tr := range tiers {
		out[tr.ID] = map[string]string{}
		for _, m := range tr.Members {
			out[tr.ID][m.ID] = m.Readiness
		}
	}
	return out
}

// TestReadinessAllowsAdaptersOnly: a member that lists its served model and two LoRA adapters of it
// (as vLLM does with --lora-modules) is ready and serves; one that also lists another base model is
// not, with the fixed reason extra_model in the admission view, and gets no traffic.
func TestReadinessAllowsAdaptersOnly(t *testing.T) {
	withAdapters := startMemberWith(t, fakevllm.Options{Models: []string{servedModel}, LoRA: []string{"sql-lora", "chat-lora"},
		Profile: engine.TinyProfile(), Seed: 1})
	withOther := startMemberWith(t, fakevllm.Options{Models: []string{servedModel}, ExtraModels: []string{"test/other-base"},
		Profile: engine.TinyProfile(), Seed: 2})
	r := startRouter(t, replicaYAML([]*member{withAdapters, withOther}, tierOpts{}))

	assert.Equal(t, map[string]string{"m00": "ready", "m01": "extra_model"}, readinessView(t, r)["replicas"])
	for range 4 {
		status, body, _ := r.do(t, "/v1/chat/completions", chatBody(4, false))
		require.Equal(t, http.StatusOK, status, body)
		r.wait(t, 1)
	}
	assert.Equal(t, []string{"m00", "m00", "m00", "m00"}, lastMembers(r, 4))
	assert.Equal(t, int64(4), withAdapters.calls.Load())
	assert.Zero(t, withOther.calls.Load())
}

// TestRedirectingMemberIsNeverFollowed: a member that answers every probe (readiness and pressure)
// with a redirect to a perfect member is not ready, with the fixed reason redirected, and its pressure
// is a failed sample; the redirect target is never contacted by any probe or request.
func TestRedirectingMemberIsNeverFollowed(t *testing.T) {
	fake, err := fakevllm.NewServer(fakevllm.Options{Models: []string{servedModel}, Profile: engine.TinyProfile(), Seed: 3})
	require.NoError(t, err)
	t.Cleanup(fake.Close)
	var contacted atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		contacted.Add(1)
		fake.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(target.Close)
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirecting.Close)

	good := startMember(t, servedModel, 4)
	ms := []*member{good, {srv: redirecting, entered: make(chan struct{}, 1)}}
	r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 4}))

	assert.Equal(t, map[string]string{"m00": "ready", "m01": "redirected"}, readinessView(t, r)["replicas"])
	// Routed requests schedule the pressure scrapes of both members: the redirecting one fails.
	waitPressure(t, r, map[string]scheduler.Freshness{"m00": scheduler.FreshnessFresh, "m01": scheduler.FreshnessFailed})
	for _, m := range lastMembers(r, 5) {
		assert.Equal(t, "m00", m)
	}
	assert.Zero(t, contacted.Load(), "the redirect target was never contacted")
}
