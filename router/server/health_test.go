package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/decisionlog"
)

// TestFailingMemberIsNoBlackHole is the passive-health run of the issue, over real HTTP: four fake
// vLLM members, one answering 500 to every inference request while its /health stays 200, and 2000
// requests from 12 concurrent clients. The failing member must receive at most 5% of them and the
// tier must keep at least 70% success; the ejection shows in the admission view and the records.
// Exactly one attempt per request and reconciled leases still hold.
func TestFailingMemberIsNoBlackHole(t *testing.T) {
	cases := []struct {
		strategy string
		requests int
	}{{"capacity", 2000}, {"round_robin", 800}}
	for _, c := range cases {
		t.Run(c.strategy, func(t *testing.T) {
			ms := startMembers(t, 4)
			r := startRouter(t, replicaYAML(ms, tierOpts{strategy: c.strategy, memberCeiling: 8,
				extra: "decision_log:\n  ring_size: 4096\n"}))
			fault(t, ms[3], fakevllm.Faults{HTTPErrors: []fakevllm.HTTPErrorFault{{Status: 500, Rate: 1}}})

			statuses := drive(t, r, c.requests, 12)
			ok := statuses[http.StatusOK]
			failing := ms[3].calls.Load()
			t.Logf("%s: %d requests, %d succeeded (%.1f%%), the failing member received %d (%.2f%%)",
				c.strategy, c.requests, ok, 100*float64(ok)/float64(c.requests), failing, 100*float64(failing)/float64(c.requests))
			assert.LessOrEqual(t, float64(failing), 0.05*float64(c.requests), "the failing member's share")
			assert.GreaterOrEqual(t, float64(ok), 0.70*float64(c.requests), "the tier's success rate")
			assert.Equal(t, int64(c.requests), totalCalls(ms), "exactly one attempt per request, no retry on a peer")
			s := r.snapshot(t, "replicas")
			assertSettled(t, s)
			assert.EqualValues(t, c.requests, s.Acquired)

			view := admissionView(t, r)
			m03 := view["m03"]
			require.NotNil(t, m03, "the failing member's passive health is in the admission view")
			assert.Positive(t, m03.Ejections)
			assert.Contains(t, []string{"ejected", "half_open"}, m03.State)
			assert.Equal(t, "healthy", view["m00"].State)

			var withEjected, admittedToFailing int
			for _, rec := range r.srv.Decisions().Recent(c.requests) {
				if rec.EjectedMembers > 0 {
					withEjected++
				}
				if rec.Member == "m03" {
					admittedToFailing++
					assert.Equal(t, decisionlog.OutcomeUpstreamHTTPError, rec.Outcome)
				}
				assert.LessOrEqual(t, rec.EjectedMembers, 2, "the cap: at most half of four members")
			}
			assert.Positive(t, withEjected, "records routed while the member was ejected say so")
			assert.EqualValues(t, failing, admittedToFailing)
		})
	}
}

// drive sends n chat completions from clients concurrent clients and counts the statuses. It returns
// once every request's handler has finished (each client takes one of the router's done signals per
// request, which also keeps that buffered channel from filling).
func drive(t *testing.T, r *router, n, clients int) map[int]int {
	t.Helper()
	jobs := make(chan struct{}, n)
	for range n {
		jobs <- struct{}{}
	}
	close(jobs)
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for range jobs {
				resp := r.post(t, context.Background(), "/v1/chat/completions", chatBody(2, false))
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				statuses[resp.StatusCode]++
				mu.Unlock()
				r.wait(t, 1)
			}
		})
	}
	wg.Wait()
	return statuses
}

type memberHealthView struct {
	State     string `json:"state"`
	Streak    int    `json:"streak"`
	Ejections uint64 `json:"ejections"`
}

// admissionView reads GET /admin/v1/admission and returns the replica tier's members' passive health.
func admissionView(t *testing.T, r *router) map[string]*memberHealthView {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, r.http.URL+"/admin/v1/admission", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var tiers []struct {
		ID      string `json:"id"`
		Members []struct {
			ID            string            `json:"id"`
			PassiveHealth *memberHealthView `json:"passive_health"`
		} `json:"members"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tiers))
	out := map[string]*memberHealthView{}
	for _, tier := range tiers {
		if tier.ID != "replicas" {
			continue
		}
		for _, m := range tier.Members {
			out[m.ID] = m.PassiveHealth
		}
	}
	require.NotEmpty(t, out)
	return out
}
