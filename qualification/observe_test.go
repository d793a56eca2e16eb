package qualification

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/decisionlog"
)

const (
	vllmModels = `{"object":"list","data":[{"id":"m/one","object":"model","created":1,"owned_by":"vllm","root":"m/one","parent":null,"max_model_len":8192,"permission":[]}]}`
	vllmPage   = `# HELP vllm:request_success_total Count of successfully processed requests.
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="length",model_name="m/one"} 7
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m/one"} 3
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m/other"} 100
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m/one"} 2
vllm:num_requests_running{engine="1",model_name="m/one"} 1
`
	routerPage = `# TYPE anvil_router_requests_total counter
anvil_router_requests_total{alias="chat",member="m0",outcome="success",status_class="2xx",tier="pool"} 10
anvil_router_requests_total{alias="chat",member="m1",outcome="success",status_class="2xx",tier="pool"} 5
anvil_router_requests_total{alias="chat",member="",outcome="not_admitted",status_class="5xx",tier="pool"} 2
anvil_router_requests_total{alias="x",member="",outcome="success",status_class="2xx",tier="other"} 99
# TYPE anvil_router_upstream_attempts_total counter
anvil_router_upstream_attempts_total{member="m0",tier="pool"} 10
anvil_router_upstream_attempts_total{member="m1",tier="pool"} 5
`
	capacityDoc = `{"tiers":[{"id":"direct","kind":"direct","state":"admitting","draining":false,"active_requests":0,"max_concurrency":0,"released":0,"release_misuse":0},
{"id":"pool","kind":"replica","strategy":"capacity","state":"admitting","draining":false,"active_requests":1,"max_concurrency":4,"released":9,"release_misuse":0,
 "queue":{"waiting":0,"max_waiting":8,"refused_full":0},
 "members":[{"id":"m0","state":"admitting","draining":false,"active_requests":1,"max_concurrency":2,"telemetry":{"freshness":"fresh","pressure_ppm":5,"requests_state":"valid","kv_state":"valid"}},
            {"id":"m1","state":"quiesced","draining":false,"active_requests":0,"max_concurrency":2}]}]}`
	readyDoc = `{"ready":false,"reasons":["tier_not_admitting"],"tiers":[{"tier":"pool","state":"admitting","ready":2,"admitting":1,"members":2}]}`
)

func TestParseModels(t *testing.T) {
	list, err := parseModels([]byte(vllmModels))
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "m/one", list[0].ID)
	assert.Equal(t, int64(8192), *list[0].MaxModelLen)
	empty, err := parseModels([]byte(`{"object":"list","data":[]}`))
	require.NoError(t, err)
	assert.Empty(t, empty, "a member that is not ready lists nothing")
	for _, bad := range []string{``, `[]`, `{"data":null}`, `{"object":"list"}`, `{"data":[{"id":""}]}`, `{"data":[{"id":"a","max_model_len":-1}]}`, `{"data":[{"id":5}]}`} {
		_, err := parseModels([]byte(bad))
		assert.ErrorIs(t, err, errNotModels, bad)
	}
	v, err := parseVersion([]byte(`{"version":"0.12.0"}`))
	require.NoError(t, err)
	assert.Equal(t, "0.12.0", v)
	v, err = parseVersion([]byte("{\"version\":\"\\u0007bell\"}"))
	require.NoError(t, err)
	assert.Equal(t, "(not printable)", v, "a member cannot write control bytes into a report")
	_, err = parseVersion([]byte(`{"v":"1"}`))
	assert.ErrorIs(t, err, errNotVersion)
}

func TestParseMetrics(t *testing.T) {
	l, err := parseMetrics([]byte(vllmPage), "m/one")
	require.NoError(t, err)
	assert.Equal(t, memberLoad{Finished: 10, Running: 3}, l, "the served model's series, summed over reasons and engines")
	for name, page := range map[string]string{
		"other model only": vllmPage[:0] + "vllm:request_success_total{model_name=\"x\"} 1\nvllm:num_requests_running{model_name=\"x\"} 0\n",
		"no running":       "# TYPE vllm:request_success_total counter\nvllm:request_success_total{model_name=\"m/one\"} 1\n",
		"fractional":       "vllm:request_success_total{model_name=\"m/one\"} 1.5\nvllm:num_requests_running{model_name=\"m/one\"} 0\n",
		"negative":         "vllm:request_success_total{model_name=\"m/one\"} 1\nvllm:num_requests_running{model_name=\"m/one\"} -1\n",
		"NaN":              "vllm:request_success_total{model_name=\"m/one\"} NaN\nvllm:num_requests_running{model_name=\"m/one\"} 0\n",
		"not a page":       "<html>",
		"histogram":        "# TYPE vllm:num_requests_running histogram\nvllm:num_requests_running_bucket{model_name=\"m/one\",le=\"+Inf\"} 1\nvllm:num_requests_running_count{model_name=\"m/one\"} 1\nvllm:num_requests_running_sum{model_name=\"m/one\"} 1\nvllm:request_success_total{model_name=\"m/one\"} 1\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parseMetrics([]byte(page), "m/one")
			assert.ErrorIs(t, err, errNotMetrics)
		})
	}
}

func TestParseCounters(t *testing.T) {
	c, err := parseCounters([]byte(routerPage), "pool")
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"success": 15, "not_admitted": 2}, c.Outcomes)
	assert.Equal(t, map[string]int64{"m0": 10, "m1": 5}, c.Attempts)
	assert.Equal(t, int64(17), c.decisions())
	assert.Equal(t, int64(15), c.admitted())
	assert.Equal(t, int64(15), c.attempts())
	before := counters{Outcomes: map[string]int64{"success": 5}, Attempts: map[string]int64{"m0": 5}}
	d := c.minus(before)
	assert.Equal(t, int64(10), d.Outcomes["success"])
	assert.Equal(t, int64(5), d.Attempts["m0"])
	assert.Equal(t, int64(5), d.Attempts["m1"])

	fresh, err := parseCounters([]byte("# TYPE go_goroutines gauge\ngo_goroutines 7\n"), "pool")
	require.NoError(t, err, "a router that counted nothing yet has no series")
	assert.Zero(t, fresh.decisions())
	for _, bad := range []string{"<html>", "anvil_router_requests_total{tier=\"pool\",outcome=\"success\"} 1.5\n",
		"anvil_router_requests_total{tier=\"pool\",outcome=\"success\"} -1\n", "anvil_router_upstream_attempts_total{tier=\"pool\"} 1\n"} {
		_, err := parseCounters([]byte(bad), "pool")
		assert.ErrorIs(t, err, errNotRouterMetrics, bad)
	}
}

func TestReadRouterViews(t *testing.T) {
	tier, err := capacityTier([]byte(capacityDoc), "pool")
	require.NoError(t, err)
	assert.Equal(t, "capacity", tier.Strategy)
	assert.Equal(t, uint64(9), tier.Released)
	require.Len(t, tier.Members, 2)
	assert.Equal(t, "quiesced", tier.Members[1].State)
	assert.False(t, idle(tier))
	_, err = capacityTier([]byte(capacityDoc), "missing")
	assert.Error(t, err)
	_, err = capacityTier([]byte(`{"tiers":[{"id":"pool","active_requests":"x"}]}`), "pool")
	assert.ErrorIs(t, err, errNotCapacity)

	rt, err := readyTier([]byte(readyDoc), "pool")
	require.NoError(t, err)
	assert.Equal(t, tierReadiness{Tier: "pool", State: "admitting", Ready: 2, Admitting: 1, Members: 2}, rt)
	_, err = readyTier([]byte(`nope`), "pool")
	assert.ErrorIs(t, err, errNotReadyz)

	s, err := parseSummary([]byte(`{"records":3,"skipped":0,"admitted":2,"attempts":2,"outcomes":[{"key":"success","n":2}],"status_classes":[],"duration":{},"tiers":[{"tier":"pool","records":3,"admitted":2,"attempts":2,"outcomes":[{"key":"success","n":2},{"key":"not_admitted","n":1}],"duration":{},"members":[]}]}`))
	require.NoError(t, err)
	require.Len(t, s.Tiers, 1)
	assert.Equal(t, decisionlog.Count{Key: string(decisionlog.OutcomeNotAdmitted), N: 1}, s.Tiers[0].Outcomes[1])
	for _, bad := range []string{`[]`, `{"records":-1}`, `{} {}`} {
		_, err := parseSummary([]byte(bad))
		assert.ErrorIs(t, err, errNotSummary, bad)
	}
}
