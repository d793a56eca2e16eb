package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// nudgeWait bounds each of a nudge's waits, so a failing test fails at once instead of hanging to the
// go test timeout; nudgeLeave is how long a nudge's caller stays once the router has begun its request.
const (
	nudgeWait  = 5 * time.Second
	nudgeLeave = 150 * time.Millisecond
)

// nudgeHeader names a nudge's request, so the router's wrapper reports that request to that nudge alone.
const nudgeHeader = "X-Test-Nudge"

var nudgeSeq atomic.Uint64

// nudgeTrace is what the router's wrapper reports of one nudge's request: entered when its handler
// begins, finished when the handler has returned (the lease is released by then).
type nudgeTrace struct{ entered, finished chan struct{} }

// nudgeOf returns the trace of the nudge that sent req, or nil for any other request.
func (r *router) nudgeOf(req *http.Request) *nudgeTrace {
	id := req.Header.Get(nudgeHeader)
	if id == "" {
		return nil
	}
	if v, ok := r.nudges.Load(id); ok {
		return v.(*nudgeTrace)
	}
	return nil
}

// nudge sends one routed request and abandons it nudgeLeave after the router began it: admission selects
// (and the pressure cache schedules due refreshes) whether or not the chosen member is fast. It returns
// only once the router has finished that very request and released its lease, so the next selection
// sees no load a nudge left behind and no other request's end is taken for its own. A request the
// router never receives ends the nudge as soon as its send fails.
func nudge(t *testing.T, r *router) {
	t.Helper()
	id := strconv.FormatUint(nudgeSeq.Add(1), 10)
	nt := &nudgeTrace{entered: make(chan struct{}), finished: make(chan struct{})}
	r.nudges.Store(id, nt)
	defer r.nudges.Delete(id)
	ctx, cancel := context.WithCancel(context.Background())
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.http.URL+"/v1/chat/completions", strings.NewReader(chatBody(1, false)))
		req.Header.Set("Authorization", "Bearer "+callerToken)
		req.Header.Set(nudgeHeader, id)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	defer func() { cancel(); <-sent }()
	if !nudgeWaitFor(t, nt.entered, sent) {
		return // refused before any handler ran: there is nothing of it to wait for
	}
	leave := time.NewTimer(nudgeLeave)
	defer leave.Stop()
	select {
	case <-sent:
	case <-leave.C:
		cancel()
	}
	nudgeWaitFor(t, nt.finished, nil)
}

// nudgeWaitFor waits, at most nudgeWait, for c to close; it reports false if c did not, because
// instead the request's send ended (ended closed first) or the guard expired.
func nudgeWaitFor(t *testing.T, c, ended <-chan struct{}) bool {
	guard := time.NewTimer(nudgeWait)
	defer guard.Stop()
	select {
	case <-c:
		return true
	case <-ended:
		select { // both may be ready: a request the router answered had entered first
		case <-c:
			return true
		default:
			return false
		}
	case <-guard.C:
		t.Errorf("nudge: no word from the router's handler in %s", nudgeWait)
		return false
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
				nudge(t, r)
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
		nudge(t, r)
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
// handler runs hears nothing from the router; it must end as soon as its send fails, not sit out its
// guard, or every pressure test that meets a refused request slows to nudgeWait per nudge.
func TestNudgeEndsWhenItsRequestNeverReachesTheRouter(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // every request is refused: no handler ever runs
	r := &router{http: gone}
	ended := make(chan struct{})
	go func() { defer close(ended); nudge(t, r) }()
	select {
	case <-ended:
	case <-time.After(nudgeWait / 2): // well before the nudge's own guard would end it
		t.Fatal("nudge kept waiting for a request that never reached the router")
	}
}

// TestNudgeWaitsForItsOwnRequest: another request's end must not end a nudge, or the next selection
// still sees the nudge's lease (the race behind a failed CI run of TestMetricsOutageIsUnknownNeverIdle).
func TestNudgeWaitsForItsOwnRequest(t *testing.T) {
	ms := startMembers(t, 2)
	slow(t, ms[0], 200)
	slow(t, ms[1], 200) // every member outlasts the nudge's stay, so the router is cancelled mid-relay
	r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 8}))
	r.done <- "/v1/chat/completions" // a stale end from some other request, already waiting
	nudge(t, r)
	snap := r.srv.Admission().Snapshots()
	require.Len(t, snap, 1)
	assert.Zero(t, snap[0].Active, "the nudge returned while its own request still held a lease")
	assert.Len(t, r.done, 1, "a nudge takes no other request's end")
}
