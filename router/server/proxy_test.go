package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/internal/pipenet"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/server"
)

const proxyChildEnv = "ANVIL_TEST_PROXY_CHILD"

// TestUpstreamCallsIgnoreEnvironmentProxies: with HTTP_PROXY and its relatives naming a proxy, the
// router's readiness probes, pressure scrapes and relayed requests still go straight to the members.
// net/http reads the proxy environment once per process, so the test runs itself again in a child
// process with that environment; there, members and the proxy listen on one in-memory network the
// router dials through, and the proxy records every contact.
func TestUpstreamCallsIgnoreEnvironmentProxies(t *testing.T) {
	if os.Getenv(proxyChildEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestUpstreamCallsIgnoreEnvironmentProxies$", "-test.count=1", "-test.v")
		proxy := "http://proxy.test:3128"
		cmd.Env = append(os.Environ(), proxyChildEnv+"=1", "HTTP_PROXY="+proxy, "http_proxy="+proxy,
			"HTTPS_PROXY="+proxy, "https_proxy="+proxy, "ALL_PROXY="+proxy, "NO_PROXY=", "no_proxy=")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		require.Contains(t, string(out), "--- PASS: TestUpstreamCallsIgnoreEnvironmentProxies", "the child ran the test")
		return
	}

	pn := pipenet.New()
	defer pn.Close()
	var proxied atomic.Int64
	pn.Serve("proxy.test:3128", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		w.WriteHeader(http.StatusBadGateway)
	}))
	var endpoints []string
	var scraped [2]atomic.Int64 // GET /metrics that reached each member
	for i := range 2 {
		fake, err := fakevllm.NewServer(fakevllm.Options{Models: []string{servedModel}, Profile: engine.TinyProfile(), Seed: uint64(i + 1)})
		require.NoError(t, err)
		defer fake.Close()
		endpoints = append(endpoints, pn.Serve(fmt.Sprintf("gpu.test:%d", 8001+i), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/metrics" {
				scraped[i].Add(1)
			}
			fake.Handler().ServeHTTP(w, r)
		})))
	}
	yaml := "aliases:\n  - {id: chat, tier: replicas}\ntiers:\n  - id: replicas\n    kind: replica\n" +
		"    served_model: " + servedModel + "\n    host: gpu.test\n    provenance: test fakes\n    replica_strategy: capacity\n" +
		"    gates: {max_context_tokens: 4096}\n    members:\n" +
		"      - {id: m00, endpoint: '" + endpoints[0] + "', max_concurrency: 4}\n" +
		"      - {id: m01, endpoint: '" + endpoints[1] + "', max_concurrency: 4}\n"
	cfg, err := load.Parse([]byte(yaml), env)
	require.NoError(t, err)
	srv, err := server.New(cfg, server.Options{Dial: pn.Dial})
	require.NoError(t, err)
	defer srv.Close()
	srv.Start()
	srv.ProbeNow(context.Background())

	call := func(method, path, token, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		return rec
	}
	// Readiness: both members answered their probes.
	var tiers []struct {
		Members []struct {
			Readiness string `json:"readiness"`
		} `json:"members"`
	}
	require.NoError(t, json.Unmarshal(call(http.MethodGet, "/admin/v1/admission", adminToken, "").Body.Bytes(), &tiers))
	require.Len(t, tiers, 1)
	for _, m := range tiers[0].Members {
		assert.Equal(t, "ready", m.Readiness)
	}
	// Relay and pressure: routed requests succeed and schedule scrapes until both members have been
	// scraped directly.
	guard := time.After(30 * time.Second)
	for scraped[0].Load() == 0 || scraped[1].Load() == 0 {
		refreshed := srv.PressureRefreshed()
		rec := call(http.MethodPost, "/v1/chat/completions", callerToken, chatBody(2, false))
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		select {
		case <-refreshed:
		case <-guard:
			t.Fatal("the pressure scrapes never reached the members")
		}
	}
	assert.Zero(t, proxied.Load(), "the environment's proxy was never contacted")
}
