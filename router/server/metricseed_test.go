package server_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/server"
)

// seeded asserts that series name{labels} is present and reads 0 (a counter's value, a histogram's
// count).
func seeded(t *testing.T, mfs map[string]*dto.MetricFamily, name string, labels map[string]string) {
	t.Helper()
	v, ok := series(mfs, name, labels)
	if assert.True(t, ok, "%s%v is present before its first event", name, labels) {
		assert.Zero(t, v, "%s%v", name, labels)
	}
}

// absent asserts that no series of name carries all of labels.
func absent(t *testing.T, mfs map[string]*dto.MetricFamily, name string, labels map[string]string) {
	t.Helper()
	for _, m := range mfs[name].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range labels {
			match = match && got[k] == v
		}
		assert.False(t, match, "%s%v is gone", name, labels)
	}
}

var admissionReasons = []string{"quiesced", "queue_full", "queue_timeout", "exhausted", "shutdown", "other"}

// Before any request, every labelled counter and histogram has its configured label sets at 0, so
// rate() over the first burst sees it; and build_info is 1.
func TestCountersStartAtZero(t *testing.T) {
	direct, rr, pool := startMember(t, servedModel, 7), startMembers(t, 2), startMembers(t, 2)
	r := startRouterWith(t, mixedYAML(direct, rr, pool), routerOptions{server: server.Options{Version: "1.2.3", Revision: "abc"}})
	_, page := r.get(t, "/metrics", adminToken)
	mfs := families(t, page)

	members := map[string][]string{"hosted": {""}, "rr": {"m00", "m01"}, "replicas": {"m00", "m01"}}
	for alias, tier := range map[string]string{"big": "hosted", "spread": "rr", "chat": "replicas"} {
		for _, m := range members[tier] {
			seeded(t, mfs, "anvil_router_requests_total", map[string]string{"alias": alias, "tier": tier, "member": m, "outcome": "success", "status_class": "2xx"})
		}
		seeded(t, mfs, "anvil_router_requests_total", map[string]string{"alias": alias, "tier": tier, "member": "", "outcome": "not_admitted", "status_class": "5xx"})
		seeded(t, mfs, "anvil_router_requests_total", map[string]string{"alias": alias, "tier": tier, "member": "", "outcome": "refused", "status_class": "4xx"})
	}
	seeded(t, mfs, "anvil_router_requests_total", map[string]string{"alias": "", "tier": "", "member": "", "outcome": "refused", "status_class": "4xx"})
	for tier, ms := range members {
		for _, m := range ms {
			l := map[string]string{"tier": tier, "member": m}
			seeded(t, mfs, "anvil_router_upstream_attempts_total", l)
			seeded(t, mfs, "anvil_router_request_duration_seconds", l)
			seeded(t, mfs, "anvil_router_request_first_byte_seconds", l)
		}
		for _, reason := range admissionReasons {
			seeded(t, mfs, "anvil_router_admission_refusals_total", map[string]string{"tier": tier, "reason": reason})
		}
	}
	for _, m := range members["replicas"] {
		for _, result := range []string{"ok", "failed", "unknown"} {
			seeded(t, mfs, "anvil_router_pressure_scrapes_total", map[string]string{"tier": "replicas", "member": m, "result": result})
		}
	}
	absent(t, mfs, "anvil_router_pressure_scrapes_total", map[string]string{"tier": "rr"})
	seeded(t, mfs, "anvil_router_pressure_scrape_duration_seconds", map[string]string{"tier": "replicas"})

	v, ok := series(mfs, "anvil_router_build_info", map[string]string{"version": "1.2.3", "revision": "abc", "goversion": runtime.Version()})
	assert.True(t, ok, "build_info carries the version, revision and Go version")
	assert.EqualValues(t, 1, v)
}

// A reload seeds the label sets it adds (a tier, a member, an alias, a queue) and deletes the series
// of what it removes, whatever they had counted.
func TestReloadSeedsAndForgets(t *testing.T) {
	direct, rr, pool := startMember(t, servedModel, 7), startMembers(t, 3), startMembers(t, 2)
	before := mixedYAML(direct, rr[:2], pool)
	rig := startReloadRig(t, before, routerOptions{})
	code, out, _ := rig.do(t, "/v1/chat/completions", bodyFor("big", 2, false))
	require.Equal(t, http.StatusOK, code, out)
	rig.wait(t, 1)

	// hosted goes; rr gains m02; a queued direct tier arrives with its alias.
	after := strings.Replace(mixedYAML(direct, rr, pool), "  - {id: big, tier: hosted}\n", "  - {id: late, tier: queued}\n", 1)
	after = strings.Replace(after, after[strings.Index(after, "  - id: hosted"):strings.Index(after, "  - id: rr")], "", 1) +
		fmt.Sprintf("  - id: queued\n    kind: direct\n    served_model: %s\n    endpoint: %s\n    max_concurrency: 1\n", servedModel, direct.URL()) +
		"    queue: {max_waiting: 1, timeout: 10ms}\n    gates: {max_context_tokens: 4096, max_output_tokens: 512}\n"
	rig.apply(t, after)
	_, page := rig.get(t, "/metrics", adminToken)
	mfs := families(t, page)

	for _, name := range []string{"anvil_router_requests_total", "anvil_router_upstream_attempts_total",
		"anvil_router_request_duration_seconds", "anvil_router_admission_refusals_total"} {
		absent(t, mfs, name, map[string]string{"tier": "hosted"})
	}
	absent(t, mfs, "anvil_router_requests_total", map[string]string{"alias": "big"})
	for _, name := range []string{"anvil_router_usage_tokens_total", "anvil_router_usage_unknown_total"} {
		absent(t, mfs, name, map[string]string{"tier": "hosted"})
	}
	seeded(t, mfs, "anvil_router_requests_total", map[string]string{"alias": "spread", "tier": "rr", "member": "m02", "outcome": "success", "status_class": "2xx"})
	seeded(t, mfs, "anvil_router_upstream_attempts_total", map[string]string{"tier": "rr", "member": "m02"})
	seeded(t, mfs, "anvil_router_requests_total", map[string]string{"alias": "late", "tier": "queued", "member": "", "outcome": "success", "status_class": "2xx"})
	seeded(t, mfs, "anvil_router_admission_queue_wait_seconds", map[string]string{"tier": "queued"})
	for _, reason := range admissionReasons {
		seeded(t, mfs, "anvil_router_admission_refusals_total", map[string]string{"tier": "queued", "reason": reason})
	}
	absent(t, mfs, "anvil_router_admission_queue_wait_seconds", map[string]string{"tier": "rr"})

	// And back: m02 and the queue go again.
	rig.apply(t, before)
	_, page = rig.get(t, "/metrics", adminToken)
	mfs = families(t, page)
	absent(t, mfs, "anvil_router_upstream_attempts_total", map[string]string{"tier": "rr", "member": "m02"})
	for _, name := range []string{"anvil_router_usage_tokens_total", "anvil_router_usage_unknown_total"} {
		absent(t, mfs, name, map[string]string{"tier": "rr", "member": "m02"})
	}
	absent(t, mfs, "anvil_router_admission_queue_wait_seconds", map[string]string{"tier": "queued"})
	seeded(t, mfs, "anvil_router_upstream_attempts_total", map[string]string{"tier": "hosted", "member": ""})
}

// Every tier reports its leases in the one strategy-labelled family; a capacity tier's match the
// spec's replica gauges beside them, and a direct or round-robin tier's the existing unlabelled ones,
// which keep their labels and cover no capacity tier.
func TestUnifiedAdmissionFamilies(t *testing.T) {
	direct, rr, pool := startMember(t, servedModel, 7), startMembers(t, 2), startMembers(t, 2)
	r := startRouter(t, mixedYAML(direct, rr, pool))
	release := inFlight(t, r, "chat", pool)
	defer release()
	_, page := r.get(t, "/metrics", adminToken)
	mfs := families(t, page)
	for tier, strategy := range map[string]string{"hosted": "direct", "rr": "round_robin", "replicas": "capacity"} {
		kind := map[bool]string{true: "direct", false: "replica"}[tier == "hosted"]
		v, ok := series(mfs, "anvil_router_admission_tier_active_requests", map[string]string{"tier": tier, "strategy": strategy})
		assert.True(t, ok, tier)
		old, hasOld := series(mfs, "anvil_router_tier_active_requests", map[string]string{"tier": tier})
		assert.Equal(t, strategy != "capacity", hasOld, "%s: the existing family covers direct and round-robin tiers only", tier)
		if hasOld {
			assert.Equal(t, old, v, tier)
		}
		_, ok = series(mfs, "anvil_router_tier_info", map[string]string{"tier": tier, "kind": kind, "strategy": strategy})
		assert.True(t, ok, tier)
	}
	unified, _ := series(mfs, "anvil_router_admission_tier_active_requests", map[string]string{"tier": "replicas", "strategy": "capacity"})
	spec, ok := series(mfs, "anvil_router_replica_tier_active_requests", map[string]string{"tier": "replicas"})
	require.True(t, ok, "the spec's gauge is still served")
	assert.EqualValues(t, 1, unified)
	assert.Equal(t, spec, unified)
	for _, m := range []string{"m00", "m01"} {
		a, _ := series(mfs, "anvil_router_admission_member_max_concurrency", map[string]string{"tier": "replicas", "member": m, "strategy": "capacity"})
		b, _ := series(mfs, "anvil_router_replica_member_max_concurrency", map[string]string{"tier": "replicas", "member": m})
		assert.Equal(t, b, a, m)
	}
}

// The whole /metrics page, as Prometheus scrapes it, passes promtool check metrics's lint (client_golang's
// promlint) with no problem: under concurrent load on every tier, and after a reload that adds and
// removes tiers and members.
func TestExpositionLintsClean(t *testing.T) {
	direct, rr, pool := startMember(t, servedModel, 7), startMembers(t, 3), startMembers(t, 2)
	rig := startReloadRig(t, mixedYAML(direct, rr[:2], pool), routerOptions{})
	lint := func(when string) {
		t.Helper()
		code, page := rig.get(t, "/metrics", adminToken)
		require.Equal(t, http.StatusOK, code)
		problems, err := promlint.New(strings.NewReader(page)).Lint()
		require.NoError(t, err)
		assert.Empty(t, problems, when)
	}
	lint("at startup")
	load := func(aliases ...string) {
		var wg sync.WaitGroup
		for i := range 12 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp := rig.post(t, context.Background(), "/v1/chat/completions", bodyFor(aliases[i%len(aliases)], 2, i%2 == 0))
				_ = resp.Body.Close()
			}()
		}
		wg.Wait()
		rig.wait(t, 12)
	}
	held := inFlight(t, rig.router, "chat", pool) // a lease held while the page is read
	load("big", "spread", "chat", "nope")
	lint("under load")
	held()
	after := strings.Replace(mixedYAML(direct, rr, pool), "  - {id: big, tier: hosted}\n", "", 1)
	after = strings.Replace(after, after[strings.Index(after, "  - id: hosted"):strings.Index(after, "  - id: rr")], "", 1)
	rig.apply(t, after)
	load("spread", "chat")
	lint("after a reload")
}

// Without a version from the linker, build_info says what the toolchain stamped: a test binary
// carries no module version and no VCS stamp.
func TestBuildInfoFallback(t *testing.T) {
	r := startRouter(t, replicaYAML(startMembers(t, 2), tierOpts{}))
	_, page := r.get(t, "/metrics", adminToken)
	v, ok := series(families(t, page), "anvil_router_build_info", map[string]string{"version": "devel", "revision": "unknown", "goversion": runtime.Version()})
	assert.True(t, ok)
	assert.EqualValues(t, 1, v)
}

// A reload that removes a caller deletes its usage and body-refusal series; the held-bytes gauge
// reads the generation in force, so it goes with it.
func TestReloadForgetsCallers(t *testing.T) {
	ms := startMembers(t, 2)
	yaml := replicaYAML(ms, tierOpts{})
	rig := startReloadRig(t, yaml, routerOptions{env: twoCallers})
	rig.envs[config.EnvAPITokens], rig.envs[config.EnvAPIToken] = callerA+","+callerB, ""
	status, text := doAs(t, rig.router, callerB, chatBody(2, false))
	rig.wait(t, 1)
	require.Equal(t, http.StatusOK, status, text)
	names := []string{"anvil_router_usage_tokens_total", "anvil_router_usage_unknown_total",
		"anvil_router_body_refusals_total", "anvil_router_body_budget_held_bytes"}
	_, page := rig.get(t, "/metrics", adminToken)
	mfs := families(t, page)
	for _, name := range names {
		require.True(t, hasLabel(mfs, name, "caller", "caller-2"), "%s{caller-2} before the reload", name)
	}

	rig.envs[config.EnvAPITokens] = callerA
	rig.apply(t, yaml)
	_, page = rig.get(t, "/metrics", adminToken)
	mfs = families(t, page)
	for _, name := range names {
		absent(t, mfs, name, map[string]string{"caller": "caller-2"})
		assert.True(t, hasLabel(mfs, name, "caller", "caller-1"), "%s{caller-1} stays", name)
	}
}

// hasLabel reports whether some series of name carries label=value.
func hasLabel(mfs map[string]*dto.MetricFamily, name, label, value string) bool {
	for _, m := range mfs[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				return true
			}
		}
	}
	return false
}
