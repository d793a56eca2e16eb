package intent_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/intent"
)

// Kept holds at most MaxKept entries: a new one past the bound is dropped and reported, the kept
// ones stay, a reason of one already kept is replaced without counting twice, and a cleared entry
// frees its place.
func TestKeptIsBounded(t *testing.T) {
	k := intent.NewKept()
	var entries []intent.Ignored
	for i := range intent.MaxKept + 3 {
		entries = append(entries, intent.Ignored{Tier: "gone", Member: fmt.Sprintf("m%03d", i), Reason: "upgrade"})
	}
	dropped := k.Keep(entries)
	assert.Equal(t, entries[intent.MaxKept:], dropped)
	assert.Len(t, k.Document().Members["gone"], intent.MaxKept)
	assert.Empty(t, k.Keep([]intent.Ignored{{Tier: "gone", Member: "m000", Reason: "swap"}}), "replacing a reason takes no place")
	r, ok := k.Reason("gone", "m000")
	require.True(t, ok)
	assert.Equal(t, "swap", r)
	assert.Len(t, k.Keep([]intent.Ignored{{Tier: "other", Reason: "x"}}), 1, "full")
	assert.True(t, k.Clear("gone", "m001"))
	assert.False(t, k.Clear("gone", "m001"), "cleared once")
	assert.Empty(t, k.Keep([]intent.Ignored{{Tier: "other", Reason: "x"}}), "a cleared entry frees its place")
}

// Reapply quiesces the kept scopes a set configures and keeps the rest; Merge adds kept entries
// to the live document without overriding it.
func TestKeptReapplyAndMerge(t *testing.T) {
	set, err := admission.New([]admission.TierSpec{
		{ID: "replicas", Kind: admission.KindReplica, Members: []admission.MemberSpec{{ID: "m00"}, {ID: "m01"}}},
	})
	require.NoError(t, err)
	k := intent.NewKept()
	k.Keep([]intent.Ignored{{Tier: "replicas", Member: "m01", Reason: "upgrade"}, {Tier: "gone", Reason: "maintenance"}})
	restored, err := k.Reapply(set)
	require.NoError(t, err)
	assert.Equal(t, 1, restored.Members)
	tier, _ := set.Tier("replicas")
	assert.Equal(t, admission.StateQuiesced, tier.Snapshot().Members[1].State)
	assert.Equal(t, intent.Document{Tiers: map[string]string{"gone": "maintenance"}}, k.Document())

	live := intent.Document{Tiers: map[string]string{"gone": "live-wins"}, Members: map[string]map[string]string{"replicas": {"m00": "a"}}}
	kept := intent.Document{Tiers: map[string]string{"gone": "kept", "old": "b"}, Members: map[string]map[string]string{"replicas": {"m00": "kept", "m09": "c"}}}
	assert.Equal(t, intent.Document{Tiers: map[string]string{"gone": "live-wins", "old": "b"},
		Members: map[string]map[string]string{"replicas": {"m00": "a", "m09": "c"}}}, intent.Merge(live, kept))
}
