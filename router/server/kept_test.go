package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/manage"
)

// transitionOK sends one transition and decodes its (strict) answer.
func transitionOK(t *testing.T, r *router, body string) manage.Response {
	t.Helper()
	status, out := r.admin(t, body)
	require.Equal(t, http.StatusOK, status, out)
	return decodeResponse(t, out)
}

func fileText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// A temporary config rollback through real reloads keeps a member's quiesce: the reload that
// removes the member keeps its intent (shown as not configured, saved with the rest), and the
// reload that brings it back quiesces it again with its reason. A readmit of the removed member
// clears what is kept, so the next return finds it admitting.
func TestKeptIntentSurvivesAConfigRollback(t *testing.T) {
	ms := startMembers(t, 3)
	path := filepath.Join(t.TempDir(), "intent.json")
	three := replicaYAML(ms, withIntent(tierOpts{}, path))
	two := replicaYAML(ms[:2], withIntent(tierOpts{}, path))
	rig := startReloadRig(t, three, routerOptions{})
	transitionOK(t, rig.router, `{"action":"quiesce","tier":"replicas","member_id":"m02","reason":"upgrade"}`)
	withM02 := fileText(t, path)

	rig.apply(t, two) // the rollback
	st := transitionOK(t, rig.router, `{"action":"status","tier":"replicas","member_id":"m02"}`)
	assert.Equal(t, manage.Scope{State: "quiesced", Reason: "upgrade", NotConfigured: true}, st.Scope)
	assert.Equal(t, []manage.Retained{{MemberID: "m02", Reason: "upgrade"}}, st.Retained)
	assert.Len(t, st.Snapshot.Members, 2, "the snapshot shows the configured members")
	tier := transitionOK(t, rig.router, `{"action":"status","tier":"replicas"}`)
	assert.Equal(t, []manage.Retained{{MemberID: "m02", Reason: "upgrade"}}, tier.Retained, "the tier's status lists it too")
	assert.Equal(t, withM02, fileText(t, path), "the file keeps it")

	transitionOK(t, rig.router, `{"action":"quiesce","tier":"replicas","member_id":"m00","reason":"swap"}`)
	assert.JSONEq(t, `{"tiers":{},"members":{"replicas":{"m00":"swap","m02":"upgrade"}}}`, fileText(t, path),
		"the next save keeps the entry of the member no longer configured")
	transitionOK(t, rig.router, `{"action":"readmit","tier":"replicas","member_id":"m00"}`)

	rig.apply(t, three) // the roll forward
	snap := rig.snapshot(t, "replicas")
	require.Len(t, snap.Members, 3)
	assert.Equal(t, "quiesced", snap.Members[2].State, "the returning member is quiesced again")
	assert.Equal(t, "upgrade", snap.Members[2].Reason)
	st = transitionOK(t, rig.router, `{"action":"status","tier":"replicas","member_id":"m02"}`)
	assert.Equal(t, manage.Scope{State: "quiesced", Reason: "upgrade"}, st.Scope)
	assert.Empty(t, st.Retained, "nothing is kept once the member is configured")
	assert.JSONEq(t, `{"tiers":{},"members":{"replicas":{"m02":"upgrade"}}}`, fileText(t, path))

	rig.apply(t, two)
	dry := transitionOK(t, rig.router, `{"action":"readmit","tier":"replicas","member_id":"m02","dry_run":true}`)
	assert.Equal(t, manage.ResultWouldChange, dry.Result)
	assert.Equal(t, withM02, fileText(t, path), "a dry run clears nothing")
	cleared := transitionOK(t, rig.router, `{"action":"readmit","tier":"replicas","member_id":"m02"}`)
	assert.Equal(t, manage.ResultChanged, cleared.Result)
	assert.Equal(t, manage.Scope{State: manage.StateNotConfigured, NotConfigured: true}, cleared.Scope)
	assert.Empty(t, cleared.Retained)
	assert.JSONEq(t, `{"tiers":{}}`, fileText(t, path), "the readmit cleared the kept entry")
	status, body := rig.admin(t, `{"action":"status","tier":"replicas","member_id":"m02"}`)
	assert.Equal(t, http.StatusNotFound, status, body)
	assert.Contains(t, body, "unknown_member", "nothing kept: the member is unknown again")

	rig.apply(t, three)
	snap = rig.snapshot(t, "replicas")
	require.Len(t, snap.Members, 3)
	assert.Equal(t, "admitting", snap.Members[2].State, "a cleared entry is not applied")
}

// Entries of the file for scopes the configuration does not have survive the next save, are shown
// as not configured (a whole tier too) and are cleared by a readmit of their scope. Quiesce and
// drain still need a configured scope.
func TestStartKeepsEntriesForScopesNotConfigured(t *testing.T) {
	ms := startMembers(t, 2)
	path := filepath.Join(t.TempDir(), "intent.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"tiers":{"gone":"maintenance"},"members":{"gone":{"g1":"swap"},"replicas":{"m05":"upgrade"}}}`), 0o600))
	r := startRouter(t, replicaYAML(ms, withIntent(tierOpts{}, path)))

	transitionOK(t, r, `{"action":"quiesce","tier":"replicas","member_id":"m00","reason":"swap"}`)
	assert.JSONEq(t, `{"tiers":{"gone":"maintenance"},"members":{"gone":{"g1":"swap"},"replicas":{"m00":"swap","m05":"upgrade"}}}`,
		fileText(t, path), "a save keeps the entries of scopes not configured")

	gone := transitionOK(t, r, `{"action":"status","tier":"gone"}`)
	assert.Equal(t, manage.Scope{State: "quiesced", Reason: "maintenance", NotConfigured: true}, gone.Scope)
	assert.Equal(t, manage.Tier{ID: "gone", Kind: manage.KindNotConfigured, State: manage.StateNotConfigured}, gone.Snapshot)
	assert.Equal(t, []manage.Retained{{Reason: "maintenance"}, {MemberID: "g1", Reason: "swap"}}, gone.Retained)

	for _, body := range []string{
		`{"action":"quiesce","tier":"gone","reason":"x"}`,
		`{"action":"drain","tier":"gone"}`,
		`{"action":"quiesce","tier":"replicas","member_id":"m05","reason":"x"}`,
	} {
		status, out := r.admin(t, body)
		assert.Equal(t, http.StatusNotFound, status, out)
	}

	cleared := transitionOK(t, r, `{"action":"readmit","tier":"gone"}`)
	assert.Equal(t, manage.ResultChanged, cleared.Result)
	assert.Equal(t, []manage.Retained{{MemberID: "g1", Reason: "swap"}}, cleared.Retained, "tier readmission clears the tier's own entry only")
	again := transitionOK(t, r, `{"action":"readmit","tier":"gone"}`)
	assert.Equal(t, manage.ResultUnchanged, again.Result)
	transitionOK(t, r, `{"action":"readmit","tier":"gone","member_id":"g1"}`)
	status, out := r.admin(t, `{"action":"status","tier":"gone"}`)
	assert.Equal(t, http.StatusNotFound, status, out)
	assert.JSONEq(t, `{"tiers":{},"members":{"replicas":{"m00":"swap","m05":"upgrade"}}}`, fileText(t, path))
}
