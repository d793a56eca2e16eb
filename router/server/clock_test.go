package server_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/scheduler"
	"github.com/anvil-llm/anvil/router/server"
)

// manualClock is a clock only the test moves: it stands still between advances, so every duration
// the server reports is an exact sum of advances.
type manualClock struct {
	t0     time.Time
	offset atomic.Int64
}

func (c *manualClock) now() time.Time          { return c.t0.Add(time.Duration(c.offset.Load())) }
func (c *manualClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// startClockMember is a real fake-vLLM member that, while armed, advances the clock by the armed
// amount when a generation request reaches it, before the engine answers a byte.
func startClockMember(t *testing.T, clock *manualClock, armed *atomic.Int64, seed uint64) *member {
	t.Helper()
	fake, err := fakevllm.NewServer(fakevllm.Options{Models: []string{servedModel}, Profile: engine.TinyProfile(), Seed: seed})
	require.NoError(t, err)
	m := &member{fake: fake, entered: make(chan struct{}, 64)}
	h := fake.Handler()
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			clock.advance(time.Duration(armed.Swap(0)))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		m.srv.CloseClientConnections()
		m.srv.Close()
		fake.Close()
	})
	return m
}

// TestOneClockReachesRecordLogAndPressure: Options.Now is the one clock of the request path. A
// member moves the manual clock by 7 s while it holds a request, so the decision record's duration
// and the relay's first-byte time are both exactly 7 s, the access-log line says 7000 ms, and the
// pressure samples taken before it are exactly 7 s old (stale) on /metrics, in the cache and in the
// next decision's evidence. A shell on the wall clock would show milliseconds instead.
func TestOneClockReachesRecordLogAndPressure(t *testing.T) {
	clock := &manualClock{t0: time.Unix(1_700_000_000, 0).UTC()}
	var armed atomic.Int64
	ms := []*member{startClockMember(t, clock, &armed, 1), startClockMember(t, clock, &armed, 2)}
	logs := &lockedBuffer{}
	r := startRouterWith(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 8}), routerOptions{
		logger: slog.New(slog.NewJSONHandler(logs, nil)), server: server.Options{Now: clock.now}})
	// Both members sampled at t0: the clock stands still, so no refresh falls due before it moves.
	waitPressure(t, r, map[string]scheduler.Freshness{"m00": scheduler.FreshnessFresh, "m01": scheduler.FreshnessFresh})
	sampled := clock.now()

	const held = 7 * time.Second
	armed.Store(int64(held))
	code, out, _ := r.do(t, "/v1/chat/completions", chatBody(2, false))
	require.Equal(t, http.StatusOK, code, out)
	r.wait(t, 1)
	require.Zero(t, armed.Load(), "the request reached a member and moved the clock")

	recs := r.srv.Decisions().Recent(1)
	require.Len(t, recs, 1)
	rec := recs[0]
	assert.Equal(t, sampled, rec.Start, "the walk's clock")
	assert.Equal(t, held, rec.Duration, "the record's duration")
	assert.Equal(t, held, rec.FirstByte, "the relay's first-byte time")
	require.NotNil(t, rec.ReplicaScheduler)
	for _, s := range rec.ReplicaScheduler.Scores() {
		assert.Equal(t, scheduler.FreshnessFresh, s.Freshness(), "%s was sampled when the request arrived", s.MemberID())
	}
	var line struct {
		Duration int64 `json:"duration_ms"`
	}
	require.NoError(t, json.Unmarshal([]byte(requestLine(t, logs.String(), rec.RequestID)), &line))
	assert.Equal(t, held.Milliseconds(), line.Duration, "the access log's duration")

	// The samples are now 7 s old by the same clock: stale in the cache, 7 s on /metrics.
	p, err := r.srv.Pressure("replicas")
	require.NoError(t, err)
	for _, id := range []string{"m00", "m01"} {
		assert.Equal(t, scheduler.FreshnessStale, p[id].Freshness(), id)
	}
	code, metrics := r.get(t, "/metrics", adminToken)
	require.Equal(t, http.StatusOK, code)
	for _, id := range []string{"m00", "m01"} {
		series := `anvil_router_replica_member_pressure_sample_age_seconds{member="` + id + `",tier="replicas"} `
		assert.Equal(t, series+"7", metricLine(metrics, series))
	}

	// The next decision ranks on those stale samples: the evidence reads the same clock.
	code, out, _ = r.do(t, "/v1/chat/completions", chatBody(2, false))
	require.Equal(t, http.StatusOK, code, out)
	r.wait(t, 1)
	next := r.srv.Decisions().Recent(1)[0]
	require.NotNil(t, next.ReplicaScheduler)
	for _, s := range next.ReplicaScheduler.Scores() {
		assert.Equal(t, scheduler.FreshnessStale, s.Freshness(), s.MemberID())
	}
	assert.Zero(t, next.Duration, "the clock stood still")
}

// requestLine returns the access-log line of one request.
func requestLine(t *testing.T, logs, id string) string {
	t.Helper()
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `"msg":"request"`) && strings.Contains(l, `"request_id":"`+id+`"`) {
			return l
		}
	}
	t.Fatalf("no access-log line for %s in %s", id, logs)
	return ""
}

// metricLine returns the line of the exposition that starts with series, or "" when there is none.
func metricLine(metrics, series string) string {
	for _, l := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(l, series) {
			return l
		}
	}
	return ""
}
