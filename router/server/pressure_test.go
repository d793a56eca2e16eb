package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// flood sends n slow streaming requests straight to a member, bypassing the router, so the member's own
// engine shows running and waiting requests. The returned func cancels them and waits until they end.
func flood(t *testing.T, m *member, n int) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			body := `{"model":"` + m.served() + `","messages":[{"role":"user","content":"busy"}],"max_tokens":512,"ignore_eos":true,"stream":true}`
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, m.URL()+"/v1/chat/completions", strings.NewReader(body))
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				readEvents(t, resp.Body)
				resp.Body.Close()
			}
		})
	}
	for range n {
		<-m.entered
	}
	stop := func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	return stop
}

// nudgeWait bounds a nudge's wait for its request to finish: a request cancelled before it reached
// the handler never finishes there, so nothing would ever arrive on done.
const nudgeWait = 5 * time.Second

// nudge sends one routed request the caller abandons after a short deadline: admission selects (and
// the pressure cache schedules due refreshes) whether or not the chosen member is fast. It returns once
// the router has finished the request and released its lease, once stop is closed, or after
// nudgeWait, so a failing test fails at once instead of hanging to the go test timeout.
func nudge(t *testing.T, r *router, stop <-chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.http.URL+"/v1/chat/completions", strings.NewReader(chatBody(1, false)))
	req.Header.Set("Authorization", "Bearer "+callerToken)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	wait := time.NewTimer(nudgeWait)
	defer wait.Stop()
	select {
	case <-r.done:
	case <-stop:
	case <-wait.C:
	}
}

// untilPressure waits, by events, until the cache's pressure for the tier satisfies ok. A background
// nudger keeps routed requests coming, so every refresh that falls due is scheduled by a snapshot; the
// test wakes at each completed refresh and checks. The guard only turns a hang into a failure.
func untilPressure(t *testing.T, r *router, ok func(map[string]scheduler.Pressure) bool) {
	t.Helper()
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
				nudge(t, r, stop)
			}
		}
	}()
	defer func() { close(stop); <-stopped }()
	guard := time.After(30 * time.Second)
	for {
		refreshed := r.srv.PressureRefreshed() // taken before the read, so no refresh is missed
		if p, err := r.srv.Pressure("replicas"); err == nil && ok(p) {
			return
		}
		select {
		case <-refreshed:
		case <-guard:
			t.Fatal("the pressure cache never reached the expected state")
		}
	}
}

// waitPressure waits until every member's pressure has the wanted freshness.
func waitPressure(t *testing.T, r *router, want map[string]scheduler.Freshness) {
	t.Helper()
	untilPressure(t, r, func(p map[string]scheduler.Pressure) bool { return freshnessIs(p, want) })
}

func freshnessIs(p map[string]scheduler.Pressure, want map[string]scheduler.Freshness) bool {
	for id, f := range want {
		if p[id].Freshness() != f {
			return false
		}
	}
	return true
}

// lastMembers returns the members chosen by the n most recent decisions.
func lastMembers(r *router, n int) []string {
	var out []string
	for _, rec := range r.srv.Decisions().Recent(n) {
		out = append(out, rec.Member)
	}
	return out
}

func TestBusyMemberStopsReceivingTrafficWhilePeerIsFreshAndIdle(t *testing.T) {
	ms := startMembers(t, 2)
	slow(t, ms[0], 200)
	r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 8}))
	flood(t, ms[0], 12) // 8 running (max_num_seqs) and 4 waiting: 1.5e6 ppm against a ceiling of 8
	// The busy member's running plus waiting reaches the cache as fresh pressure over its ceiling.
	untilPressure(t, r, func(p map[string]scheduler.Pressure) bool {
		busy, ok := p["m00"].PPM()
		return ok && busy >= 1_500_000 && p["m01"].Freshness() == scheduler.FreshnessFresh
	})

	for range 6 {
		code, out, _ := r.do(t, "/v1/chat/completions", chatBody(2, false))
		require.Equal(t, http.StatusOK, code, out)
	}
	r.wait(t, 6)
	assert.Equal(t, []string{"m01", "m01", "m01", "m01", "m01", "m01"}, lastMembers(r, 6))
	for _, rec := range r.srv.Decisions().Recent(6) {
		scores := rec.ReplicaScheduler.Scores()
		require.Len(t, scores, 2)
		assert.Equal(t, "m01", scores[0].MemberID())
		assert.Equal(t, scheduler.FreshnessFresh, scores[1].Freshness())
	}
}

func TestMetricsOutageIsUnknownNeverIdle(t *testing.T) {
	ms := startMembers(t, 2)
	slow(t, ms[1], 200)
	fault(t, ms[0], fakevllm.Faults{Metrics: fakevllm.MetricsFault{Mode: fakevllm.MetricsError}})
	r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 8}))
	flood(t, ms[1], 12) // the only member with telemetry is busy
	waitPressure(t, r, map[string]scheduler.Freshness{"m00": scheduler.FreshnessFailed, "m01": scheduler.FreshnessFresh})

	// Were the failed member read as idle (0 ppm), it would beat its busy peer. It ranks as unknown,
	// after any fresh member at equal local load. (The busy member is slow, so these callers leave
	// early; the selection is what is checked.)
	for range 4 {
		nudge(t, r, nil)
	}
	assert.Equal(t, []string{"m01", "m01", "m01", "m01"}, lastMembers(r, 4))
	for _, rec := range r.srv.Decisions().Recent(4) {
		scores := rec.ReplicaScheduler.Scores()
		require.Len(t, scores, 2)
		last := scores[1]
		assert.Equal(t, "m00", last.MemberID())
		assert.True(t, last.UpstreamUnknown())
		assert.Equal(t, scheduler.FreshnessFailed, last.Freshness())
		_, has := last.UpstreamPressurePPM()
		assert.False(t, has, "non-fresh pressure carries no ppm")
	}
}

func TestRoundRobinRunsNoTelemetry(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "round_robin"}))
	_, err := r.srv.Pressure("replicas")
	assert.Error(t, err, "no capacity tier, no pressure cache")
}

// TestNudgeEndsWhenItsRequestNeverReachesTheRouter: a nudge whose request is refused before any
// handler runs gets nothing on done; untilPressure's teardown (stop closed) must still end it, or
// a failing pressure test hangs to the go test timeout instead of failing.
func TestNudgeEndsWhenItsRequestNeverReachesTheRouter(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // every request is refused: no handler, so nothing is ever sent on done
	r := &router{http: gone, done: make(chan string, 1)}
	stop := make(chan struct{})
	close(stop)
	ended := make(chan struct{})
	go func() { defer close(ended); nudge(t, r, stop) }()
	select {
	case <-ended:
	case <-time.After(nudgeWait):
		t.Fatal("nudge kept waiting for a request that never reached the router")
	}
}
