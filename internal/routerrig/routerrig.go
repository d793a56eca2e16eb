// Package routerrig is a test rig: a real router in process over real fake-vLLM members on
// loopback, configured as a replica tier "replicas" (members m00 and m01) and a direct tier "solo",
// with fixed caller and admin tokens. The operator tools' tests (router/manage, router/mcp,
// cmd/anvil-router) drive it instead of each building the same router.
package routerrig

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/server"
)

// The rig's tokens, as a router reads them from ANVIL_API_TOKEN, ANVIL_ADMIN_TOKEN and
// ANVIL_OBSERVER_TOKENS.
const (
	AdminToken    = "admin-token-0123456789"
	CallerToken   = "caller-token-0123456789"
	ObserverToken = "observer-token-0123456789"
)

// Model is the model every fake member serves and every tier declares.
const Model = "test/llama"

// Fakes starts n fake-vLLM members (tiny profile, seeds 1..n) on loopback and returns their URLs;
// the test's cleanup stops them.
func Fakes(t testing.TB, n int) []string {
	t.Helper()
	var urls []string
	for i := range n {
		fake, err := fakevllm.NewServer(fakevllm.Options{Models: []string{Model}, Profile: engine.TinyProfile(), Seed: uint64(i + 1)})
		require.NoError(t, err)
		hs := httptest.NewServer(fake.Handler())
		t.Cleanup(func() { hs.CloseClientConnections(); hs.Close(); fake.Close() })
		urls = append(urls, hs.URL)
	}
	return urls
}

// YAML is the rig's router config over three member URLs: "replicas" over urls[0] and urls[1],
// "solo" over urls[2]. extra is inserted as top-level settings (an intent_file, say).
func YAML(urls []string, extra string) string {
	return fmt.Sprintf(`listen: 127.0.0.1:0
%saliases: [{id: chat, tier: replicas}]
tiers:
  - id: replicas
    kind: replica
    served_model: %s
    host: 127.0.0.1
    provenance: test fakes
    gates: {max_context_tokens: 4096}
    members:
      - {id: m00, endpoint: %s}
      - {id: m01, endpoint: %s}
  - id: solo
    kind: direct
    served_model: %[2]s
    endpoint: %[5]s
    gates: {max_context_tokens: 4096}
`, extra, Model, urls[0], urls[1], urls[2])
}

// Start runs the rig's router over three new fakes, readiness probed once, behind an httptest
// server whose handler is wrap(the router's handler), or the router's handler when wrap is nil. It
// returns the router and its base URL; the test's cleanup stops both.
func Start(t testing.TB, wrap func(http.Handler) http.Handler) (*server.Server, string) {
	t.Helper()
	cfg, err := load.Parse([]byte(YAML(Fakes(t, 3), "")), func(k string) (string, bool) {
		switch k {
		case config.EnvAPIToken:
			return CallerToken, true
		case config.EnvAdminToken:
			return AdminToken, true
		case config.EnvObserverTokens:
			return ObserverToken, true
		}
		return "", false
	})
	require.NoError(t, err)
	srv, err := server.New(cfg, server.Options{})
	require.NoError(t, err)
	srv.ProbeNow(t.Context())
	h := srv.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(func() { hs.Close(); _ = srv.Close() })
	return srv, hs.URL
}
