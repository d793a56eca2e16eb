package manage_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/internal/routerrig"
	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/manage"
	"github.com/anvil-llm/anvil/router/server"
)

const adminToken = routerrig.AdminToken

// ephemeral is a real router on loopback over real fake-vLLM members: a replica tier "replicas"
// (m00, m01) and a direct tier "solo".
type ephemeral struct {
	srv *server.Server
	url string
}

func startEphemeral(t *testing.T) ephemeral {
	t.Helper()
	srv, url := routerrig.Start(t, nil)
	return ephemeral{srv: srv, url: url}
}

func (e ephemeral) snapshots() []admission.Snapshot { return e.srv.Admission().Snapshots() }

// counting is a Doer that counts what reaches the transport.
type counting struct {
	calls atomic.Int64
	doer  manage.Doer
}

func (c *counting) Do(r *http.Request) (*http.Response, error) {
	c.calls.Add(1)
	return c.doer.Do(r)
}

func TestTransitionAgainstARealRouter(t *testing.T) {
	e := startEphemeral(t)
	c, err := manage.NewClient(http.DefaultClient, e.url+"/", adminToken)
	require.NoError(t, err)
	steps := []struct {
		req           manage.Request
		result, state string
	}{
		{manage.Request{Action: "status", Tier: "replicas"}, "status", "admitting"},
		{manage.Request{Action: "status", Tier: "replicas", MemberID: "m01"}, "status", "admitting"},
		{manage.Request{Action: "quiesce", Tier: "replicas", MemberID: "m01", DryRun: true}, "would_change", "quiesced"},
		{manage.Request{Action: "quiesce", Tier: "replicas", MemberID: "m01", Reason: "upgrade"}, "changed", "quiesced"},
		{manage.Request{Action: "quiesce", Tier: "replicas", MemberID: "m01", Reason: "upgrade"}, "unchanged", "quiesced"},
		{manage.Request{Action: "drain", Tier: "replicas", MemberID: "m01", WaitSeconds: 5}, "drained", "quiesced"},
		{manage.Request{Action: "quiesce", Tier: "replicas"}, "changed", "quiesced"},
		{manage.Request{Action: "drain", Tier: "replicas"}, "drained", "quiesced"},
		{manage.Request{Action: "readmit", Tier: "replicas"}, "changed", "admitting"},
		{manage.Request{Action: "readmit", Tier: "replicas", MemberID: "m01"}, "changed", "admitting"},
		{manage.Request{Action: "quiesce", Tier: "solo", Reason: "maintenance"}, "changed", "quiesced"},
	}
	for _, s := range steps {
		resp, err := c.Transition(t.Context(), s.req)
		require.NoError(t, err, "%+v", s.req)
		assert.Equal(t, s.result, resp.Result, "%+v", s.req)
		assert.Equal(t, s.state, resp.Scope.State, "%+v", s.req)
		assert.Equal(t, s.req.Tier, resp.Snapshot.ID)
		assert.Equal(t, s.req.MemberID, resp.MemberID)
	}
}

// Invalid requests are refused before any transport; refusals of the router carry its fixed code and
// message, and change nothing.
func TestRefusals(t *testing.T) {
	e := startEphemeral(t)
	doer := &counting{doer: http.DefaultClient}
	c, err := manage.NewClient(doer, e.url, adminToken)
	require.NoError(t, err)
	before := e.snapshots()
	for _, req := range []manage.Request{
		{Action: "quiesce"},
		{Action: "quiesce", Tier: "replicas", MemberID: "../m00"},
		{Action: "quiesce", Tier: "replicas", MemberID: "10.0.0.5"},
		{Action: "quiesce", Tier: "Replicas"},
		{Action: "explode", Tier: "replicas"},
		{Action: "quiesce", Tier: "replicas", Reason: "Bad"},
		{Action: "quiesce", Tier: "replicas", WaitSeconds: 3},
	} {
		_, err := c.Transition(t.Context(), req)
		var p *manage.Problem
		require.True(t, errors.As(err, &p), "%+v: %v", req, err)
	}
	assert.Zero(t, doer.calls.Load(), "nothing invalid reaches the transport")

	cases := []struct {
		req    manage.Request
		status int
		code   string
	}{
		{manage.Request{Action: "quiesce", Tier: "nope"}, 404, "unknown_tier"},
		{manage.Request{Action: "quiesce", Tier: "replicas", MemberID: "m09"}, 404, "unknown_member"},
		{manage.Request{Action: "quiesce", Tier: "solo", MemberID: "m00"}, 400, "wrong_tier_kind"},
		{manage.Request{Action: "drain", Tier: "replicas"}, 409, "not_quiesced"},
		{manage.Request{Action: "status", Tier: "replicas", MemberID: "m09", DryRun: true}, 404, "unknown_member"},
	}
	for _, cs := range cases {
		_, err := c.Transition(t.Context(), cs.req)
		var r *manage.Refusal
		require.True(t, errors.As(err, &r), "%+v: %v", cs.req, err)
		assert.Equal(t, cs.status, r.Status)
		assert.Equal(t, cs.code, r.Code)
		assert.NotEmpty(t, r.Message)
		assert.NotContains(t, err.Error(), e.url)
	}
	assert.Equal(t, before, e.snapshots(), "refusals change nothing")

	bad, err := manage.NewClient(http.DefaultClient, e.url, "not-the-token")
	require.NoError(t, err)
	_, err = bad.Transition(t.Context(), manage.Request{Action: "quiesce", Tier: "replicas"})
	var r *manage.Refusal
	require.True(t, errors.As(err, &r))
	assert.Equal(t, "invalid_admin_token", r.Code)
	assert.NotContains(t, err.Error(), "not-the-token")
	assert.Equal(t, before, e.snapshots())
}

func TestTransportErrorsNameNeitherURLNorToken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c, err := manage.NewClient(http.DefaultClient, "http://"+addr, adminToken)
	require.NoError(t, err)
	_, err = c.Transition(t.Context(), manage.Request{Action: "status", Tier: "t"})
	var te *manage.TransportError
	require.True(t, errors.As(err, &te))
	assert.Equal(t, manage.TransportRefused, te.Class)
	assert.NotContains(t, err.Error(), addr)
	assert.NotContains(t, err.Error(), adminToken)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = c.Transition(ctx, manage.Request{Action: "status", Tier: "t"})
	require.True(t, errors.As(err, &te))
	assert.Equal(t, manage.TransportCanceled, te.Class)
}

// A reply that is not the transition grammar is never rendered: a bad answer is a transport
// failure, and a refusal's text outside the fixed forms is replaced.
func TestOddRepliesAreNotRendered(t *testing.T) {
	replies := map[string]struct {
		status int
		body   string
	}{
		"garbage":       {200, `not json`},
		"unknown field": {200, `{"action":"status","tier":"t","dry_run":false,"result":"status","scope":{"state":"admitting","active_requests":0,"draining":false},"snapshot":{"id":"t","kind":"direct","state":"admitting","draining":false,"active_requests":0,"max_concurrency":0,"released":0,"release_misuse":0},"url":"http://x"}`},
		"escape codes":  {200, `{"action":"status","tier":"t","dry_run":false,"result":"status","scope":{"state":"admitting\u001b[2J","active_requests":0,"draining":false},"snapshot":{"id":"t","kind":"direct","state":"admitting","draining":false,"active_requests":0,"max_concurrency":0,"released":0,"release_misuse":0}}`},
		// The answer's snapshot shares the views' tier shape but never carries their queue.
		"a queue":    {200, `{"action":"status","tier":"t","dry_run":false,"result":"status","scope":{"state":"admitting","active_requests":0,"draining":false},"snapshot":{"id":"t","kind":"direct","state":"admitting","draining":false,"active_requests":0,"max_concurrency":0,"released":0,"release_misuse":0,"queue":{"waiting":0,"max_waiting":1,"refused_full":0}}}`},
		"other tier": {200, `{"action":"status","tier":"u","dry_run":false,"result":"status","scope":{"state":"admitting","active_requests":0,"draining":false},"snapshot":{"id":"u","kind":"direct","state":"admitting","draining":false,"active_requests":0,"max_concurrency":0,"released":0,"release_misuse":0}}`},
	}
	for name, rep := range replies {
		t.Run(name, func(t *testing.T) {
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(rep.status)
				_, _ = w.Write([]byte(rep.body))
			}))
			defer hs.Close()
			c, err := manage.NewClient(hs.Client(), hs.URL, adminToken)
			require.NoError(t, err)
			_, err = c.Transition(t.Context(), manage.Request{Action: "status", Tier: "t"})
			var te *manage.TransportError
			require.True(t, errors.As(err, &te), "%v", err)
			assert.Equal(t, manage.TransportBadReply, te.Class)
		})
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte(`{"error":{"message":"see http://10.0.0.5/\u001b[31m","code":"Weird Code"}}`))
	}))
	defer hs.Close()
	c, err := manage.NewClient(hs.Client(), hs.URL, adminToken)
	require.NoError(t, err)
	_, err = c.Transition(t.Context(), manage.Request{Action: "status", Tier: "t"})
	var r *manage.Refusal
	require.True(t, errors.As(err, &r))
	assert.Equal(t, "http_418", r.Code)
	assert.Equal(t, "the router refused the transition (HTTP 418)", r.Message)
}

func TestNewClientRefusals(t *testing.T) {
	for _, u := range []string{"", "ftp://h", "http://", "http://user:pw@h", "http://h/?q=1", "http://h/#f", "h:80", "://"} {
		_, err := manage.NewClient(http.DefaultClient, u, adminToken)
		assert.ErrorIs(t, err, manage.ErrRouterURL, u)
	}
	for _, tok := range []string{"", "has space", "new\nline", strings.Repeat("x", 4097)} {
		_, err := manage.NewClient(http.DefaultClient, "http://h", tok)
		assert.ErrorIs(t, err, manage.ErrToken)
	}
}
