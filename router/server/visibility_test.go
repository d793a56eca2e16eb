package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/capacity"
	"github.com/anvil-llm/anvil/router/scheduler"
)

// mixedYAML is a direct tier "hosted" (alias big), a round-robin tier "rr" (alias spread) and a
// capacity tier "replicas" (alias chat), each over its own real fake members.
func mixedYAML(direct *member, rr, pool []*member) string {
	var b strings.Builder
	b.WriteString("listen: 127.0.0.1:0\nshutdown_grace: 5s\n")
	b.WriteString("aliases:\n  - {id: big, tier: hosted}\n  - {id: spread, tier: rr}\n  - {id: chat, tier: replicas}\ntiers:\n")
	fmt.Fprintf(&b, "  - id: hosted\n    kind: direct\n    served_model: %s\n    endpoint: %s\n    max_concurrency: 4\n", servedModel, direct.URL())
	b.WriteString("    gates: {max_context_tokens: 4096, max_output_tokens: 512}\n")
	for _, tier := range []struct {
		id, strategy string
		ms           []*member
	}{{"rr", "round_robin", rr}, {"replicas", "capacity", pool}} {
		fmt.Fprintf(&b, "  - id: %s\n    kind: replica\n    served_model: %s\n    host: 127.0.0.1\n    provenance: test fakes\n", tier.id, servedModel)
		fmt.Fprintf(&b, "    replica_strategy: %s\n    gates: {max_context_tokens: 4096, max_output_tokens: 512}\n    members:\n", tier.strategy)
		for i, m := range tier.ms {
			fmt.Fprintf(&b, "      - {id: m%02d, endpoint: \"%s\", max_concurrency: 2}\n", i, m.URL())
		}
	}
	return b.String()
}

func bodyFor(alias string, maxTokens int, stream bool) string {
	return strings.Replace(chatBody(maxTokens, stream), `"model":"chat"`, `"model":"`+alias+`"`, 1)
}

// get performs an authenticated admin GET (token "" sends none) and waits for the router to finish it.
func (r *router) get(t *testing.T, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, r.http.URL+path, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r.wait(t, 1)
	return resp.StatusCode, string(b)
}

// families parses a Prometheus text page strictly.
func families(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(text))
	require.NoError(t, err, "the exposition parses back")
	return mfs
}

// series returns the value of name's series with exactly the given labels, and whether it exists.
func series(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	for _, m := range mfs[name].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if fmt.Sprint(got) == fmt.Sprint(labels) {
			switch {
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
			return m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}

// inFlight starts a slow stream on alias and returns once one of ms (one or two members) received
// it; finish speeds the members up and reads the stream to its end.
func inFlight(t *testing.T, r *router, alias string, ms []*member) (finish func()) {
	t.Helper()
	for _, m := range ms {
		slow(t, m, 1000)
		for len(m.entered) > 0 { // forget earlier arrivals: wait for this request's
			<-m.entered
		}
	}
	resp := r.post(t, t.Context(), "/v1/chat/completions", bodyFor(alias, 256, true)) // minutes at 1000x
	other := make(chan struct{})                                                      // never ready: stands in for a second member
	if len(ms) > 1 {
		other = ms[1].entered
	}
	select {
	case <-ms[0].entered:
	case <-other:
	case <-t.Context().Done():
		t.Fatal("the request never reached a member")
	}
	return func() {
		for _, m := range ms {
			slow(t, m, 1)
		}
		events := readEvents(t, resp.Body)
		resp.Body.Close()
		require.NotEmpty(t, events)
		assert.Equal(t, "[DONE]", events[len(events)-1])
	}
}

// Through the real server, with real leases, a quiesced member and real fake members: the capacity
// JSON and the metrics agree with the admission view at the same moment, direct and round-robin tiers
// keep the admission view's shape, and tier active is the sum of its members.
func TestCapacityAndMetricsAgreeWithAdmission(t *testing.T) {
	direct := startMember(t, servedModel, 7)
	rr, pool := startMembers(t, 2), startMembers(t, 2)
	r := startRouter(t, mixedYAML(direct, rr, pool))
	endDirect := inFlight(t, r, "big", []*member{direct})
	endRR := inFlight(t, r, "spread", rr)
	endPool := inFlight(t, r, "chat", pool)
	busy := "m00"
	if pool[1].calls.Load() == 1 {
		busy = "m01"
	}
	status, body := r.admin(t, `{"action":"quiesce","tier":"replicas","member_id":"`+busy+`","reason":"upgrade"}`)
	require.Equal(t, http.StatusOK, status, body)

	code, admissionBody := r.get(t, "/admin/v1/admission", adminToken)
	require.Equal(t, http.StatusOK, code)
	code, capacityBody := r.get(t, "/admin/v1/capacity", adminToken)
	require.Equal(t, http.StatusOK, code)
	code, metricsBody := r.get(t, "/metrics", adminToken)
	require.Equal(t, http.StatusOK, code)

	var adm []json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(admissionBody), &adm))
	var doc struct {
		Tiers []json.RawMessage `json:"tiers"`
	}
	require.NoError(t, json.Unmarshal([]byte(capacityBody), &doc))
	require.Len(t, doc.Tiers, 3)
	require.Len(t, adm, 3)
	assert.JSONEq(t, string(adm[0]), string(doc.Tiers[0]), "direct: the admission view's shape, unchanged")
	assert.JSONEq(t, string(adm[2]), string(doc.Tiers[2]), "round robin: the admission view's shape, unchanged")
	assert.NotContains(t, admissionBody, "upgrade", "member reasons stay off the admission view")
	assert.NotContains(t, capacityBody, "upgrade", "and off the capacity JSON")

	var poolJSON struct {
		Active  int64 `json:"active_requests"`
		Ceiling int64 `json:"max_concurrency"`
		Members []struct {
			ID        string              `json:"id"`
			State     string              `json:"state"`
			Draining  bool                `json:"draining"`
			Active    int64               `json:"active_requests"`
			Ceiling   int64               `json:"max_concurrency"`
			Telemetry *capacity.Telemetry `json:"telemetry"`
		} `json:"members"`
	}
	require.NoError(t, json.Unmarshal(doc.Tiers[1], &poolJSON))
	snap := r.snapshot(t, "replicas")
	assert.Equal(t, snap.Active, poolJSON.Active)
	assert.EqualValues(t, 1, poolJSON.Active)
	assert.EqualValues(t, 4, poolJSON.Ceiling)
	mfs := families(t, metricsBody)
	v, ok := series(mfs, "anvil_router_replica_tier_active_requests", map[string]string{"tier": "replicas"})
	assert.True(t, ok)
	assert.EqualValues(t, snap.Active, v)
	var sum int64
	for i, m := range poolJSON.Members {
		sn := snap.Members[i]
		assert.Equal(t, sn.ID, m.ID)
		assert.Equal(t, sn.State, m.State)
		assert.Equal(t, sn.Draining, m.Draining)
		assert.Equal(t, sn.Active, m.Active)
		require.NotNil(t, m.Telemetry, "capacity members carry telemetry")
		sum += m.Active
		labels := map[string]string{"tier": "replicas", "member": m.ID}
		v, ok := series(mfs, "anvil_router_replica_member_active_requests", labels)
		assert.True(t, ok)
		assert.EqualValues(t, m.Active, v)
		v, _ = series(mfs, "anvil_router_replica_member_max_concurrency", labels)
		assert.EqualValues(t, 2, v)
		labels["freshness"] = m.Telemetry.Freshness.String()
		v, _ = series(mfs, "anvil_router_replica_member_pressure_freshness", labels)
		assert.EqualValues(t, 1, v, "one-hot on the JSON's class")
		_, hasPPM := series(mfs, "anvil_router_replica_member_pressure_ppm", map[string]string{"tier": "replicas", "member": m.ID})
		assert.Equal(t, m.Telemetry.PressurePPM != nil, hasPPM, "ppm only while fresh, in both views")
		ratio, hasRatio := series(mfs, "anvil_router_replica_member_pressure_ratio", map[string]string{"tier": "replicas", "member": m.ID})
		assert.Equal(t, hasPPM, hasRatio, "the ratio beside the ppm")
		if m.Telemetry.PressurePPM != nil {
			assert.InDelta(t, float64(*m.Telemetry.PressurePPM)/1e6, ratio, 1e-12)
		}
	}
	assert.Equal(t, poolJSON.Active, sum, "tier active is the sum of its members")
	busyIdx := 0
	if busy == "m01" {
		busyIdx = 1
	}
	assert.Equal(t, "quiesced", poolJSON.Members[busyIdx].State)
	assert.True(t, poolJSON.Members[busyIdx].Draining, "quiesced with its lease still held")
	for tier, want := range map[string]int64{"hosted": 1, "rr": 1} {
		v, ok := series(mfs, "anvil_router_tier_active_requests", map[string]string{"tier": tier})
		assert.True(t, ok, tier)
		assert.EqualValues(t, want, v, tier)
		strategy := map[string]string{"hosted": "direct", "rr": "round_robin"}[tier]
		v, ok = series(mfs, "anvil_router_admission_tier_active_requests", map[string]string{"tier": tier, "strategy": strategy})
		assert.True(t, ok, tier)
		assert.EqualValues(t, want, v, tier)
		assert.EqualValues(t, want, r.snapshot(t, tier).Active)
	}
	_, ok = series(mfs, "anvil_router_replica_tier_active_requests", map[string]string{"tier": "rr"})
	assert.False(t, ok, "the spec's capacity gauges are for capacity tiers only")

	endDirect()
	endRR()
	endPool()
	r.wait(t, 3)
	for _, tier := range []string{"hosted", "rr", "replicas"} {
		assertSettled(t, r.snapshot(t, tier))
	}
}

// countingSources counts every read the views make of the runtime owners.
type countingSources struct {
	reads *atomic.Int64
	src   capacity.Sources
}

func (c countingSources) Snapshots() []admission.Snapshot {
	c.reads.Add(1)
	return c.src.Admission.Snapshots()
}

func (c countingSources) Peek(tier string) (map[string]scheduler.Pressure, error) {
	c.reads.Add(1)
	return c.src.Pressure.Peek(tier)
}

// Snapshot is the pressure cache's scheduling read: the views must never reach it.
func (c countingSources) Snapshot(string) (map[string]scheduler.Pressure, error) {
	panic("a view called the pressure cache's Snapshot")
}

func startCounted(t *testing.T, yaml string) (*router, *atomic.Int64) {
	t.Helper()
	reads := &atomic.Int64{}
	r := startRouterWith(t, yaml, routerOptions{view: func(src capacity.Sources) capacity.Sources {
		c := countingSources{reads: reads, src: src}
		src.Admission = c
		if src.Pressure != nil {
			src.Pressure = c
		}
		return src
	}})
	return r, reads
}

// Authentication runs before any source is read: a request without the admin token learns nothing
// and costs the runtime owners nothing.
func TestViewsAuthenticateBeforeReading(t *testing.T) {
	ms := startMembers(t, 2)
	r, reads := startCounted(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2}))
	for _, path := range []string{"/metrics", "/admin/v1/capacity", "/admin/v1/admission"} {
		for _, token := range []string{"", callerToken, "wrong-token-0123456789"} {
			code, body := r.get(t, path, token)
			assert.Equal(t, http.StatusUnauthorized, code, path)
			assert.Contains(t, body, `"code":"invalid_admin_token"`)
		}
	}
	assert.Zero(t, reads.Load(), "no source was read before authentication")
	for _, path := range []string{"/metrics", "/admin/v1/capacity"} {
		before := reads.Load()
		code, _ := r.get(t, path, adminToken)
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, before+2, reads.Load(), "%s reads admission once and the pressure cache once", path)
	}
}

// Reading the views never schedules pressure collection, reserves, releases, quiesces or reranks:
// before any routed request, members are due for a scrape, yet reads leave nothing pending and reach
// no member; after real traffic, fresh zero pressure and unknown pressure show as such.
func TestViewsNeverSchedule(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2}))
	before := r.snapshot(t, "replicas")
	for range 3 {
		code, body := r.get(t, "/admin/v1/capacity", adminToken)
		require.Equal(t, http.StatusOK, code)
		assert.Equal(t, 2, strings.Count(body, `"freshness":"unknown"`), "never scraped: unknown")
		code, body = r.get(t, "/metrics", adminToken)
		require.Equal(t, http.StatusOK, code)
		v, ok := series(families(t, body), "anvil_router_pressure_refreshes_pending", map[string]string{})
		require.True(t, ok)
		assert.Zero(t, v, "reading queued no refresh")
	}
	assert.Zero(t, ms[0].scrapes.Load()+ms[1].scrapes.Load(), "no member was scraped")
	after := r.snapshot(t, "replicas")
	assert.Equal(t, before, after, "no lease, release, quiesce or cursor move")
	assert.Zero(t, totalCalls(ms))

	// Routed requests schedule the scrapes: the idle member then reads fresh at 0 ppm, the one whose
	// /metrics fails reads failed.
	fault(t, ms[1], fakevllm.Faults{Metrics: fakevllm.MetricsFault{Mode: fakevllm.MetricsError}})
	untilPressure(t, r, func(p map[string]scheduler.Pressure) bool {
		ppm, fresh := p["m00"].PPM()
		return fresh && ppm == 0 && p["m01"].Freshness() == scheduler.FreshnessFailed
	})
	code, body := r.get(t, "/admin/v1/capacity", adminToken)
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"id":"m00","state":"admitting","draining":false,"active_requests":0,"max_concurrency":2,"readiness":"ready","passive_health":{"state":"healthy","streak":0,"ejections":0},"telemetry":{"freshness":"fresh","pressure_ppm":0,"requests_state":"valid","kv_state":"valid"}`)
	assert.Contains(t, body, `"id":"m01","state":"admitting","draining":false,"active_requests":0,"max_concurrency":2,"readiness":"ready","passive_health":{"state":"healthy","streak":0,"ejections":0},"telemetry":{"freshness":"failed","pressure_ppm":null,"requests_state":"missing","kv_state":"missing"}`)
	_, body = r.get(t, "/metrics", adminToken)
	mfs := families(t, body)
	v, ok := series(mfs, "anvil_router_replica_member_pressure_ppm", map[string]string{"tier": "replicas", "member": "m00"})
	assert.True(t, ok)
	assert.Zero(t, v, "fresh zero pressure is a 0 series")
	_, ok = series(mfs, "anvil_router_replica_member_pressure_ppm", map[string]string{"tier": "replicas", "member": "m01"})
	assert.False(t, ok, "failed pressure has no ppm series, never a 0")
	ok1, _ := series(mfs, "anvil_router_pressure_scrapes_total", map[string]string{"tier": "replicas", "member": "m00", "result": "ok"})
	failed1, _ := series(mfs, "anvil_router_pressure_scrapes_total", map[string]string{"tier": "replicas", "member": "m01", "result": "failed"})
	assert.Positive(t, ok1)
	assert.Positive(t, failed1)
	n, _ := series(mfs, "anvil_router_pressure_scrape_duration_seconds", map[string]string{"tier": "replicas"})
	assert.GreaterOrEqual(t, n, ok1+failed1, "every scrape's duration is observed")
}

// A NaN series on a member's /metrics page is reported invalid, not missing, in the capacity JSON.
func TestMalformedMemberMetricsShowInvalid(t *testing.T) {
	ms := startMembers(t, 2)
	ms[0].nanRunning.Store(true)
	r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2}))
	untilPressure(t, r, func(p map[string]scheduler.Pressure) bool {
		return p["m00"].RequestState() == scheduler.SignalInvalid && p["m01"].Freshness() == scheduler.FreshnessFresh
	})
	_, body := r.get(t, "/admin/v1/capacity", adminToken)
	assert.Contains(t, body, `"id":"m00"`)
	assert.Contains(t, body, `"telemetry":{"freshness":"unknown","pressure_ppm":null,"requests_state":"invalid"`)
}
