package mcp_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/internal/routerrig"
	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/manage"
	"github.com/anvil-llm/anvil/router/mcp"
	"github.com/anvil-llm/anvil/router/server"
)

// The pinned catalog digests (T009.1): the member-aware catalog, and the member-unaware catalog it
// grew from, rebuilt by removing exactly the member delta. Any other change to names, schemas or
// descriptions changes both and fails here.
const (
	catalogDigest         = "0b4dd2b74770f28ea2e5e0d708db0f0250eeb5c2ce7c4b038b71ff367259a065"
	previousCatalogDigest = "cc8bc1497dc133cc6b2fe1f34f9776e692b6c66261603d8a5c959c2f7a3071bf"
)

const adminToken = routerrig.AdminToken

// counting is a Doer that counts what reaches the transport.
type counting struct{ calls atomic.Int64 }

func (c *counting) Do(r *http.Request) (*http.Response, error) {
	c.calls.Add(1)
	return http.DefaultClient.Do(r)
}

type fixture struct {
	srv     *server.Server
	doer    *counting
	session *sdk.ClientSession
}

// start runs a real ephemeral router over real fake-vLLM members (replica tier "replicas" with m00
// and m01, direct tier "solo"), the MCP server over a manage client to it, and an SDK client
// connected to that server over an in-memory transport.
func start(t *testing.T) *fixture {
	t.Helper()
	srv, url := routerrig.Start(t, nil)

	f := &fixture{srv: srv, doer: &counting{}}
	client, err := manage.NewClient(f.doer, url, adminToken)
	require.NoError(t, err)
	serverSide, clientSide := sdk.NewInMemoryTransports()
	ss, err := mcp.NewServer(client, "test").Connect(t.Context(), serverSide, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	f.session, err = sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, nil).Connect(t.Context(), clientSide, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.session.Close() })
	return f
}

func (f *fixture) snapshots() []admission.Snapshot { return f.srv.Admission().Snapshots() }

func (f *fixture) call(t *testing.T, args any) *sdk.CallToolResult {
	t.Helper()
	res, err := f.session.CallTool(t.Context(), &sdk.CallToolParams{Name: mcp.ToolName, Arguments: args})
	require.NoError(t, err)
	return res
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// canonical is the catalog as a client lists it, in canonical JSON (sorted keys, no spaces): each
// tool's name, description and input schema.
func canonical(t *testing.T, catalog []map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"tools": catalog})
	require.NoError(t, err)
	return b
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// listed fetches the catalog over the protocol and reduces it to the digested fields, through a
// JSON round trip so every value is a plain map, slice, string, number or bool.
func listed(t *testing.T, f *fixture) []map[string]any {
	t.Helper()
	res, err := f.session.ListTools(t.Context(), &sdk.ListToolsParams{})
	require.NoError(t, err)
	var out []map[string]any
	for _, tool := range res.Tools {
		b, err := json.Marshal(map[string]any{"name": tool.Name, "description": tool.Description, "inputSchema": tool.InputSchema})
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		out = append(out, m)
	}
	return out
}

func TestCatalogIsPinned(t *testing.T) {
	f := start(t)
	catalog := listed(t, f)
	require.Len(t, catalog, 1)
	current := canonical(t, catalog)
	assert.Equal(t, catalogDigest, digest(current), "catalog changed: %s", current)

	tool := catalog[0]
	schema := tool["inputSchema"].(map[string]any)
	props := schema["properties"].(map[string]any)
	assert.Equal(t, map[string]any{"type": "string", "pattern": "^[a-z0-9][a-z0-9._-]*$", "minLength": 1.0, "maxLength": 64.0,
		"description": "member ID of a declared member of a replica tier (ASCII, at most 64 characters); omit it to address the whole tier"},
		props["member_id"], "the member property: optional, bounded, safe")
	assert.Equal(t, []any{"action", "tier"}, schema["required"], "member_id is not required")
	assert.Equal(t, false, schema["additionalProperties"])
	assert.Equal(t, float64(len(props)), schema["maxProperties"])

	// The previous catalog: remove exactly the member delta from a deep copy.
	var prev []map[string]any
	require.NoError(t, json.Unmarshal(current, &struct {
		Tools *[]map[string]any `json:"tools"`
	}{&prev}))
	ps := prev[0]["inputSchema"].(map[string]any)
	delete(ps["properties"].(map[string]any), "member_id")
	ps["maxProperties"] = ps["maxProperties"].(float64) - 1
	desc := prev[0]["description"].(string)
	require.Equal(t, 1, strings.Count(desc, mcp.MemberWording))
	prev[0]["description"] = strings.Replace(desc, mcp.MemberWording, "", 1)
	assert.Equal(t, previousCatalogDigest, digest(canonical(t, prev)), "previous catalog: %s", canonical(t, prev))
}

func TestToolSpeaksTheProtocolAgainstARealRouter(t *testing.T) {
	f := start(t)
	steps := []struct {
		args          map[string]any
		result, state string
	}{
		{map[string]any{"action": "status", "tier": "replicas"}, "status", "admitting"},
		{map[string]any{"action": "status", "tier": "replicas", "member_id": "m01"}, "status", "admitting"},
		{map[string]any{"action": "quiesce", "tier": "replicas", "member_id": "m01", "dry_run": true}, "would_change", "quiesced"},
		{map[string]any{"action": "quiesce", "tier": "replicas", "member_id": "m01", "reason": "upgrade"}, "changed", "quiesced"},
		{map[string]any{"action": "drain", "tier": "replicas", "member_id": "m01", "wait_seconds": 5}, "drained", "quiesced"},
		{map[string]any{"action": "quiesce", "tier": "replicas"}, "changed", "quiesced"},
		{map[string]any{"action": "drain", "tier": "replicas"}, "drained", "quiesced"},
		{map[string]any{"action": "readmit", "tier": "replicas"}, "changed", "admitting"},
		{map[string]any{"action": "readmit", "tier": "replicas", "member_id": "m01"}, "changed", "admitting"},
	}
	for _, s := range steps {
		res := f.call(t, s.args)
		require.False(t, res.IsError, "%v: %s", s.args, text(res))
		var resp manage.Response
		require.NoError(t, json.Unmarshal([]byte(text(res)), &resp))
		assert.Equal(t, s.result, resp.Result, "%v", s.args)
		assert.Equal(t, s.state, resp.Scope.State, "%v", s.args)
		sc, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		assert.JSONEq(t, text(res), string(sc), "structured content and text agree")
		assert.NotContains(t, text(res), "127.0.0.1")
		assert.NotContains(t, text(res), adminToken)
	}
	snap := f.snapshots()
	assert.Equal(t, "admitting", snap[0].Members[1].State)
}

// Arguments outside the schema are refused by the endpoint's own grammar before transport, and the
// router's refusals come back as tool errors with their fixed code; nothing changes.
func TestToolRefusals(t *testing.T) {
	f := start(t)
	before := f.snapshots()
	for _, args := range []any{
		map[string]any{"action": "quiesce"},
		map[string]any{"tier": "replicas"},
		map[string]any{"action": "quiesce", "tier": "replicas", "member_id": ""},
		map[string]any{"action": "quiesce", "tier": "replicas", "member_id": nil},
		map[string]any{"action": "quiesce", "tier": "replicas", "member_id": "../m00"},
		map[string]any{"action": "quiesce", "tier": "replicas", "member_id": "10.0.0.5"},
		map[string]any{"action": "quiesce", "tier": "replicas", "member": "m00"},
		map[string]any{"action": "quiesce", "tier": "replicas", "reason": "Not A Code"},
		map[string]any{"action": "quiesce", "tier": "replicas", "dry_run": "yes"},
		map[string]any{"action": "quiesce", "tier": "replicas", "wait_seconds": 5},
		nil,
	} {
		res := f.call(t, args)
		assert.True(t, res.IsError, "%v", args)
		assert.True(t, strings.HasPrefix(text(res), "refused: "), text(res))
	}
	assert.Zero(t, f.doer.calls.Load(), "nothing outside the grammar reaches the router")

	for _, c := range []struct {
		args map[string]any
		code string
	}{
		{map[string]any{"action": "quiesce", "tier": "replicas", "member_id": "m09"}, "[unknown_member]"},
		{map[string]any{"action": "quiesce", "tier": "solo", "member_id": "m00"}, "[wrong_tier_kind]"},
		{map[string]any{"action": "drain", "tier": "replicas"}, "[not_quiesced]"},
		{map[string]any{"action": "status", "tier": "nope"}, "[unknown_tier]"},
	} {
		res := f.call(t, c.args)
		assert.True(t, res.IsError)
		assert.Contains(t, text(res), c.code)
	}
	assert.Equal(t, before, f.snapshots())

	res, err := f.session.CallTool(t.Context(), &sdk.CallToolParams{Name: "other_tool", Arguments: map[string]any{}})
	if err == nil {
		assert.True(t, res.IsError, "no other tool exists")
	}
}
