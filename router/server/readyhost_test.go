package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/server"
)

// /readyz/host is /readyz with quiesce set aside: a host its operator quiesced stays Ready for the
// kubelet (no stalled rollout, no budget spent), while /readyz keeps it out of a balancer's rotation.
// Without a ready member both are 503.
func TestHostReadinessSetsQuiesceAside(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{}))
	both := func() (int, int) {
		t.Helper()
		traffic, _, _ := r.getPage(t, http.MethodGet, "/readyz", "", nil)
		host, body, _ := r.getPage(t, http.MethodGet, server.HostReadyPath, "", nil)
		require.Contains(t, body, `"tiers"`)
		return traffic, host
	}
	traffic, host := both()
	assert.Equal(t, http.StatusOK, traffic)
	assert.Equal(t, http.StatusOK, host)
	head, _, _ := r.getPage(t, http.MethodHead, server.HostReadyPath, "", nil)
	assert.Equal(t, http.StatusOK, head, "HEAD, as balancers probe")

	code, body := r.admin(t, `{"action":"quiesce","tier":"replicas","reason":"maintenance"}`)
	require.Equal(t, http.StatusOK, code, body)
	traffic, host = both()
	assert.Equal(t, http.StatusServiceUnavailable, traffic, "a quiesced tier takes no traffic")
	assert.Equal(t, http.StatusOK, host, "but the host is up: the kubelet keeps it Ready")

	code, body = r.admin(t, `{"action":"readmit","tier":"replicas"}`)
	require.Equal(t, http.StatusOK, code, body)
	code, body = r.admin(t, `{"action":"quiesce","tier":"replicas","member_id":"m00"}`)
	require.Equal(t, http.StatusOK, code, body)
	code, body = r.admin(t, `{"action":"quiesce","tier":"replicas","member_id":"m01"}`)
	require.Equal(t, http.StatusOK, code, body)
	traffic, host = both()
	assert.Equal(t, http.StatusServiceUnavailable, traffic, "every member quiesced")
	assert.Equal(t, http.StatusOK, host)

	for _, m := range ms {
		m.srv.CloseClientConnections()
		m.srv.Close()
	}
	r.srv.ProbeNow(t.Context())
	traffic, host = both()
	assert.Equal(t, http.StatusServiceUnavailable, traffic)
	assert.Equal(t, http.StatusServiceUnavailable, host, "no ready member: the host is not ready either")
	_, body, _ = r.getPage(t, http.MethodGet, server.HostReadyPath, "", nil)
	assert.Contains(t, body, "tier_without_ready_member")
	assert.NotContains(t, body, "tier_not_admitting", "quiesce is no reason here")
}
