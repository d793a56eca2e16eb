package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/statuspage"
)

// labelledToken is the caller token auth.callers names team-a in rolesYAML.
const labelledToken = "team-a-token-0123456789"

// rolesYAML is a capacity tier with one unlabelled caller (ANVIL_API_TOKEN: caller-1), one labelled
// caller (team-a), the observer token (ANVIL_OBSERVER_TOKENS) and the admin token.
func rolesYAML(ms []*member) string {
	return replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 4,
		extra: "auth:\n  callers:\n    - {label: team-a, token: " + labelledToken + "}\n"})
}

// call sends one request with token ("" sends none) and body ("" sends none), reads the whole answer
// and waits for the router to finish it.
func (r *router) call(t *testing.T, method, path, token, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, r.http.URL+path, rd)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := noRedirects().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r.wait(t, 1)
	return resp.StatusCode, string(b)
}

// The token kinds of the role table, in the order of want's columns.
var roleTokens = []struct{ name, token string }{
	{"caller", callerToken}, {"labelled caller", labelledToken}, {"observer", observerToken},
	{"admin", adminToken}, {"none", ""}, {"wrong", "wrong-token-0123456789"},
}

// roleRow is one route and the status each token kind gets there (roleTokens' order).
type roleRow struct {
	class, method, path, body string
	want                      [6]int
}

const (
	ok     = http.StatusOK
	unauth = http.StatusUnauthorized
	denied = http.StatusForbidden
)

// roleTable is every route class against every token kind. Caller tokens open /v1 only; the observer
// token opens /metrics and the admin API's reads (transition status included) but for the normalized
// configuration, and gets 403 insufficient_role on that and on everything that changes state; the admin token opens every admin route and
// /metrics but not /v1 (an admin is not a caller); the status page's files answer everyone.
func roleTable() []roleRow {
	var rows []roleRow
	front := [6]int{ok, ok, unauth, unauth, unauth, unauth}
	rows = append(rows,
		roleRow{"caller", http.MethodPost, "/v1/chat/completions", chatBody(2, false), front},
		roleRow{"caller", http.MethodGet, "/v1/models", "", front},
		roleRow{"caller", http.MethodGet, "/v1/nothing", "", [6]int{http.StatusNotFound, http.StatusNotFound, unauth, unauth, unauth, unauth}})
	read := [6]int{unauth, unauth, ok, ok, unauth, unauth}
	for _, p := range []string{"/metrics", "/admin/v1/admission", "/admin/v1/capacity", "/admin/v1/decisions",
		"/admin/v1/decisions/summary"} {
		class := "admin read"
		if p == "/metrics" {
			class = "metrics"
		}
		rows = append(rows, roleRow{class, http.MethodGet, p, "", read})
	}
	rows = append(rows,
		roleRow{"metrics", http.MethodGet, "/metrics/nothing", "", [6]int{unauth, unauth, http.StatusNotFound, http.StatusNotFound, unauth, unauth}},
		roleRow{"admin read", http.MethodPost, "/admin/v1/transition", `{"action":"status","tier":"replicas"}`, read},
		roleRow{"admin read", http.MethodGet, "/admin/v1/nothing", "", [6]int{unauth, unauth, http.StatusNotFound, http.StatusNotFound, unauth, unauth}})
	write := func(status int) [6]int { return [6]int{unauth, unauth, denied, status, unauth, unauth} }
	rows = append(rows,
		// The normalized config names endpoints, token files and environment variables: the admin's.
		roleRow{"admin only read", http.MethodGet, "/admin/v1/config", "", write(ok)},
		roleRow{"admin write", http.MethodPost, "/admin/v1/transition", `{"action":"quiesce","tier":"replicas","dry_run":true}`, write(ok)},
		roleRow{"admin write", http.MethodPost, "/admin/v1/transition", `{"action":"quiesce","tier":"replicas"}`, write(ok)},
		roleRow{"admin write", http.MethodPost, "/admin/v1/transition", `{"action":"drain","tier":"replicas","wait_seconds":1}`, write(ok)},
		roleRow{"admin write", http.MethodPost, "/admin/v1/transition", `{"action":"readmit","tier":"replicas"}`, write(ok)},
		// No config file behind this router: the admin's reload is refused on its merits (422).
		roleRow{"admin write", http.MethodPost, "/admin/v1/config/reload", "{}", write(http.StatusUnprocessableEntity)},
		roleRow{"admin write", http.MethodDelete, "/admin/v1/admission", "", write(http.StatusMethodNotAllowed)},
		roleRow{"admin write", http.MethodPost, "/metrics", "", write(http.StatusMethodNotAllowed)})
	return rows
}

// TestRoleBoundaries: each token kind against each route class on a real router on loopback, with
// the status each must get, and the refusal's code; no answer ever carries a token.
func TestRoleBoundaries(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, rolesYAML(ms))
	for _, row := range roleTable() {
		for i, tok := range roleTokens {
			status, body := r.call(t, row.method, row.path, tok.token, row.body)
			require.Equal(t, row.want[i], status, "%s: %s %s %s with the %s token: %s", row.class, row.method, row.path, row.body, tok.name, body)
			switch {
			case status == denied:
				assert.Contains(t, body, `"code":"insufficient_role"`)
			case status == unauth && strings.HasPrefix(row.path, "/v1"):
				assert.Contains(t, body, `"code":"invalid_api_key"`)
			case status == unauth:
				assert.Contains(t, body, `"code":"invalid_admin_token"`)
			}
			for _, secret := range []string{callerToken, labelledToken, observerToken, adminToken} {
				assert.NotContains(t, body, secret)
			}
		}
	}
	assert.Equal(t, admission.StateAdmitting, r.snapshot(t, "replicas").State, "the observer quiesced nothing")
}

// TestStatusPageOpensToEveryoneReadsToObservers: the page's files answer every token kind alike
// (they hold no data); its reads are the admin API's GET views (TestRoleBoundaries), and its
// transition buttons are refused under an observer token server-side.
func TestStatusPageOpensToEveryoneReadsToObservers(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, rolesYAML(ms))
	page := statuspage.New()
	for _, p := range page.Paths() {
		var first string
		for i, tok := range roleTokens {
			status, body := r.call(t, http.MethodGet, p, tok.token, "")
			require.Equal(t, ok, status, "%s with the %s token", p, tok.name)
			if i == 0 {
				first = body
			}
			assert.Equal(t, first, body, "the same bytes for everyone: %s", p)
		}
	}
	for _, tok := range roleTokens {
		status, _ := r.call(t, http.MethodGet, statuspage.Bare, tok.token, "")
		assert.Equal(t, http.StatusMovedPermanently, status, "%s with the %s token", statuspage.Bare, tok.name)
	}
	status, body := r.call(t, http.MethodPost, "/admin/v1/transition", observerToken, `{"action":"quiesce","tier":"replicas","member_id":"m00"}`)
	assert.Equal(t, denied, status, body)
}

// TestCallerLabels: the decision record names each request's caller by its label (team-a for the
// labelled token, caller-1 for the unlabelled one) and never by the token; the fair budget's metrics
// carry the configured label.
func TestCallerLabels(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, rolesYAML(ms))
	for _, tok := range []string{callerToken, labelledToken} {
		status, body := r.call(t, http.MethodPost, "/v1/chat/completions", tok, chatBody(2, false))
		require.Equal(t, ok, status, body)
	}
	// An X-Request-ID that is an observer or labelled caller token is dropped like any credential.
	for _, id := range []string{observerToken, labelledToken} {
		req, err := http.NewRequest(http.MethodGet, r.http.URL+"/v1/models", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+callerToken)
		req.Header.Set("X-Request-ID", id)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		r.wait(t, 1)
	}
	_, page := r.call(t, http.MethodGet, "/metrics", observerToken, "")
	v, _ := series(families(t, page), "anvil_router_caller_request_ids_total", map[string]string{"result": "secret"})
	assert.EqualValues(t, 2, v, "both IDs dropped as credentials")
	recs := r.srv.Decisions().Recent(10)
	require.Len(t, recs, 2)
	assert.Equal(t, []string{"caller-1", "team-a"}, []string{recs[0].Caller, recs[1].Caller}, "in arrival order")

	status, body := r.call(t, http.MethodGet, "/admin/v1/decisions?format=json", observerToken, "")
	require.Equal(t, ok, status, body)
	assert.Contains(t, body, `"caller":"team-a"`)
	assert.Contains(t, body, `"caller":"caller-1"`)
	var lines []decisionlog.Record
	for _, rec := range recs {
		js, err := rec.JSON()
		require.NoError(t, err)
		got, err := decisionlog.ReadJSONL(strings.NewReader(string(js)+"\n"), 1)
		require.NoError(t, err, "the record reads back strictly")
		lines = append(lines, got...)
	}
	assert.Equal(t, "team-a", lines[1].Caller)

	_, page = r.call(t, http.MethodGet, "/metrics", observerToken, "")
	mfs := families(t, page)
	for _, label := range []string{"caller-1", "team-a", "other"} {
		_, found := series(mfs, "anvil_router_body_budget_held_bytes", map[string]string{"caller": label})
		assert.True(t, found, "held bytes of %s", label)
		_, found = series(mfs, "anvil_router_body_refusals_total", map[string]string{"caller": label, "reason": "budget"})
		assert.True(t, found, "refusals of %s seeded", label)
	}
	for _, secret := range []string{callerToken, labelledToken, observerToken, adminToken} {
		assert.NotContains(t, page, secret)
		assert.NotContains(t, body, secret)
	}
}

// TestObserverScrapesLikePrometheus: the observer token scrapes /metrics as Prometheus does, with
// bearer credentials (authorization: {type: Bearer, credentials_file: ...}), its Accept header and
// its scrape-timeout header; the page parses strictly. The same token cannot quiesce.
func TestObserverScrapesLikePrometheus(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, rolesYAML(ms))
	req, err := http.NewRequest(http.MethodGet, r.http.URL+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+observerToken)
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,"+
		"text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2")
	req.Header.Set("User-Agent", "Prometheus/3.5.0")
	req.Header.Set("X-Prometheus-Scrape-Timeout-Seconds", "10")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	r.wait(t, 1)
	require.Equal(t, ok, resp.StatusCode, string(b))
	assert.NotEmpty(t, resp.Header.Get("Content-Type"))
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		assert.Contains(t, families(t, string(b)), "anvil_router_body_budget_held_bytes")
	} else {
		assert.Contains(t, string(b), "# EOF")
	}

	status, body := r.call(t, http.MethodPost, "/admin/v1/transition", observerToken, `{"action":"quiesce","tier":"replicas"}`)
	assert.Equal(t, denied, status, body)
	var refusal struct {
		Error struct{ Code string } `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &refusal))
	assert.Equal(t, "insufficient_role", refusal.Error.Code)
	assert.Equal(t, admission.StateAdmitting, r.snapshot(t, "replicas").State)
}
