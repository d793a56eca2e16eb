package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/engine"
	"github.com/anvil-llm/anvil/fakevllm"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/manage"
	"github.com/anvil-llm/anvil/router/server"
)

// The chaos run's restarts: a member stopped and started again on its port, and the router stopped
// (as SIGTERM stops it) and started again on its port with the same intent file. These are the
// pieces; TestChaos conducts them.

// chaosRouter is one router process of the run: Serve on a real listener, stopped by cancelling
// its context.
type chaosRouter struct {
	srv  *server.Server
	stop func() error // cancels Serve's context and returns what Serve returned, once it has
}

// serveChaos starts a router on addr ("127.0.0.1:0" picks a port) and returns it with the address
// it listens on.
func serveChaos(t *testing.T, yaml, addr string) (*chaosRouter, string) {
	t.Helper()
	cfg, err := load.Parse([]byte(yaml), env)
	require.NoError(t, err)
	srv, err := server.New(cfg, server.Options{})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err, "the router's port is taken again")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	var once sync.Once
	var result error
	stop := func() error {
		once.Do(func() { cancel(); result = <-served })
		return result
	}
	t.Cleanup(func() { _ = stop() })
	return &chaosRouter{srv: srv, stop: stop}, ln.Addr().String()
}

// stopMember stops the member's server and its fake, as a killed process stops: its open
// connections are cut, and its port refuses connections until restartMember.
func stopMember(m *member) string {
	addr := m.srv.Listener.Addr().String()
	m.srv.CloseClientConnections()
	m.srv.Close() // returns once every handler has
	m.fake.Close()
	return addr
}

// restartMember starts a new fake (no faults, a fresh engine) behind the member's own handler on
// addr, the port it had. The member keeps the request IDs it saw before.
func restartMember(t *testing.T, m *member, addr string, seed uint64) {
	t.Helper()
	fake, err := fakevllm.NewServer(fakevllm.Options{Models: []string{servedModel}, Profile: engine.TinyProfile(), Seed: seed})
	require.NoError(t, err)
	m.fake = fake // no handler runs now: the old server's have returned, the new one has not started
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err, "the member's port is taken again")
	srv := httptest.NewUnstartedServer(m.srv.Config.Handler)
	_ = srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	m.srv = srv // the member's cleanup closes this one and the new fake
}

// upGate holds callers back while the router is down, so a restart's gap costs a few refused
// connections instead of the run's whole budget of requests.
type upGate struct {
	mu sync.Mutex
	ch chan struct{} // closed while the router is up
}

func newUpGate() *upGate {
	g := &upGate{ch: make(chan struct{})}
	close(g.ch)
	return g
}

func (g *upGate) wait() {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	<-ch
}

func (g *upGate) down() { g.mu.Lock(); g.ch = make(chan struct{}); g.mu.Unlock() }
func (g *upGate) up()   { g.mu.Lock(); close(g.ch); g.mu.Unlock() }

// chaosAnswer is what a caller got back: the status line and the X-Request-ID the router returned
// (the ID its decision record carries).
type chaosAnswer struct {
	status int
	id     string
}

// chaosAdmin posts a transition to the router at base and returns the status and body.
func chaosAdmin(base, body string) (int, string) {
	req, _ := http.NewRequest(http.MethodPost, base+"/admin/v1/transition", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Close = true // no idle connection outlives a router restart
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// memberScope is one member's state as the transition endpoint's status answer reports it.
func memberScope(t *testing.T, base, member string) manage.Scope {
	t.Helper()
	status, body := chaosAdmin(base, `{"action":"status","tier":"replicas","member_id":"`+member+`"}`)
	require.Equal(t, http.StatusOK, status, body)
	var resp manage.Response
	require.NoError(t, json.Unmarshal([]byte(body), &resp), body)
	return resp.Scope
}

// readinessOf is the member's latest readiness verdict as GET /admin/v1/admission shows it.
func readinessOf(t *testing.T, base, member string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/admin/v1/admission", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Close = true
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var tiers []struct {
		ID      string `json:"id"`
		Members []struct {
			ID        string `json:"id"`
			Readiness string `json:"readiness"`
		} `json:"members"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tiers))
	for _, tier := range tiers {
		for _, m := range tier.Members {
			if tier.ID == "replicas" && m.ID == member {
				return m.Readiness
			}
		}
	}
	t.Fatalf("no member %s in the admission view", member)
	return ""
}

// assertRecordPerAnswer checks that every answer a caller got has exactly one decision record, by
// the request ID the router returned, and that the record's status is the one the caller got.
func assertRecordPerAnswer(t *testing.T, answers []chaosAnswer, recs []decisionlog.Record) {
	t.Helper()
	byID := map[string][]int{}
	for _, rec := range recs {
		byID[rec.RequestID] = append(byID[rec.RequestID], rec.Status)
	}
	var bad []string
	for _, a := range answers {
		got := byID[a.id]
		if a.id == "" || len(got) != 1 || got[0] != a.status {
			bad = append(bad, fmt.Sprintf("%q answered %d, records with statuses %v", a.id, a.status, got))
		}
	}
	assert.Empty(t, bad[:min(len(bad), 10)], "%d of %d answers without exactly one agreeing record", len(bad), len(answers))
	assert.NotEmpty(t, answers)
}
