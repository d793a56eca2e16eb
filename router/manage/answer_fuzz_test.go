package manage_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/ident"
	"github.com/anvil-llm/anvil/router/manage"
)

// answering is a Doer that answers every request 200 with one body.
type answering string

func (a answering) Do(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader(string(a)))}, nil
}

// The client accepts the answers about kept intent the router gives, and refuses a not-configured
// snapshot with a state or members, or a kept entry outside the grammar.
func TestClientReadsKeptIntentAnswers(t *testing.T) {
	for i, seed := range answerSeeds {
		c, err := manage.NewClient(answering(seed), "http://127.0.0.1:1", "admin-token-0123456789")
		require.NoError(t, err)
		_, err = c.Transition(context.Background(), manage.Request{Action: manage.ActionStatus, Tier: "replicas"})
		if i < 2 {
			assert.NoError(t, err, seed)
		} else {
			assert.Error(t, err, seed)
		}
	}
}

var answerSeeds = []string{
	`{"action":"status","tier":"replicas","dry_run":false,"result":"status","scope":{"state":"admitting","active_requests":0,"draining":false},"snapshot":{"id":"replicas","kind":"replica","state":"admitting","draining":false,"active_requests":0,"max_concurrency":0,"released":0,"release_misuse":0},"retained":[{"member_id":"m05","reason":"upgrade"}]}`,
	`{"action":"status","tier":"replicas","dry_run":false,"result":"status","scope":{"state":"quiesced","reason":"maintenance","active_requests":0,"draining":false,"not_configured":true},"snapshot":{"id":"replicas","kind":"not_configured","state":"not_configured","draining":false,"active_requests":0,"max_concurrency":0,"released":0,"release_misuse":0},"retained":[{"reason":"maintenance"}]}`,
	`{"action":"status","tier":"replicas","dry_run":false,"result":"status","scope":{"state":"not_configured","reason":"x\n"},"snapshot":{"id":"replicas","kind":"not_configured","state":"quiesced"},"retained":[{"member_id":"../x","reason":"a"}]}`,
	`{"action":"status","tier":"replicas","dry_run":false,"result":"status","scope":{"state":"admitting","active_requests":0,"draining":false},"snapshot":{"id":"replicas","kind":"not_configured","state":"admitting","draining":false,"active_requests":0,"max_concurrency":0,"released":0,"release_misuse":0}}`,
	`{"action":"status","tier":"replicas","dry_run":false,"result":"status","scope":{"state":"admitting","active_requests":0,"draining":false},"snapshot":{"id":"replicas","kind":"replica","state":"admitting","draining":false,"active_requests":0,"max_concurrency":0,"released":0,"release_misuse":0},"retained":[{"member_id":"m05","reason":"Upgrade!"}]}`,
	`{}`,
}

// FuzzTransitionAnswer: whatever a router answers, the client never panics, and an answer it
// accepts holds only grammar-valid IDs, states and reasons (kept intent included), so the CLI never
// prints arbitrary text.
func FuzzTransitionAnswer(f *testing.F) {
	for _, seed := range answerSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		c, err := manage.NewClient(answering(body), "http://127.0.0.1:1", "admin-token-0123456789")
		require.NoError(t, err)
		resp, err := c.Transition(context.Background(), manage.Request{Action: manage.ActionStatus, Tier: "replicas"})
		if err != nil {
			return
		}
		assert.True(t, ident.ValidID(resp.Snapshot.ID))
		for _, k := range resp.Retained {
			assert.True(t, ident.ValidReason(k.Reason))
			assert.True(t, k.MemberID == "" || ident.ValidID(k.MemberID))
		}
		assert.True(t, resp.Scope.Reason == "" || ident.ValidReason(resp.Scope.Reason))
		if resp.Snapshot.Kind == manage.KindNotConfigured {
			assert.Equal(t, manage.StateNotConfigured, resp.Snapshot.State)
		}
	})
}

// FuzzConfigAnswer: whatever GET /admin/v1/config answers, Config returns either a bad reply or a
// status whose kept tiers are valid tier IDs in strictly ascending order (StatusAll addresses them).
func FuzzConfigAnswer(f *testing.F) {
	for _, seed := range []string{
		`{"digest":"","source":"","loaded_at":"2026-01-01T00:00:00Z","generation":1,"last_reload":null}`,
		`{"digest":"","source":"","loaded_at":"2026-01-01T00:00:00Z","generation":2,"last_reload":null,"kept_tiers":["gone","solo"]}`,
		`{"digest":"","source":"","loaded_at":"2026-01-01T00:00:00Z","generation":2,"last_reload":null,"kept_tiers":["solo","gone"]}`,
		`{"digest":"","source":"","loaded_at":"2026-01-01T00:00:00Z","generation":2,"last_reload":null,"kept_tiers":null}`,
		`{"digest":"","source":"","loaded_at":"2026-01-01T00:00:00Z","generation":2,"last_reload":null,"kept_tiers":["1.2.3.4"]}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		c, err := manage.NewClient(answering(body), "http://127.0.0.1:1", "admin-token-0123456789")
		require.NoError(t, err)
		st, err := c.Config(context.Background())
		if err != nil {
			return
		}
		assert.LessOrEqual(t, len(st.KeptTiers), ident.MaxKeptIntent)
		for i, id := range st.KeptTiers {
			assert.True(t, ident.ValidID(id), id)
			if i > 0 {
				assert.Less(t, st.KeptTiers[i-1], id)
			}
		}
	})
}
