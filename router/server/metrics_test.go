package server_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/server"
)

// statusClass mirrors the metric's status_class label.
func statusClass(status int) string {
	if status < 100 || status > 599 {
		return "none"
	}
	return strconv.Itoa(status/100) + "xx"
}

// The request metrics are counted from the decision records, so both tell the same story: every
// outcome, attempt and refusal of real traffic shows up with bounded labels, and the whole page passes
// the Prometheus lint.
func TestRequestMetricsFollowTheDecisionLog(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 1}))
	send := func(body string, want int) {
		t.Helper()
		code, out, _ := r.do(t, "/v1/chat/completions", body)
		require.Equal(t, want, code, out)
		r.wait(t, 1)
	}
	send(chatBody(2, false), http.StatusOK)
	send(chatBody(2, true), http.StatusOK)
	send(`{"model":"nope","messages":[{"role":"user","content":"x"}]}`, http.StatusNotFound)
	send(`{"model":"chat","messages":[{"role":"user","content":"x"}],"max_tokens":100000}`, http.StatusBadRequest)
	for _, m := range ms {
		fault(t, m, fakevllm.Faults{HTTPErrors: []fakevllm.HTTPErrorFault{{Status: 500, Rate: 1}}})
	}
	send(chatBody(2, false), http.StatusInternalServerError)
	for _, m := range ms {
		fault(t, m, fakevllm.Faults{})
	}
	status, body := r.admin(t, `{"action":"quiesce","tier":"replicas"}`)
	require.Equal(t, http.StatusOK, status, body)
	send(chatBody(2, false), http.StatusServiceUnavailable)
	status, body = r.admin(t, `{"action":"readmit","tier":"replicas"}`)
	require.Equal(t, http.StatusOK, status, body)
	hold := []func(){inFlightOne(t, r, ms), inFlightOne(t, r, ms)} // both ceilings of one taken
	send(chatBody(2, false), http.StatusServiceUnavailable)

	_, page := r.get(t, "/metrics", observerToken) // Prometheus scrapes with the read-only token
	mfs := families(t, page)
	type key struct{ alias, tier, member, outcome, class string }
	want := map[key]float64{}
	attempts := map[[2]string]float64{}
	for _, rec := range r.srv.Decisions().Recent(100) {
		want[key{rec.Alias, rec.Tier, rec.Member, string(rec.Outcome), statusClass(rec.Status)}]++
		if rec.Attempts == 1 {
			attempts[[2]string{rec.Tier, rec.Member}]++
		}
	}
	require.Len(t, r.srv.Decisions().Recent(100), 7)
	var total float64
	for k, n := range want {
		v, ok := series(mfs, "anvil_router_requests_total", map[string]string{"alias": k.alias, "tier": k.tier,
			"member": k.member, "outcome": k.outcome, "status_class": k.class})
		assert.True(t, ok, "%+v", k)
		assert.Equal(t, n, v, "%+v", k)
		total += v
	}
	var seen float64
	for _, m := range mfs["anvil_router_requests_total"].GetMetric() {
		seen += m.GetCounter().GetValue()
	}
	assert.Equal(t, total, seen, "no request counted that the decision log does not hold")
	for k, n := range attempts {
		labels := map[string]string{"tier": k[0], "member": k[1]}
		v, _ := series(mfs, "anvil_router_upstream_attempts_total", labels)
		assert.Equal(t, n, v, "attempts of %v", k)
		v, _ = series(mfs, "anvil_router_request_duration_seconds", labels)
		assert.Equal(t, n, v, "one duration per attempted request of %v", k)
	}
	for reason, n := range map[string]float64{"quiesced": 1, "exhausted": 1} {
		v, _ := series(mfs, "anvil_router_admission_refusals_total", map[string]string{"tier": "replicas", "reason": reason})
		assert.Equal(t, n, v, reason)
	}
	v, _ := series(mfs, "anvil_router_requests_total", map[string]string{"alias": "", "tier": "", "member": "",
		"outcome": string(decisionlog.OutcomeRefused), "status_class": "4xx"})
	assert.EqualValues(t, 1, v, "an unknown alias is counted without its caller-chosen name")
	assert.NotContains(t, page, "nope", "a caller's model string never becomes a label")
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "anvil_router_decision_log_records_total",
		"anvil_router_member_readiness", "anvil_router_request_first_byte_seconds"} {
		assert.Contains(t, mfs, name)
	}

	problems, err := testutil.GatherAndLint(r.srv.Registry())
	require.NoError(t, err)
	assert.Empty(t, problems, "the page passes client_golang's promtool lint")

	for _, end := range hold {
		end()
	}
	r.wait(t, 2)
	assertSettled(t, r.snapshot(t, "replicas"))
}

// inFlightOne holds one slow stream on the capacity tier of ms.
func inFlightOne(t *testing.T, r *router, ms []*member) func() {
	t.Helper()
	return inFlight(t, r, "chat", ms)
}

// With metrics.listen (here a listener handed over in Options), /metrics is served alone and without a
// token on the second address, still behind the admin token on the main one, and both stop together.
func TestMetricsListener(t *testing.T) {
	ms := startMembers(t, 2)
	cfg, err := load.Parse([]byte(replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2})), env)
	require.NoError(t, err)
	mln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv, err := server.New(cfg, server.Options{MetricsListener: mln})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	var once sync.Once
	var result error
	stop := func() error {
		once.Do(func() { cancel(); result = <-served })
		return result
	}
	defer stop()

	get := func(url, token string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	metricsURL := "http://" + mln.Addr().String()
	code, page := get(metricsURL+"/metrics", "")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, "anvil_router_replica_tier_active_requests")
	for _, path := range []string{"/admin/v1/capacity", "/v1/models", "/healthz", "/"} {
		code, _ = get(metricsURL+path, adminToken)
		assert.Equal(t, http.StatusNotFound, code, "the metrics listener serves /metrics alone: %s", path)
	}
	code, _ = get("http://"+ln.Addr().String()+"/metrics", "")
	assert.Equal(t, http.StatusUnauthorized, code, "the main listener still wants the admin token")
	code, _ = get("http://"+ln.Addr().String()+"/metrics", adminToken)
	assert.Equal(t, http.StatusOK, code)

	require.NoError(t, stop())
	_, err = http.Get(metricsURL + "/metrics")
	assert.Error(t, err, "the metrics listener stops with the server")
}

// metrics.listen itself is bound by Serve; an address in use is a clear error.
func TestMetricsListenBinds(t *testing.T) {
	ms := startMembers(t, 2)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	for _, c := range []struct {
		addr string
		ok   bool
	}{{"127.0.0.1:0", true}, {busy.Addr().String(), false}} {
		yaml := replicaYAML(ms, tierOpts{extra: "metrics:\n  listen: \"" + c.addr + "\"\n"})
		cfg, err := load.Parse([]byte(yaml), env)
		require.NoError(t, err)
		srv, err := server.New(cfg, server.Options{})
		require.NoError(t, err)
		ln, err := srv.BindMetrics()
		if c.ok {
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(ln.Addr().String(), "127.0.0.1:"))
			require.NoError(t, ln.Close())
		} else {
			assert.ErrorContains(t, err, "server: metrics listener")
		}
		require.NoError(t, srv.Close())
	}
}
