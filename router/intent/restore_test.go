package intent_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/intent"
)

func set(t *testing.T) *admission.Set {
	t.Helper()
	s, err := admission.New([]admission.TierSpec{
		{ID: "pool", Kind: admission.KindReplica, Members: []admission.MemberSpec{{ID: "m00"}, {ID: "m01"}}},
		{ID: "solo", Kind: admission.KindDirect},
	})
	require.NoError(t, err)
	return s
}

func TestRestoreAppliesConfiguredScopesAndReportsTheRest(t *testing.T) {
	s := set(t)
	doc := intent.Document{
		Tiers: map[string]string{"solo": "maintenance", "gone": "x"},
		Members: map[string]map[string]string{
			"pool": {"m01": "promotion", "m09": "upgrade"},
			"solo": {"m00": "y"},
			"gone": {"m00": "z"},
		},
	}
	got, err := intent.Restore(s, doc)
	require.NoError(t, err)
	assert.Equal(t, 1, got.Tiers)
	assert.Equal(t, 1, got.Members)
	assert.Equal(t, []intent.Ignored{
		{Tier: "gone", Reason: "x", Why: intent.IgnoredUnknownTier},
		{Tier: "gone", Member: "m00", Reason: "z", Why: intent.IgnoredUnknownTier},
		{Tier: "pool", Member: "m09", Reason: "upgrade", Why: intent.IgnoredUnknownMember},
		{Tier: "solo", Member: "m00", Reason: "y", Why: intent.IgnoredNotReplica},
	}, got.Ignored)

	pool, _ := s.Tier("pool")
	snap := pool.Snapshot()
	assert.Equal(t, admission.StateAdmitting, snap.State, "member intent never quiesces the tier")
	assert.Equal(t, admission.StateAdmitting, snap.Members[0].State)
	assert.Equal(t, admission.StateQuiesced, snap.Members[1].State)
	assert.Equal(t, "promotion", snap.Members[1].Reason, "every retained reason is restored, promotion included")
	solo, _ := s.Tier("solo")
	assert.Equal(t, "maintenance", solo.Snapshot().Reason)

	// Saving what admission holds drops the ignored entries and keeps tier and member intent apart.
	assert.Equal(t, intent.Document{Tiers: map[string]string{"solo": "maintenance"},
		Members: map[string]map[string]string{"pool": {"m01": "promotion"}}}, intent.FromSnapshots(s.Snapshots()))
}

func TestFromSnapshotsWithoutMembersIsTierOnly(t *testing.T) {
	s := set(t)
	pool, _ := s.Tier("pool")
	require.NoError(t, pool.Quiesce("maintenance"))
	doc := intent.FromSnapshots(s.Snapshots())
	assert.Nil(t, doc.Members)
	assert.Equal(t, "{\n  \"tiers\": {\n    \"pool\": \"maintenance\"\n  }\n}\n", string(intent.Encode(doc)))
}
