package fakevllm

import (
	"context"
	"net"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClusterMembersAreIndependent(t *testing.T) {
	c, err := StartCluster(context.Background(), tinyOptions(), 3)
	require.NoError(t, err)
	defer func() { assert.NoError(t, c.Close()) }()
	urls := c.URLs()
	require.Len(t, urls, 3)
	seen := map[string]bool{}
	for i, m := range c.Members() {
		assert.Equal(t, i, m.Index())
		assert.Equal(t, urls[i], m.URL())
		assert.False(t, seen[m.URL()], "distinct listeners")
		seen[m.URL()] = true
		st, _ := get(t, http.DefaultClient, m.URL()+"/health")
		assert.Equal(t, http.StatusOK, st)
	}
	ids := map[any]bool{}
	for _, u := range urls[:2] {
		resp := post(t, context.Background(), http.DefaultClient, u+"/v1/completions", simpleCompletion)
		ids[decodeJSON(t, string(readAll(t, resp)))["id"]] = true
	}
	assert.Len(t, ids, 2, "members have their own seeds")
	ms := c.Members()
	assert.Equal(t, uint64(1), ms[0].Server().Metrics().Submitted)
	assert.Equal(t, uint64(1), ms[1].Server().Metrics().Submitted)
	assert.Zero(t, ms[2].Server().Metrics().Submitted, "each member has its own engine")
}

// TestClusterGracefulShutdown runs members on in-memory listeners inside a
// synctest bubble, so "the scrape is hung in its handler" is a fact, not a
// race.
func TestClusterGracefulShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lns := []*pipeListener{newPipeListener(), newPipeListener()}
		c, err := StartClusterOn(tinyOptions(), []net.Listener{lns[0], lns[1]})
		require.NoError(t, err)
		defer func() { _ = c.Close() }()
		clients := []*http.Client{
			{Transport: &http.Transport{DialContext: lns[0].dial}},
			{Transport: &http.Transport{DialContext: lns[1].dial}},
		}
		defer func() {
			for _, cl := range clients {
				cl.CloseIdleConnections()
			}
		}()

		require.NoError(t, c.Members()[1].Server().SetFaults(Faults{Metrics: MetricsFault{Mode: MetricsHang}}))
		scraped := make(chan int, 1)
		go func() {
			st, _ := get(t, clients[1], "http://pipe/metrics")
			scraped <- st
		}()
		resp := post(t, context.Background(), clients[0], "http://pipe/v1/chat/completions", chatReq("x", 40, `"stream":true,"ignore_eos":true`))
		r := newSSEReader(resp.Body)
		_, err = r.next()
		require.NoError(t, err)
		synctest.Wait() // the scrape hangs in its handler, the stream is mid-flight

		done := make(chan error, 1)
		go func() { done <- c.Shutdown(context.Background()) }()
		synctest.Wait()
		assert.Equal(t, http.StatusServiceUnavailable, <-scraped, "shutdown releases the hung scrape")
		_, err = clients[0].Get("http://pipe/health")
		assert.Error(t, err, "no new connections while draining")

		rest, err := r.all() // the stream in flight runs to its end
		resp.Body.Close()
		require.NoError(t, err)
		require.NotEmpty(t, rest)
		assert.Equal(t, "[DONE]", rest[len(rest)-1].data)
		require.NoError(t, <-done)
	})
}

func TestClusterInvalid(t *testing.T) {
	for _, n := range []int{0, MaxMembers + 1} {
		_, err := StartCluster(context.Background(), tinyOptions(), n)
		assert.ErrorIs(t, err, ErrInvalidOptions)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, err = StartClusterOn(Options{}, []net.Listener{ln})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	_, err = ln.Accept()
	assert.ErrorIs(t, err, net.ErrClosed, "listeners are closed on failure")
}
