package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/manage"
)

// live describes one configuration of the reload tests: the replica tier "replicas" (alias chat)
// over members, and optionally the direct tier "solo" (alias solo) over one more member.
type live struct {
	members  []*member
	strategy string // "" round robin
	ceiling  int    // member ceiling, 0 = none
	tierMax  int
	queue    string // YAML flow map of the replica tier's queue, "" none
	passive  string // YAML flow map of its passive_health, "" default
	solo     *member
	top      string // extra top-level YAML
}

func (l live) yaml() string {
	var b strings.Builder
	b.WriteString("listen: 127.0.0.1:0\nshutdown_grace: 5s\n")
	b.WriteString(l.top)
	b.WriteString("aliases:\n  - id: chat\n    tier: replicas\n")
	if l.solo != nil {
		b.WriteString("  - id: solo\n    tier: solo\n")
	}
	b.WriteString("tiers:\n  - id: replicas\n    kind: replica\n")
	fmt.Fprintf(&b, "    served_model: %s\n    host: 127.0.0.1\n    provenance: test fakes\n", servedModel)
	if l.strategy != "" {
		fmt.Fprintf(&b, "    replica_strategy: %s\n", l.strategy)
	}
	if l.tierMax > 0 {
		fmt.Fprintf(&b, "    max_concurrency: %d\n", l.tierMax)
	}
	if l.queue != "" {
		fmt.Fprintf(&b, "    queue: %s\n", l.queue)
	}
	if l.passive != "" {
		fmt.Fprintf(&b, "    passive_health: %s\n", l.passive)
	}
	b.WriteString("    gates: {max_context_tokens: 4096, max_output_tokens: 512}\n    members:\n")
	for i, m := range l.members {
		if m == nil {
			continue // a removed member keeps its ID's place
		}
		fmt.Fprintf(&b, "      - id: m%02d\n        endpoint: %s\n", i, m.URL())
		if l.ceiling > 0 {
			fmt.Fprintf(&b, "        max_concurrency: %d\n", l.ceiling)
		}
	}
	if l.solo != nil {
		fmt.Fprintf(&b, "  - id: solo\n    kind: direct\n    served_model: %s\n    endpoint: %s\n    gates: {max_context_tokens: 4096}\n",
			servedModel, l.solo.URL())
	}
	return b.String()
}

// until spins (yielding, never sleeping) until cond holds: for states no event announces, such as a
// request that took its place in a queue.
func until(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		runtime.Gosched()
	}
}

// forget drops the arrivals members announced so far, so arrive counts only new ones.
func forget(ms ...*member) {
	for _, m := range ms {
		for len(m.entered) > 0 {
			<-m.entered
		}
	}
}

// hold makes every generation request reaching ms wait until the returned release is called.
func hold(ms ...*member) (release func()) {
	gate := make(chan struct{})
	for _, m := range ms {
		m.gate.Store(&gate)
	}
	return func() {
		for _, m := range ms {
			m.gate.Store(nil)
		}
		close(gate)
	}
}

// inFlight sends body on path in the background and returns the channel its status arrives on.
func (r *router) inFlight(t *testing.T, path, body string) <-chan int {
	out := make(chan int, 1)
	go func() {
		req, err := http.NewRequest(http.MethodPost, r.http.URL+path, strings.NewReader(body))
		if err != nil {
			out <- 0
			return
		}
		req.Header.Set("Authorization", "Bearer "+callerToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- 0
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		out <- resp.StatusCode
	}()
	return out
}

// arrive waits until n generation requests entered members ms (in any split).
func arrive(t *testing.T, n int, ms ...*member) {
	t.Helper()
	cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(t.Context().Done())}}
	for _, m := range ms {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(m.entered)})
	}
	for range n {
		if i, _, _ := reflect.Select(cases); i == 0 {
			t.Fatal("requests never arrived")
		}
	}
}

func memberOf(t *testing.T, s admission.Snapshot, id string, retiring bool) admission.MemberSnapshot {
	t.Helper()
	for _, m := range s.Members {
		if m.ID == id && m.Retiring == retiring {
			return m
		}
	}
	require.Failf(t, "no such member", "%s (retiring %v) in %+v", id, retiring, s.Members)
	return admission.MemberSnapshot{}
}

type capacityDocJSON struct {
	Tiers []struct {
		ID             string `json:"id"`
		Retiring       bool   `json:"retiring"`
		Active         int64  `json:"active_requests"`
		MaxConcurrency int64  `json:"max_concurrency"`
		Members        []struct {
			ID             string `json:"id"`
			Retiring       bool   `json:"retiring"`
			Active         int64  `json:"active_requests"`
			MaxConcurrency int64  `json:"max_concurrency"`
		} `json:"members"`
	} `json:"tiers"`
}

func (r *router) capacityDoc(t *testing.T) capacityDocJSON {
	t.Helper()
	code, body := r.get(t, "/admin/v1/capacity", adminToken)
	require.Equal(t, http.StatusOK, code, body)
	var doc capacityDocJSON
	require.NoError(t, json.Unmarshal([]byte(body), &doc))
	return doc
}

func chatStatus(t *testing.T, r *router, alias string) int {
	t.Helper()
	code, _, _ := r.do(t, "/v1/chat/completions", bodyFor(alias, 2, false))
	r.wait(t, 1)
	return code
}

func TestReloadCeilingLoweredBelowActive(t *testing.T) {
	ms := startMembers(t, 2)
	cfg := live{members: ms, strategy: "capacity", ceiling: 2}
	rig := startReloadRig(t, cfg.yaml(), routerOptions{})
	release := hold(ms...)
	var running []<-chan int
	for range 4 {
		running = append(running, rig.inFlight(t, "/v1/chat/completions", chatBody(2, false)))
	}
	arrive(t, 4, ms...)

	cfg.ceiling = 1
	rig.apply(t, cfg.yaml())
	snap := rig.snapshot(t, "replicas")
	assert.Equal(t, int64(4), snap.Active, "nothing is cut")
	assert.Equal(t, int64(2), snap.MaxConcurrency)
	assert.Equal(t, int64(2), memberOf(t, snap, "m00", false).Active)
	assert.Equal(t, int64(1), memberOf(t, snap, "m00", false).MaxConcurrency)
	doc := rig.capacityDoc(t)
	require.Len(t, doc.Tiers, 1)
	assert.Equal(t, int64(4), doc.Tiers[0].Active, "the capacity JSON shows both numbers")
	assert.Equal(t, int64(2), doc.Tiers[0].MaxConcurrency)
	assert.Equal(t, int64(2), doc.Tiers[0].Members[0].Active)
	assert.Equal(t, int64(1), doc.Tiers[0].Members[0].MaxConcurrency)
	assert.Equal(t, http.StatusServiceUnavailable, chatStatus(t, rig.router, "chat"), "no admission above the ceiling in force")

	release()
	for _, c := range running {
		assert.Equal(t, http.StatusOK, <-c, "admitted before the reload, finished under its lease")
	}
	rig.wait(t, 4)
	assert.Equal(t, http.StatusOK, chatStatus(t, rig.router, "chat"), "admits once under the new ceiling")
	assertSettled(t, rig.snapshot(t, "replicas"))
}

func TestReloadMemberAddedAndRemoved(t *testing.T) {
	ms := startMembers(t, 3)
	cfg := live{members: ms[:2]}
	rig := startReloadRig(t, cfg.yaml(), routerOptions{})

	t.Run("an added member admits once its readiness passes", func(t *testing.T) {
		cfg.members = ms
		rig.apply(t, cfg.yaml())
		rig.srv.ProbeNow(context.Background())
		before := ms[2].calls.Load()
		for range 3 {
			require.Equal(t, http.StatusOK, chatStatus(t, rig.router, "chat"))
		}
		assert.Equal(t, before+1, ms[2].calls.Load(), "round robin reaches the new member")
	})
	t.Run("a removed member's requests finish and it leaves when the last does", func(t *testing.T) {
		forget(ms...)
		release := hold(ms[1])
		var running <-chan int
		for running == nil {
			c := rig.inFlight(t, "/v1/chat/completions", chatBody(2, false))
			select {
			case <-ms[1].entered:
				running = c
			case code := <-c:
				require.Equal(t, http.StatusOK, code)
				rig.wait(t, 1)
			}
		}
		cfg.members = []*member{ms[0], nil, ms[2]}
		rig.apply(t, cfg.yaml())
		snap := rig.snapshot(t, "replicas")
		assert.Equal(t, int64(1), memberOf(t, snap, "m01", true).Active)
		doc := rig.capacityDoc(t)
		var retiring bool
		for _, m := range doc.Tiers[0].Members {
			retiring = retiring || m.ID == "m01" && m.Retiring && m.Active == 1
		}
		assert.True(t, retiring, "the capacity JSON marks it retiring")
		before := ms[1].calls.Load()
		for range 4 {
			require.Equal(t, http.StatusOK, chatStatus(t, rig.router, "chat"))
		}
		assert.Equal(t, before, ms[1].calls.Load(), "no new admission to a removed member")
		release()
		assert.Equal(t, http.StatusOK, <-running)
		rig.wait(t, 1)
		snap = rig.snapshot(t, "replicas")
		assert.Len(t, snap.Members, 2, "it leaves every view with its last request")
		assertSettled(t, snap)
	})
}

func TestReloadTierAndAliasAddedAndRemoved(t *testing.T) {
	ms := startMembers(t, 3)
	cfg := live{members: ms[:2]}
	rig := startReloadRig(t, cfg.yaml(), routerOptions{})
	assert.Equal(t, http.StatusNotFound, chatStatus(t, rig.router, "solo"))

	cfg.solo = ms[2]
	rig.apply(t, cfg.yaml())
	assert.Equal(t, http.StatusOK, chatStatus(t, rig.router, "solo"), "an added alias serves at once")

	forget(ms[2])
	release := hold(ms[2])
	running := rig.inFlight(t, "/v1/chat/completions", bodyFor("solo", 2, false))
	arrive(t, 1, ms[2])
	cfg.solo = nil
	rig.apply(t, cfg.yaml())
	code, body, _ := rig.do(t, "/v1/chat/completions", bodyFor("solo", 2, false))
	rig.wait(t, 1)
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, body, "model_not_found", "a removed alias is the ordinary 404")
	snaps := rig.srv.Admission().Snapshots()
	require.Len(t, snaps, 2)
	assert.True(t, snaps[1].Retiring)
	release()
	assert.Equal(t, http.StatusOK, <-running, "its request in flight finishes")
	rig.wait(t, 1)
	assert.Len(t, rig.srv.Admission().Snapshots(), 1, "and the tier leaves the views")
}

func TestReloadStrategyQueueAndPassiveHealth(t *testing.T) {
	ms := startMembers(t, 2)
	cfg := live{members: ms, ceiling: 1}
	rig := startReloadRig(t, cfg.yaml(), routerOptions{})
	last := func() string {
		recs := rig.srv.Decisions().Recent(1)
		require.Len(t, recs, 1)
		return string(recs[0].Strategy)
	}
	t.Run("round robin to capacity and back", func(t *testing.T) {
		require.Equal(t, http.StatusOK, chatStatus(t, rig.router, "chat"))
		assert.Equal(t, "round_robin", last())
		cfg.strategy = "capacity"
		rig.apply(t, cfg.yaml())
		require.Equal(t, http.StatusOK, chatStatus(t, rig.router, "chat"))
		assert.Equal(t, "capacity", last())
		require.NotNil(t, rig.srv.Decisions().Recent(1)[0].ReplicaScheduler)
		cfg.strategy = ""
		rig.apply(t, cfg.yaml())
		require.Equal(t, http.StatusOK, chatStatus(t, rig.router, "chat"))
		assert.Equal(t, "round_robin", last())
	})
	t.Run("a queue added holds a request instead of refusing it", func(t *testing.T) {
		forget(ms...)
		release := hold(ms...)
		a := rig.inFlight(t, "/v1/chat/completions", chatBody(2, false))
		b := rig.inFlight(t, "/v1/chat/completions", chatBody(2, false))
		arrive(t, 2, ms...)
		assert.Equal(t, http.StatusServiceUnavailable, chatStatus(t, rig.router, "chat"), "no queue yet")
		cfg.queue = "{max_waiting: 2, timeout: 30s}"
		rig.apply(t, cfg.yaml())
		queued := rig.inFlight(t, "/v1/chat/completions", chatBody(2, false))
		until(t, func() bool { return rig.snapshot(t, "replicas").Waiting == 1 })
		release()
		for _, c := range []<-chan int{a, b, queued} {
			assert.Equal(t, http.StatusOK, <-c)
		}
		rig.wait(t, 3)
	})
	t.Run("a stricter passive-health policy ejects sooner", func(t *testing.T) {
		cfg.queue = ""
		cfg.passive = "{consecutive_failures: 1, max_ejected_percent: 50}"
		rig.apply(t, cfg.yaml())
		fault(t, ms[0], fakevllm.Faults{HTTPErrors: []fakevllm.HTTPErrorFault{{Status: 500, Rate: 1}}})
		for range 2 {
			_ = chatStatus(t, rig.router, "chat")
		}
		code, body := rig.get(t, "/admin/v1/admission", adminToken)
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, `"state":"ejected"`, "one failure ejects under the new policy")
	})
	assertSettled(t, rig.snapshot(t, "replicas"))
}

func TestReloadTokensAndLimits(t *testing.T) {
	ms := startMembers(t, 2)
	cfg := live{members: ms}
	rig := startReloadRig(t, cfg.yaml(), routerOptions{})
	const newCaller, newAdmin = "caller-token-rotated-0123", "admin-token-rotated-0123"
	rig.envs[config.EnvAPIToken], rig.envs[config.EnvAdminToken] = newCaller, newAdmin
	cfg.top = "# tokens rotated\n" // the file changes with its token sources, as a rollout does
	rig.apply(t, cfg.yaml())

	code, _, _ := rig.do(t, "/v1/chat/completions", chatBody(2, false))
	rig.wait(t, 1)
	assert.Equal(t, http.StatusUnauthorized, code, "the old caller token is refused from the swap on")
	code, _ = rig.adminDo(t, http.MethodGet, manage.ConfigPath, adminToken, "")
	assert.Equal(t, http.StatusUnauthorized, code, "the old admin token too")
	code, _ = rig.adminDo(t, http.MethodGet, manage.ConfigPath, newAdmin, "")
	assert.Equal(t, http.StatusOK, code)
	req, err := http.NewRequest(http.MethodPost, rig.http.URL+"/v1/chat/completions", strings.NewReader(chatBody(2, false)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+newCaller)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	rig.wait(t, 1)
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	// Limits: a body the old limit took is refused under the new one.
	delete(rig.envs, config.EnvAPIToken)
	delete(rig.envs, config.EnvAdminToken)
	big := strings.Replace(chatBody(2, false), "hello there", strings.Repeat("hello ", 300), 1)
	code, _, _ = rig.do(t, "/v1/chat/completions", big)
	rig.wait(t, 1)
	assert.Equal(t, http.StatusUnauthorized, code, "the env change only took effect with a reload")
	cfg.top = "limits: {max_body_bytes: 1024}\n"
	rig.write(t, cfg.yaml())
	code, body := rig.adminDo(t, http.MethodPost, manage.ReloadPath, newAdmin, "{}")
	require.Equal(t, http.StatusOK, code, string(body))
	code, _, _ = rig.do(t, "/v1/chat/completions", big)
	rig.wait(t, 1)
	assert.Equal(t, http.StatusRequestEntityTooLarge, code, "new requests use the new limit")
}

func TestReloadMetrics(t *testing.T) {
	ms := startMembers(t, 2)
	cfg := live{members: ms}
	rig := startReloadRig(t, cfg.yaml(), routerOptions{})
	gather := func() map[string]*dto.MetricFamily {
		mfs, err := rig.srv.Registry().Gather()
		require.NoError(t, err)
		problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
		require.NoError(t, err)
		for _, p := range problems {
			if strings.HasPrefix(p.Metric, "anvil_router_config") {
				t.Errorf("promlint: %s: %s", p.Metric, p.Text)
			}
		}
		out := map[string]*dto.MetricFamily{}
		for _, mf := range mfs {
			out[mf.GetName()] = mf
		}
		return out
	}
	reloads := func(mfs map[string]*dto.MetricFamily) map[string]float64 {
		out := map[string]float64{}
		for _, m := range mfs["anvil_router_config_reloads_total"].GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
		return out
	}
	gauge := func(mfs map[string]*dto.MetricFamily, name string) float64 {
		return mfs[name].GetMetric()[0].GetGauge().GetValue()
	}
	mfs := gather()
	assert.Equal(t, map[string]float64{"applied": 0, "unchanged": 0, "refused": 0}, reloads(mfs), "initialised")
	assert.Equal(t, 1.0, gauge(mfs, "anvil_router_config_last_reload_successful"))
	started := gauge(mfs, "anvil_router_config_last_reload_success_timestamp_seconds")
	assert.Positive(t, started)

	cfg.ceiling = 3
	rig.apply(t, cfg.yaml())
	status, _ := rig.reload(t)
	require.Equal(t, http.StatusOK, status)
	rig.write(t, "tiers: [")
	status, _ = rig.reload(t)
	require.Equal(t, http.StatusUnprocessableEntity, status)
	mfs = gather()
	assert.Equal(t, map[string]float64{"applied": 1, "unchanged": 1, "refused": 1}, reloads(mfs))
	assert.Equal(t, 0.0, gauge(mfs, "anvil_router_config_last_reload_successful"))
	assert.GreaterOrEqual(t, gauge(mfs, "anvil_router_config_last_reload_success_timestamp_seconds"), started)
}
