package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/decisionlog"
)

func TestDirectTier(t *testing.T) {
	m := startMember(t, "direct/model", 7)
	r := startRouter(t, fmt.Sprintf(`listen: 127.0.0.1:0
aliases: [{id: solo, tier: single}]
tiers:
  - id: single
    kind: direct
    served_model: direct/model
    max_concurrency: 2
    endpoint: %s
    gates: {max_context_tokens: 1024}
`, m.URL()))
	status, body, hdr := r.do(t, "/v1/chat/completions", `{"model":"solo","messages":[{"role":"user","content":"hi"}],"max_tokens":4}`)
	r.wait(t, 1)
	require.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, `"chat.completion"`)
	assert.NotEmpty(t, hdr.Get("X-Request-ID"))
	assert.EqualValues(t, 1, m.calls.Load())
	assertSettled(t, r.snapshot(t, "single"))

	recs := r.srv.Decisions().Recent(10)
	require.Len(t, recs, 1)
	assert.Equal(t, decisionlog.RouteDirect, recs[0].Route)
	assert.Equal(t, decisionlog.OutcomeSuccess, recs[0].Outcome)
	assert.Equal(t, "solo", recs[0].Alias)
	assert.Equal(t, 1, recs[0].Attempts)
}

// TestRequestIDIsTheRoutersWithTheCallersBeside: the answer's X-Request-ID, the record's ID and the
// member's X-Request-Id are the router's one ID; the caller's own is kept beside it in the record.
func TestRequestIDIsTheRoutersWithTheCallersBeside(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{}))
	req, err := http.NewRequest(http.MethodPost, r.http.URL+"/v1/chat/completions", strings.NewReader(chatBody(2, false)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+callerToken)
	req.Header.Set("X-Request-ID", "caller-chosen-42")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	r.wait(t, 1)
	rec := r.srv.Decisions().Recent(1)[0]
	assert.Equal(t, "caller-chosen-42", rec.CallerRequestID)
	assert.Regexp(t, `^[0-9a-f]{24}$`, rec.RequestID, "the router's own format")
	assert.Equal(t, rec.RequestID, resp.Header.Get("X-Request-ID"))
	assert.True(t, ms[0].received(rec.RequestID) || ms[1].received(rec.RequestID), "the member gets the router's ID")
	assert.False(t, ms[0].received("caller-chosen-42") || ms[1].received("caller-chosen-42"))
}

func TestRoundRobinDistribution(t *testing.T) {
	for _, n := range []int{2, 16} {
		t.Run(fmt.Sprintf("%d members", n), func(t *testing.T) {
			ms := startMembers(t, n)
			r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "round_robin"}))
			const rounds = 3
			for range rounds * n {
				status, body, _ := r.do(t, "/v1/chat/completions", chatBody(2, false))
				require.Equal(t, http.StatusOK, status, body)
			}
			r.wait(t, rounds*n)
			for i, m := range ms {
				assert.EqualValues(t, rounds, m.calls.Load(), "member %d", i)
			}
			assertSettled(t, r.snapshot(t, "replicas"))
		})
	}
}

// With no usable telemetry (every /metrics page fails), capacity mode works on local load alone: at
// equal load the rotating tie break spreads sequential requests exactly evenly.
func TestCapacityWithoutTelemetryRotatesEvenly(t *testing.T) {
	ms := startMembers(t, 4)
	for _, m := range ms {
		fault(t, m, fakevllm.Faults{Metrics: fakevllm.MetricsFault{Mode: fakevllm.MetricsError}})
	}
	r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 4}))
	for range 8 {
		status, body, _ := r.do(t, "/v1/chat/completions", chatBody(2, false))
		require.Equal(t, http.StatusOK, status, body)
	}
	r.wait(t, 8)
	for i, m := range ms {
		assert.EqualValues(t, 2, m.calls.Load(), "sequential requests at equal load rotate: member %d", i)
	}
	recs := r.srv.Decisions().Recent(8)
	for _, rec := range recs {
		require.NotNil(t, rec.ReplicaScheduler, "capacity records carry scheduler evidence")
		sel, ok := rec.ReplicaScheduler.SelectedMemberID()
		assert.True(t, ok)
		assert.Equal(t, rec.Member, sel)
	}
	assertSettled(t, r.snapshot(t, "replicas"))
}

func TestModelsListsAliases(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{}))
	req, _ := http.NewRequest(http.MethodGet, r.http.URL+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+callerToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	r.wait(t, 1)
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	assert.Equal(t, "list", list.Object)
	require.Len(t, list.Data, 1)
	assert.Equal(t, "chat", list.Data[0].ID)
}

func TestHealthAndReadiness(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{}))
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200} {
		resp, err := http.Get(r.http.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		r.wait(t, 1)
		assert.Equal(t, want, resp.StatusCode, path)
	}
	// With every member gone, the next readiness round takes the tier out and /readyz says so.
	for _, m := range ms {
		m.srv.CloseClientConnections()
		m.srv.Close()
	}
	r.srv.ProbeNow(t.Context())
	resp, err := http.Get(r.http.URL + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	r.wait(t, 1)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
}

// TestCeilingsUnderTwentyConcurrent fires twenty requests at once (released by one barrier) against
// member ceilings of 2 and 2 under a tier ceiling of 3. A sampler reads admission throughout: no member
// ever holds more than two leases, the tier never more than three, and tier active always equals the sum
// of member active. Every refusal is a clean 503 with Retry-After, and every lease is released.
func TestCeilingsUnderTwentyConcurrent(t *testing.T) {
	for _, strategy := range []string{"round_robin", "capacity"} {
		t.Run(strategy, func(t *testing.T) {
			ms := startMembers(t, 2)
			for _, m := range ms {
				slow(t, m, 40) // keep admitted requests in flight while the rest arrive
			}
			r := startRouter(t, replicaYAML(ms, tierOpts{strategy: strategy, memberCeiling: 2, tierCeiling: 3}))
			ta, _ := r.srv.Admission().Tier("replicas")
			stopSampling, sampled := make(chan struct{}), make(chan sample)
			go sampleAdmission(ta, stopSampling, sampled)

			const n = 20
			barrier := make(chan struct{})
			statuses := make([]int, n)
			retry := make([]string, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					<-barrier
					resp := r.post(t, t.Context(), "/v1/chat/completions", chatBody(4, true))
					readEvents(t, resp.Body)
					resp.Body.Close()
					statuses[i], retry[i] = resp.StatusCode, resp.Header.Get("Retry-After")
				})
			}
			close(barrier)
			wg.Wait()
			r.wait(t, n)
			close(stopSampling)
			peak := <-sampled

			ok := 0
			for i, s := range statuses {
				switch s {
				case http.StatusOK:
					ok++
				case http.StatusServiceUnavailable:
					assert.Equal(t, "1", retry[i])
				default:
					t.Errorf("request %d: unexpected status %d", i, s)
				}
			}
			assert.GreaterOrEqual(t, ok, 3, "the tier ceiling admits three at once")
			assert.Greater(t, peak.reads, 0)
			assert.LessOrEqual(t, peak.member, int64(2), "a member was oversubscribed")
			assert.LessOrEqual(t, peak.tier, int64(3), "the tier was oversubscribed")
			assert.Zero(t, peak.mismatches, "tier active must equal the sum of member active at every read")
			assert.EqualValues(t, ok, totalCalls(ms), "refusals invoke no member")
			assertSettled(t, r.snapshot(t, "replicas"))
		})
	}
}

type sample struct {
	reads        int
	tier, member int64
	mismatches   int
}

// sampleAdmission reads admission snapshots until stop closes, keeping the peaks and counting reads
// whose tier total disagrees with its members.
func sampleAdmission(ta *admission.TierAdmission, stop <-chan struct{}, out chan<- sample) {
	var s sample
	for {
		select {
		case <-stop:
			out <- s
			return
		default:
		}
		snap := ta.Snapshot()
		s.reads++
		s.tier = max(s.tier, snap.Active)
		var sum int64
		for _, m := range snap.Members {
			s.member = max(s.member, m.Active)
			sum += m.Active
		}
		if sum != snap.Active {
			s.mismatches++
		}
		runtime.Gosched()
	}
}

// A direct tier holds its own ceiling and quiesce: refusals are 503 with Retry-After and reach nothing.
func TestDirectTierCeilingAndQuiesce(t *testing.T) {
	m := startMember(t, "direct/model", 9)
	slow(t, m, 200)
	r := startRouter(t, fmt.Sprintf(`listen: 127.0.0.1:0
aliases: [{id: solo, tier: single}]
tiers:
  - id: single
    kind: direct
    served_model: direct/model
    max_concurrency: 1
    endpoint: %s
    gates: {max_context_tokens: 1024}
`, m.URL()))
	ctx, cancel := context.WithCancel(t.Context())
	held := r.post(t, ctx, "/v1/chat/completions", `{"model":"solo","messages":[{"role":"user","content":"hi"}],"max_tokens":64,"stream":true}`)
	<-m.entered
	code, out, hdr := r.do(t, "/v1/chat/completions", `{"model":"solo","messages":[{"role":"user","content":"hi"}],"max_tokens":4}`)
	r.wait(t, 1)
	assert.Equal(t, http.StatusServiceUnavailable, code, out)
	assert.Equal(t, "1", hdr.Get("Retry-After"))
	assert.Contains(t, out, `"code":"capacity_exhausted"`)
	cancel()
	held.Body.Close()
	r.wait(t, 1)

	status, body := r.admin(t, `{"action":"quiesce","tier":"single"}`)
	require.Equal(t, http.StatusOK, status, body)
	code, out, _ = r.do(t, "/v1/chat/completions", `{"model":"solo","messages":[{"role":"user","content":"hi"}],"max_tokens":4}`)
	r.wait(t, 1)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, out, `"code":"quiesced"`)
	assert.EqualValues(t, 1, m.calls.Load(), "only the first request reached the member")
	s := r.snapshot(t, "single")
	assert.Zero(t, s.Active)
	assert.Equal(t, s.Acquired, s.Released)
}
