package server_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/config/load"
	"github.com/anvil-llm/anvil/router/intent"
	"github.com/anvil-llm/anvil/router/manage"
	"github.com/anvil-llm/anvil/router/server"
)

// withDirect appends a direct tier "solo" (pointing at member 0's server) to a replica config.
func withDirect(yaml string, m *member) string {
	return yaml + fmt.Sprintf("  - id: solo\n    kind: direct\n    served_model: %s\n    endpoint: %s\n    gates:\n      max_context_tokens: 4096\n", servedModel, m.URL())
}

// withIntent sets intent_file at the top level of a replica config.
func withIntent(o tierOpts, path string) tierOpts {
	o.extra += "intent_file: " + path + "\n"
	return o
}

func (r *router) snapshots() []admission.Snapshot { return r.srv.Admission().Snapshots() }

func decodeResponse(t *testing.T, body string) manage.Response {
	t.Helper()
	var resp manage.Response
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&resp), body)
	return resp
}

// Every refusal of the grammar or of live state answers its fixed code and changes nothing: the
// admission snapshots of every tier and the intent file are the same before and after.
func TestTransitionRefusalsChangeNothing(t *testing.T) {
	ms := startMembers(t, 3)
	path := filepath.Join(t.TempDir(), "intent.json")
	r := startRouter(t, withDirect(replicaYAML(ms[:2], withIntent(tierOpts{strategy: "capacity", memberCeiling: 2}, path)), ms[2]))
	status, body := r.admin(t, `{"action":"quiesce","tier":"replicas","member_id":"m01","reason":"upgrade"}`)
	require.Equal(t, http.StatusOK, status, body)
	fileBefore, err := os.ReadFile(path)
	require.NoError(t, err)

	cases := []struct {
		name, body string
		status     int
		code       string
	}{
		{"not json", `{`, 400, "invalid_transition"},
		{"a list", `[]`, 400, "invalid_transition"},
		{"empty body", ``, 400, "invalid_transition"},
		{"trailing data", `{"action":"quiesce","tier":"replicas"} {"action":"readmit"}`, 400, "trailing_data"},
		{"trailing garbage", `{"action":"quiesce","tier":"replicas"}x`, 400, "trailing_data"},
		{"unknown key", `{"action":"quiesce","tier":"replicas","x":1}`, 400, "unknown_key"},
		{"the old member key", `{"action":"quiesce","tier":"replicas","member":"m00"}`, 400, "unknown_key"},
		{"duplicate member_id", `{"action":"readmit","tier":"replicas","member_id":"m00","member_id":"m01"}`, 400, "duplicate_key"},
		{"duplicate action", `{"action":"status","tier":"replicas","action":"quiesce"}`, 400, "duplicate_key"},
		{"null member_id", `{"action":"readmit","tier":"replicas","member_id":null}`, 400, "null_value"},
		{"empty member_id", `{"action":"quiesce","tier":"replicas","member_id":""}`, 400, "invalid_member_id"},
		{"unsafe member_id", `{"action":"quiesce","tier":"replicas","member_id":"../m00"}`, 400, "invalid_member_id"},
		{"address member_id", `{"action":"quiesce","tier":"replicas","member_id":"10.0.0.5"}`, 400, "invalid_member_id"},
		{"member_id number", `{"action":"quiesce","tier":"replicas","member_id":0}`, 400, "wrong_type"},
		{"dry_run string", `{"action":"quiesce","tier":"replicas","dry_run":"false"}`, 400, "wrong_type"},
		{"tier object", `{"action":"quiesce","tier":{"id":"replicas"}}`, 400, "wrong_type"},
		{"missing tier", `{"action":"quiesce"}`, 400, "missing_field"},
		{"missing action", `{"tier":"replicas"}`, 400, "missing_field"},
		{"bad action", `{"action":"explode","tier":"replicas"}`, 400, "invalid_action"},
		{"bad tier", `{"action":"quiesce","tier":"Replicas!"}`, 400, "invalid_tier"},
		{"unknown tier", `{"action":"quiesce","tier":"nope"}`, 404, "unknown_tier"},
		{"unknown member", `{"action":"quiesce","tier":"replicas","member_id":"zz"}`, 404, "unknown_member"},
		{"member on a direct tier", `{"action":"quiesce","tier":"solo","member_id":"m00"}`, 400, "wrong_tier_kind"},
		{"bad reason", `{"action":"quiesce","tier":"replicas","reason":"Bad Reason!"}`, 400, "invalid_reason"},
		{"empty reason", `{"action":"quiesce","tier":"replicas","reason":""}`, 400, "invalid_reason"},
		{"wait on quiesce", `{"action":"quiesce","tier":"replicas","wait_seconds":5}`, 400, "wait_not_drain"},
		{"wait zero", `{"action":"drain","tier":"replicas","wait_seconds":0}`, 400, "invalid_wait"},
		{"wait too long", `{"action":"drain","tier":"replicas","wait_seconds":3601}`, 400, "invalid_wait"},
		{"wait fraction", `{"action":"drain","tier":"replicas","wait_seconds":1.5}`, 400, "invalid_wait"},
		{"drain needs quiesce", `{"action":"drain","tier":"replicas"}`, 409, "not_quiesced"},
		{"member drain needs member quiesce", `{"action":"drain","tier":"replicas","member_id":"m00"}`, 409, "not_quiesced"},
		{"too large", `{"action":"quiesce","tier":"replicas","reason":"` + strings.Repeat("a", manage.MaxBodyBytes) + `"}`, 413, "transition_body_too_large"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := r.snapshots()
			status, body := r.admin(t, c.body)
			assert.Equal(t, c.status, status, body)
			assert.Contains(t, body, `"code":"`+c.code+`"`)
			assert.NotContains(t, body, "10.0.0.5", "a refusal never echoes the body")
			assert.NotContains(t, body, "Bad Reason")
			assert.Equal(t, before, r.snapshots(), "a refusal changes nothing")
			fileAfter, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, string(fileBefore), string(fileAfter), "nor the intent file")
		})
	}
}

// A dry run validates against live state and reports what would change, changing nothing.
func TestDryRunChangesNothing(t *testing.T) {
	ms := startMembers(t, 2)
	path := filepath.Join(t.TempDir(), "intent.json")
	r := startRouter(t, replicaYAML(ms, withIntent(tierOpts{strategy: "capacity", memberCeiling: 2}, path)))
	cases := []struct {
		body, result, state, reason string
	}{
		{`{"action":"quiesce","tier":"replicas","member_id":"m00","reason":"upgrade","dry_run":true}`, "would_change", "quiesced", "upgrade"},
		{`{"action":"quiesce","tier":"replicas","dry_run":true}`, "would_change", "quiesced", "operator"},
		{`{"action":"readmit","tier":"replicas","dry_run":true}`, "unchanged", "admitting", ""},
		{`{"action":"readmit","tier":"replicas","member_id":"m01","dry_run":true}`, "unchanged", "admitting", ""},
		{`{"action":"status","tier":"replicas","member_id":"m01","dry_run":true}`, "status", "admitting", ""},
	}
	for _, c := range cases {
		before := r.snapshots()
		status, body := r.admin(t, c.body)
		require.Equal(t, http.StatusOK, status, body)
		resp := decodeResponse(t, body)
		assert.True(t, resp.DryRun)
		assert.Equal(t, c.result, resp.Result, c.body)
		assert.Equal(t, c.state, resp.Scope.State, c.body)
		assert.Equal(t, c.reason, resp.Scope.Reason, c.body)
		assert.Equal(t, before, r.snapshots(), "a dry run changes nothing: %s", c.body)
	}
	_, err := os.Stat(path)
	assert.ErrorIs(t, err, os.ErrNotExist, "a dry run writes no intent")

	status, body := r.admin(t, `{"action":"drain","tier":"replicas","dry_run":true}`)
	assert.Equal(t, http.StatusConflict, status, "a dry run is refused as the real request would be")
	assert.Contains(t, body, `"code":"not_quiesced"`)
}

func TestAdminNeedsTheAdminToken(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{}))
	for path, method := range map[string]string{"/admin/v1/admission": http.MethodGet, "/admin/v1/transition": http.MethodPost} {
		for _, tok := range []string{"", callerToken, "wrong"} {
			req, _ := http.NewRequest(method, r.http.URL+path, strings.NewReader(`{"action":"quiesce","tier":"replicas"}`))
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
	assert.Equal(t, admission.StateAdmitting, r.snapshot(t, "replicas").State)
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

	status, body := r.admin(t, `{"action":"quiesce","tier":"replicas","member_id":"`+busyID+`","reason":"upgrade"}`)
	require.Equal(t, http.StatusOK, status, body)
	q := decodeResponse(t, body)
	assert.Equal(t, "changed", q.Result)
	assert.Equal(t, manage.Scope{State: "quiesced", Reason: "upgrade", Active: 1, Draining: true}, q.Scope)
	assert.Equal(t, "admitting", q.Snapshot.State, "a member quiesce leaves the tier admitting")

	status, body = r.admin(t, `{"action":"drain","tier":"replicas","member_id":"`+busyID+`","dry_run":true}`)
	require.Equal(t, http.StatusOK, status, body)
	assert.Equal(t, "would_wait", decodeResponse(t, body).Result)

	drained := make(chan int, 1)
	go func() {
		drained <- postAdmin(r, `{"action":"drain","tier":"replicas","member_id":"`+busyID+`","wait_seconds":60}`)
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
	status, body = r.admin(t, `{"action":"readmit","tier":"replicas","member_id":"`+busyID+`"}`)
	assert.Equal(t, http.StatusConflict, status, body)
	assert.Contains(t, body, `"code":"member_not_ready"`)
	assert.Equal(t, "quiesced", r.snapshot(t, "replicas").Members[busy].State)
	assertSettled(t, r.snapshot(t, "replicas"))
}

// Tier drain covers every member and waits for an in-flight stream without cutting it; the tier
// and member scopes are readmitted independently in both directions.
func TestTierDrainAndIndependentReadmission(t *testing.T) {
	ms := startMembers(t, 2)
	for _, m := range ms {
		slow(t, m, 1000)
	}
	r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 2}))
	resp := r.post(t, t.Context(), "/v1/chat/completions", chatBody(8, true))
	select {
	case <-ms[0].entered:
	case <-ms[1].entered:
	}
	m01Calls := ms[1].calls.Load()
	for _, body := range []string{
		`{"action":"quiesce","tier":"replicas","member_id":"m01","reason":"upgrade"}`,
		`{"action":"quiesce","tier":"replicas","reason":"maintenance"}`,
	} {
		status, out := r.admin(t, body)
		require.Equal(t, http.StatusOK, status, out)
	}
	code, _, hdr := r.do(t, "/v1/chat/completions", chatBody(2, false))
	assert.Equal(t, http.StatusServiceUnavailable, code, "a quiesced tier admits nothing")
	assert.Equal(t, "1", hdr.Get("Retry-After"))
	r.wait(t, 1)

	// The drain wait passes with the stream still running: 504 with the remaining count, nothing cut.
	status, body := r.admin(t, `{"action":"drain","tier":"replicas","wait_seconds":1}`)
	assert.Equal(t, http.StatusGatewayTimeout, status, body)
	assert.Contains(t, body, `"code":"drain_timeout"`)
	assert.Contains(t, body, `"active_requests":1`)
	assert.EqualValues(t, 1, r.snapshot(t, "replicas").Active)

	drained := make(chan int, 1)
	go func() { drained <- postAdmin(r, `{"action":"drain","tier":"replicas","wait_seconds":60}`) }()
	for _, m := range ms {
		slow(t, m, 1)
	}
	events := readEvents(t, resp.Body)
	resp.Body.Close()
	require.NotEmpty(t, events)
	assert.Equal(t, "[DONE]", events[len(events)-1], "the stream finished normally")
	assert.Equal(t, http.StatusOK, <-drained)
	r.wait(t, 2)

	// Member readmission never readmits the tier.
	status, body = r.admin(t, `{"action":"readmit","tier":"replicas","member_id":"m01"}`)
	require.Equal(t, http.StatusOK, status, body)
	snap := r.snapshot(t, "replicas")
	assert.Equal(t, "quiesced", snap.State)
	assert.Equal(t, "admitting", snap.Members[1].State)
	// Quiesce the member again, then tier readmission leaves it quiesced.
	status, _ = r.admin(t, `{"action":"quiesce","tier":"replicas","member_id":"m01","reason":"upgrade"}`)
	require.Equal(t, http.StatusOK, status)
	status, body = r.admin(t, `{"action":"readmit","tier":"replicas"}`)
	require.Equal(t, http.StatusOK, status, body)
	readmit := decodeResponse(t, body)
	assert.Equal(t, "changed", readmit.Result)
	snap = r.snapshot(t, "replicas")
	assert.Equal(t, "admitting", snap.State)
	assert.Equal(t, "quiesced", snap.Members[1].State)
	assert.Equal(t, "upgrade", snap.Members[1].Reason)

	for range 3 {
		code, out, _ := r.do(t, "/v1/chat/completions", chatBody(2, false))
		require.Equal(t, http.StatusOK, code, out)
	}
	r.wait(t, 3)
	assert.Equal(t, m01Calls, ms[1].calls.Load(), "m01 received nothing after its quiesce")
	assertSettled(t, r.snapshot(t, "replicas"))
}

// Each transition writes one audit line with its validated fields; never the token or a raw body.
func TestTransitionsAreAudited(t *testing.T) {
	ms := startMembers(t, 2)
	logs := &lockedBuffer{}
	r := startRouterWith(t, replicaYAML(ms, tierOpts{}), routerOptions{logger: slog.New(slog.NewJSONHandler(logs, nil))})
	r.admin(t, `{"action":"quiesce","tier":"replicas","member_id":"m00","reason":"upgrade","dry_run":true}`)
	r.admin(t, `{"action":"quiesce","tier":"replicas","member_id":"m00","reason":"upgrade"}`)
	r.admin(t, `{"action":"quiesce","tier":"replicas","member_id":"SECRET-MARKER"}`)
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		if m["msg"] == "transition" {
			lines = append(lines, m)
		}
	}
	require.Len(t, lines, 3, "one line per transition")
	assert.Equal(t, "would_change", lines[0]["result"])
	assert.Equal(t, true, lines[0]["dry_run"])
	assert.Equal(t, "changed", lines[1]["result"])
	assert.Equal(t, "m00", lines[1]["member_id"])
	assert.Equal(t, "upgrade", lines[1]["reason"])
	assert.Equal(t, "refused", lines[2]["result"])
	assert.Equal(t, "invalid_member_id", lines[2]["code"])
	assert.Equal(t, "", lines[2]["member_id"], "unvalidated input never reaches the log")
	assert.NotContains(t, logs.String(), "SECRET-MARKER")
	assert.NotContains(t, logs.String(), adminToken)
}

// Quiesce and readmit persist to intent_file: member readmission removes only its own entry, tier
// readmission leaves member intent, and a server started again from the same file restores it.
func TestIntentPersistsAndRestores(t *testing.T) {
	ms := startMembers(t, 2)
	path := filepath.Join(t.TempDir(), "state", "intent.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	yaml := replicaYAML(ms, withIntent(tierOpts{strategy: "capacity", memberCeiling: 2}, path))
	r := startRouter(t, yaml)
	for _, body := range []string{
		`{"action":"quiesce","tier":"replicas","member_id":"m00","reason":"upgrade"}`,
		`{"action":"quiesce","tier":"replicas","member_id":"m01","reason":"promotion"}`,
		`{"action":"quiesce","tier":"replicas","reason":"maintenance"}`,
		`{"action":"readmit","tier":"replicas"}`,
		`{"action":"readmit","tier":"replicas","member_id":"m01"}`,
	} {
		status, out := r.admin(t, body)
		require.Equal(t, http.StatusOK, status, out)
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "{\n  \"tiers\": {},\n  \"members\": {\n    \"replicas\": {\n      \"m00\": \"upgrade\"\n    }\n  }\n}\n", string(b))

	again := startRouter(t, yaml)
	snap := again.snapshot(t, "replicas")
	assert.Equal(t, "admitting", snap.State, "tier intent was readmitted")
	assert.Equal(t, "quiesced", snap.Members[0].State)
	assert.Equal(t, "upgrade", snap.Members[0].Reason)
	assert.Equal(t, "admitting", snap.Members[1].State, "member readmission removed only its own intent")
	b2, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(b), string(b2), "starting does not rewrite the file")

	status, out := again.admin(t, `{"action":"readmit","tier":"replicas","member_id":"m00"}`)
	require.Equal(t, http.StatusOK, status, out)
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "{\n  \"tiers\": {}\n}\n", string(b), "no member intent: no members key")
}

func TestMalformedIntentRefusesStartup(t *testing.T) {
	ms := startMembers(t, 2)
	for name, content := range map[string]string{
		"malformed":   `{"tiers":{`,
		"duplicate":   `{"members":{"replicas":{"m00":"a","m00":"b"}}}`,
		"wrong type":  `{"members":{"replicas":{"m00":1}}}`,
		"null member": `{"members":{"replicas":null}}`,
		"oversized":   `{"tiers":{}}` + strings.Repeat(" ", 1<<20),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "intent.json")
			require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
			cfg, err := load.Parse([]byte(replicaYAML(ms, withIntent(tierOpts{}, path))), env)
			require.NoError(t, err)
			_, err = server.New(cfg, server.Options{})
			require.Error(t, err)
			assert.ErrorIs(t, err, intent.ErrInvalid)
			assert.Contains(t, err.Error(), "intent file "+path+": invalid intent document")
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, content, string(b), "the refused file is left byte-identical")
		})
	}
}

// failingFS fails every rename once armed, so a save cannot replace the file.
type failingFS struct {
	intent.OS
	armed bool
}

func (f *failingFS) Rename(oldpath, newpath string) error {
	if f.armed {
		return errors.New("injected rename failure")
	}
	return f.OS.Rename(oldpath, newpath)
}

// A save that fails is reported to the transition's caller with a fixed code; the transition stands
// in memory and the previous file is intact.
func TestFailedIntentSaveIsReported(t *testing.T) {
	ms := startMembers(t, 2)
	dir := t.TempDir()
	path := filepath.Join(dir, "intent.json")
	fsys := &failingFS{}
	logs := &lockedBuffer{}
	r := startRouterWith(t, replicaYAML(ms, withIntent(tierOpts{}, path)),
		routerOptions{server: server.Options{IntentFS: fsys, Logger: slog.New(slog.NewJSONHandler(logs, nil))}})
	status, body := r.admin(t, `{"action":"quiesce","tier":"replicas","member_id":"m00","reason":"upgrade"}`)
	require.Equal(t, http.StatusOK, status, body)
	before, err := os.ReadFile(path)
	require.NoError(t, err)

	fsys.armed = true
	status, body = r.admin(t, `{"action":"quiesce","tier":"replicas","member_id":"m01","reason":"upgrade"}`)
	assert.Equal(t, http.StatusInternalServerError, status)
	assert.Contains(t, body, `"code":"intent_not_persisted"`)
	assert.Equal(t, "quiesced", r.snapshot(t, "replicas").Members[1].State, "the transition stands in memory")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "the previous file is intact")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "the failed save removed its temporary file")
	assert.Contains(t, logs.String(), `"msg":"intent not saved"`)
}

// /readyz: a quiesced replica tier is a host under maintenance and answers 503; one quiesced member
// with a ready peer does not.
func TestReadinessFollowsQuiesce(t *testing.T) {
	ms := startMembers(t, 2)
	r := startRouter(t, replicaYAML(ms, tierOpts{}))
	ready := func() (int, string) {
		resp, err := http.Get(r.http.URL + "/readyz")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		r.wait(t, 1)
		return resp.StatusCode, string(b)
	}
	steps := []struct {
		body string
		want int
	}{
		{`{"action":"quiesce","tier":"replicas","member_id":"m00"}`, 200},
		{`{"action":"quiesce","tier":"replicas","member_id":"m01"}`, 503},
		{`{"action":"readmit","tier":"replicas","member_id":"m01"}`, 200},
		{`{"action":"quiesce","tier":"replicas"}`, 503},
		{`{"action":"readmit","tier":"replicas"}`, 200},
	}
	for _, s := range steps {
		status, out := r.admin(t, s.body)
		require.Equal(t, http.StatusOK, status, out)
		code, body := ready()
		assert.Equal(t, s.want, code, "after %s: %s", s.body, body)
	}
	_, body := ready()
	assert.Contains(t, body, `"state":"admitting","ready":2,"admitting":1`)
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
