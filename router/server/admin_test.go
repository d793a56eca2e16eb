package server_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTransitionRefusalsChangeNothing(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2}))
	cases := []struct {
		name, body string
		status     int
		code       string
	}{
		{"not json", `{`, 400, "invalid_transition"},
		{"unknown field", `{"action":"status","tier":"replicas","x":1}`, 400, "invalid_transition"},
		{"missing tier", `{"action":"status"}`, 400, "invalid_transition"},
		{"bad action", `{"action":"explode","tier":"replicas"}`, 400, "invalid_action"},
		{"unknown tier", `{"action":"quiesce","tier":"nope"}`, 404, "unknown_tier"},
		{"unknown member", `{"action":"quiesce","tier":"replicas","member":"zz"}`, 404, "unknown_member"},
		{"bad reason", `{"action":"quiesce","tier":"replicas","reason":"Bad Reason!"}`, 400, "invalid_reason"},
		{"drain needs quiesce", `{"action":"drain","tier":"replicas"}`, 409, "not_quiesced"},
		{"member drain needs member quiesce", `{"action":"drain","tier":"replicas","member":"m00"}`, 409, "not_quiesced"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := r.admin(t, c.body)
			assert.Equal(t, c.status, status, body)
			assert.Contains(t, body, `"code":"`+c.code+`"`)
		})
	}
	s := r.snapshot(t, "replicas")
	assert.Equal(t, "admitting", s.State)
	for _, m := range s.Members {
		assert.Equal(t, "admitting", m.State)
	}
}

func TestAdminNeedsTheAdminToken(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{}))
	for _, tok := range []string{"", callerToken, "wrong"} {
		req, _ := http.NewRequest(http.MethodGet, r.http.URL+"/admin/v1/admission", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		r.wait(t, 1)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}
}

// A quiesced member stops receiving traffic while its peer serves; member drain waits for that member's
// in-flight request without cancelling it; tier readmission does not clear member quiesce; member
// readmission probes that member's readiness first.
func TestMemberQuiesceDrainReadmit(t *testing.T) {
	ms := startMembers(t, 2)
	for _, m := range ms {
		slow(t, m, 1000) // the in-flight stream below takes seconds until it is sped up again
	}
	r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2}))
	resp := r.post(t, t.Context(), "/v1/chat/completions", chatBody(8, true))
	busy, idle := 0, 1
	select {
	case <-ms[0].entered:
	case <-ms[1].entered:
		busy, idle = 1, 0
	}
	slow(t, ms[idle], 1)
	busyID := fmt.Sprintf("m%02d", busy)

	status, body := r.admin(t, `{"action":"quiesce","tier":"replicas","member":"`+busyID+`","reason":"upgrade"}`)
	require.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, `"reason":"upgrade"`)

	drained := make(chan int, 1)
	go func() {
		drained <- postAdmin(r, `{"action":"drain","tier":"replicas","member":"`+busyID+`","wait_seconds":60}`)
	}()
	for range 4 {
		code, out, _ := r.do(t, "/v1/chat/completions", chatBody(2, false))
		require.Equal(t, http.StatusOK, code, out)
	}
	assert.EqualValues(t, 1, ms[busy].calls.Load(), "a quiesced member receives nothing new")
	assert.EqualValues(t, 4, ms[idle].calls.Load())
	snap := r.snapshot(t, "replicas")
	assert.True(t, snap.Members[busy].Draining)
	assert.EqualValues(t, 1, snap.Members[busy].Active, "the in-flight request is still held, not cancelled")
	select {
	case s := <-drained:
		t.Fatalf("drain returned %d while the member still had a request in flight", s)
	default:
	}

	slow(t, ms[busy], 1) // let the in-flight stream finish: it completes normally, drain never cut it
	events := readEvents(t, resp.Body)
	resp.Body.Close()
	require.NotEmpty(t, events)
	assert.Equal(t, "[DONE]", events[len(events)-1])
	assert.Equal(t, http.StatusOK, <-drained)
	r.wait(t, 4+1+1) // the four requests, the stream and the drain call

	status, _ = r.admin(t, `{"action":"readmit","tier":"replicas"}`)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "quiesced", r.snapshot(t, "replicas").Members[busy].State, "tier readmission never clears member quiesce")

	// Member readmission probes that member: down, it stays quiesced.
	ms[busy].srv.CloseClientConnections()
	ms[busy].srv.Close()
	status, body = r.admin(t, `{"action":"readmit","tier":"replicas","member":"`+busyID+`"}`)
	assert.Equal(t, http.StatusConflict, status, body)
	assert.Equal(t, "quiesced", r.snapshot(t, "replicas").Members[busy].State)
	assertSettled(t, r.snapshot(t, "replicas"))
}

// postAdmin posts a transition without testing helpers, for use off the test goroutine; it does not
// consume the router's completion signal.
func postAdmin(r *router, body string) int {
	req, err := http.NewRequest(http.MethodPost, r.http.URL+"/admin/v1/transition", strings.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestAdmissionAndDecisionViews(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2}))
	code, out, _ := r.do(t, "/v1/chat/completions", chatBody(2, false))
	require.Equal(t, http.StatusOK, code, out)
	r.wait(t, 1)
	for _, path := range []string{"/admin/v1/admission", "/admin/v1/decisions?n=5", "/admin/v1/decisions/summary"} {
		req, _ := http.NewRequest(http.MethodGet, r.http.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		r.wait(t, 1)
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.NotContains(t, string(b), "127.0.0.1", "admin views never carry member addresses")
		assert.NotContains(t, string(b), callerToken)
	}
}
