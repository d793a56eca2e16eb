package server_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/manage"
)

// Two callers, each with its own token: "caller-1" and "caller-2" in the metrics.
const (
	callerA = "caller-a-token-0123456789"
	callerB = "caller-b-token-0123456789"
)

func twoCallers(k string) (string, bool) {
	switch k {
	case config.EnvAPITokens:
		return callerA + "," + callerB, true
	case config.EnvAPIToken:
		return "", false
	}
	return env(k)
}

// stalledBody is a request whose body the test sends part of and then stalls, on a connection it owns.
type stalledBody struct {
	conn net.Conn
	br   *bufio.Reader
	rest string
}

// holdBody starts body as caller token, waits for the router's first answer and, when it is "100
// Continue" (the handler is reading: the body holds its budget), sends a little of it and stalls.
// Otherwise it returns the refusal's status and code.
func holdBody(t *testing.T, r *router, token, body string) (held *stalledBody, status int, code string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(r.http.URL, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = io.WriteString(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: anvil\r\nAuthorization: Bearer "+token+
		"\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\nExpect: 100-continue\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	if resp.StatusCode == http.StatusContinue {
		_, err = io.WriteString(conn, body[:16])
		require.NoError(t, err)
		return &stalledBody{conn: conn, br: br, rest: body[16:]}, resp.StatusCode, ""
	}
	defer resp.Body.Close()
	var e openAIError
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	return nil, resp.StatusCode, e.Error.Code
}

// finish sends the rest of the body and returns the answer's status.
func (h *stalledBody) finish(t *testing.T) int {
	t.Helper()
	_, err := io.WriteString(h.conn, h.rest)
	require.NoError(t, err)
	resp, err := http.ReadResponse(h.br, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// slowBody is holdBody of a 1 MiB chat body that is never finished.
func slowBody(t *testing.T, r *router, token string) (bool, int, string) {
	t.Helper()
	h, status, code := holdBody(t, r, token, paddedChat(1<<20))
	return h != nil, status, code
}

// doAs posts body as caller token and reads the answer.
func doAs(t *testing.T, r *router, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.http.URL+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// paddedChat is a chat body of about n bytes.
func paddedChat(n int) string {
	body := chatBody(2, false)
	return body[:len(body)-1] + `,"pad":"` + strings.Repeat("p", n-len(body)-9) + `"}`
}

// TestSlowCallerCannotStarveAnother is issue 26's attack: 64 slow 1 MiB uploads from caller A, each
// stalled after a few bytes while it holds its part of the in-flight body budget (64 MiB by
// default). With the defaults, A holds its quarter (16 bodies) and its other 48 are refused at once
// with A's own code, while caller B's requests, a large body included, get 200. With the fairness
// settings off, A's 64 bodies hold the whole budget and B is locked out with 503
// body_budget_exhausted: the lock-out the share exists to prevent, so the test can fail.
func TestSlowCallerCannotStarveAnother(t *testing.T) {
	for _, tc := range []struct {
		name    string
		limits  string
		heldA   int
		status  int    // B's answers
		code    string // B's refusal
		refused string // A's refusals
	}{
		{"fair defaults", "", 16, http.StatusOK, "", "caller_body_share_exhausted"},
		{"fairness off", "limits:\n  caller_body_share_percent: 0\n  min_upload_bytes_per_second: 0\n", 64,
			http.StatusServiceUnavailable, "body_budget_exhausted", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := startMembers(t, 2)
			r := startRouterWith(t, replicaYAML(ms, tierOpts{extra: tc.limits}), routerOptions{env: twoCallers})
			held, refused := 0, 0
			for range 64 {
				ok, status, code := slowBody(t, r, callerA)
				if ok {
					held++
					continue
				}
				refused++
				assert.Equal(t, http.StatusServiceUnavailable, status)
				assert.Equal(t, tc.refused, code)
			}
			r.wait(t, refused)
			require.Equal(t, tc.heldA, held, "A's bodies holding the budget")

			for _, body := range []string{chatBody(2, false), paddedChat(512 << 10)} {
				status, text := doAs(t, r, callerB, body)
				r.wait(t, 1)
				assert.Equal(t, tc.status, status, text)
				if tc.code != "" {
					var e openAIError
					require.NoError(t, json.Unmarshal([]byte(text), &e))
					assert.Equal(t, tc.code, e.Error.Code)
				}
			}
			mfs := bodyMetrics(t, r)
			assert.Equal(t, float64(held<<20), value(mfs, "anvil_router_body_budget_held_bytes", "caller-1"))
			assert.Zero(t, value(mfs, "anvil_router_body_budget_held_bytes", "caller-2"))
			assert.Equal(t, float64(refused), value(mfs, "anvil_router_body_refusals_total", "caller-1", "caller_share"))
			if tc.code != "" {
				assert.Equal(t, 2.0, value(mfs, "anvil_router_body_refusals_total", "caller-2", "budget"))
			}
		})
	}
}

// bodyMetrics gathers the router's registry, lints the body budget's families and returns them all.
func bodyMetrics(t *testing.T, r *router) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := r.srv.Registry().Gather()
	require.NoError(t, err)
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	require.NoError(t, err)
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "anvil_router_body") || strings.HasPrefix(p.Metric, "anvil_router_spool") {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// value is the value of family's series whose label values are labels, in label-name order; the
// test fails when there is none.
func value(mfs map[string]*dto.MetricFamily, family string, labels ...string) float64 {
	for _, m := range mfs[family].GetMetric() {
		var got []string
		for _, l := range m.GetLabel() {
			got = append(got, l.GetValue())
		}
		if strings.Join(got, ",") != strings.Join(labels, ",") {
			continue
		}
		if c := m.GetCounter(); c != nil {
			return c.GetValue()
		}
		return m.GetGauge().GetValue()
	}
	return -1
}

// The caller labels are bounded by the configuration: 40 tokens give caller-1..caller-32 and
// "other", whatever the requests say.
func TestCallerLabelsAreBounded(t *testing.T) {
	toks := make([]string, 40)
	for i := range toks {
		toks[i] = "many-callers-token-" + strconv.Itoa(100+i)
	}
	lookup := func(k string) (string, bool) {
		switch k {
		case config.EnvAPITokens:
			return strings.Join(toks, ","), true
		case config.EnvAPIToken:
			return "", false
		}
		return env(k)
	}
	ms := startMembers(t, 2)
	r := startRouterWith(t, replicaYAML(ms, tierOpts{}), routerOptions{env: lookup})
	status, text := doAs(t, r, toks[39], chatBody(2, false))
	r.wait(t, 1)
	require.Equal(t, http.StatusOK, status, text)
	mfs := bodyMetrics(t, r)
	labels := map[string]bool{}
	for _, m := range mfs["anvil_router_body_budget_held_bytes"].GetMetric() {
		labels[m.GetLabel()[0].GetValue()] = true
	}
	assert.Len(t, labels, 33)
	assert.True(t, labels["caller-32"] && labels["other"] && !labels["caller-33"], "%v", labels)
	for _, m := range mfs["anvil_router_body_refusals_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			for _, tok := range toks {
				assert.NotContains(t, l.GetValue(), tok, "no token in a label")
			}
		}
	}
}

// The share reloads live and a reload disturbs no body in flight: caller A holds two 4 KiB bodies
// (its whole 50 % share of 16 KiB); a reload to 25 % leaves both reading and held (A's holder is
// adopted by the new generation, so A is still over its new share and refused), B still fits, and
// A's two bodies then complete with 200 and give everything back.
func TestCallerShareReloadsLive(t *testing.T) {
	ms := startMembers(t, 2)
	yaml := func(share int) string {
		return replicaYAML(ms, tierOpts{extra: "limits:\n  max_body_bytes: 4096\n  max_inflight_body_bytes: 16384\n" +
			"  caller_body_share_percent: " + strconv.Itoa(share) + "\n"})
	}
	rig := startReloadRig(t, yaml(50), routerOptions{env: twoCallers})
	rig.envs[config.EnvAPITokens], rig.envs[config.EnvAPIToken] = callerA+","+callerB, ""
	body := paddedChat(4096)
	var held []*stalledBody
	for range 2 {
		h, status, code := holdBody(t, rig.router, callerA, body)
		require.NotNil(t, h, "%d %s", status, code)
		held = append(held, h)
	}
	_, status, code := holdBody(t, rig.router, callerA, body)
	rig.wait(t, 1)
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, "caller_body_share_exhausted", code)

	rig.write(t, yaml(25))
	status, out := rig.adminDo(t, http.MethodPost, manage.ReloadPath, adminToken, "{}")
	require.Equal(t, http.StatusOK, status, string(out))
	require.Contains(t, string(out), "limits.caller_body_share_percent")
	assert.Equal(t, 8192.0, value(bodyMetrics(t, rig.router), "anvil_router_body_budget_held_bytes", "caller-1"), "A's holder survived the reload")

	status, text := doAs(t, rig.router, callerA, chatBody(2, false))
	rig.wait(t, 1)
	assert.Equal(t, http.StatusServiceUnavailable, status, "A is over its new share: %s", text)
	status, text = doAs(t, rig.router, callerB, body)
	rig.wait(t, 1)
	assert.Equal(t, http.StatusOK, status, text)
	for _, h := range held {
		assert.Equal(t, http.StatusOK, h.finish(t), "a body in flight is not disturbed by the reload")
		rig.wait(t, 1)
	}
	status, text = doAs(t, rig.router, callerA, body)
	rig.wait(t, 1)
	assert.Equal(t, http.StatusOK, status, text)
	assert.Zero(t, value(bodyMetrics(t, rig.router), "anvil_router_body_budget_held_bytes", "caller-1"))
}
