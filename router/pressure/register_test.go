package pressure_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/pressure"
)

// tier builds a capacity tier whose members have capacity 4 and distinct endpoints.
func tier(id string, members ...string) pressure.TierSpec {
	t := pressure.TierSpec{ID: id, ServedModel: llama}
	for i, m := range members {
		t.Members = append(t.Members, pressure.MemberSpec{
			ID: m, Endpoint: fmt.Sprintf("http://10.0.0.%d:8000", i+1), Capacity: 4,
		})
	}
	return t
}

// memberIDs returns n IDs m00, m01, ...
func memberIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("m%02d", i)
	}
	return ids
}

func TestNewCoreValidation(t *testing.T) {
	mutate := func(f func(*pressure.TierSpec)) []pressure.TierSpec {
		ts := tier("chat", "a", "b")
		f(&ts)
		return []pressure.TierSpec{ts}
	}
	full := func(tiers, members int) []pressure.TierSpec {
		var out []pressure.TierSpec
		for i := range tiers {
			out = append(out, tier(fmt.Sprintf("t%02d", i), memberIDs(members)...))
		}
		return out
	}
	tests := []struct {
		name  string
		tiers []pressure.TierSpec
		err   error
	}{
		{"bad tier id", mutate(func(t *pressure.TierSpec) { t.ID = "Chat" }), pressure.ErrInvalidID},
		{"empty tier id", mutate(func(t *pressure.TierSpec) { t.ID = "" }), pressure.ErrInvalidID},
		{"bad member id", mutate(func(t *pressure.TierSpec) { t.Members[1].ID = "b/c" }), pressure.ErrInvalidID},
		{"long member id", mutate(func(t *pressure.TierSpec) { t.Members[1].ID = strings.Repeat("b", 65) }), pressure.ErrInvalidID},
		{"one member", mutate(func(t *pressure.TierSpec) { t.Members = t.Members[:1] }), pressure.ErrMemberCount},
		{"seventeen members", []pressure.TierSpec{tier("chat", memberIDs(17)...)}, pressure.ErrMemberCount},
		{"duplicate member", mutate(func(t *pressure.TierSpec) { t.Members[1].ID = "a" }), pressure.ErrDuplicateMember},
		{"duplicate tier", []pressure.TierSpec{tier("chat", "a", "b"), tier("chat", "c", "d")}, pressure.ErrDuplicateTier},
		{"zero capacity", mutate(func(t *pressure.TierSpec) { t.Members[0].Capacity = 0 }), pressure.ErrCapacity},
		{"negative capacity", mutate(func(t *pressure.TierSpec) { t.Members[0].Capacity = -1 }), pressure.ErrCapacity},
		{"capacity too large", mutate(func(t *pressure.TierSpec) { t.Members[0].Capacity = 100_001 }), pressure.ErrCapacity},
		{"empty endpoint", mutate(func(t *pressure.TierSpec) { t.Members[0].Endpoint = "" }), pressure.ErrEndpoint},
		{"relative endpoint", mutate(func(t *pressure.TierSpec) { t.Members[0].Endpoint = "10.0.0.1:8000" }), pressure.ErrEndpoint},
		{"ftp endpoint", mutate(func(t *pressure.TierSpec) { t.Members[0].Endpoint = "ftp://10.0.0.1" }), pressure.ErrEndpoint},
		{"userinfo endpoint", mutate(func(t *pressure.TierSpec) { t.Members[0].Endpoint = "http://u:p@10.0.0.1" }), pressure.ErrEndpoint},
		{"query endpoint", mutate(func(t *pressure.TierSpec) { t.Members[0].Endpoint = "http://10.0.0.1/?x=1" }), pressure.ErrEndpoint},
		{"fragment endpoint", mutate(func(t *pressure.TierSpec) { t.Members[0].Endpoint = "http://10.0.0.1/#x" }), pressure.ErrEndpoint},
		{"empty model", mutate(func(t *pressure.TierSpec) { t.ServedModel = "" }), pressure.ErrServedModel},
		{"control char model", mutate(func(t *pressure.TierSpec) { t.ServedModel = "a\nb" }), pressure.ErrServedModel},
		{"non UTF-8 model", mutate(func(t *pressure.TierSpec) { t.ServedModel = "a\xffb" }), pressure.ErrServedModel},
		{"long model", mutate(func(t *pressure.TierSpec) { t.ServedModel = strings.Repeat("m", 257) }), pressure.ErrServedModel},
		{"257 members", append(full(16, 16), tier("extra", "a")), pressure.ErrOverflow},
		{"overflow wins over later errors", append(full(16, 16), tier("BAD", "a", "b")), pressure.ErrOverflow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := pressure.NewCore(tt.tiers)
			require.ErrorIs(t, err, tt.err)
			assert.Nil(t, c)
		})
	}
}

func TestNewCoreAccepts(t *testing.T) {
	t.Run("no tiers", func(t *testing.T) {
		c, err := pressure.NewCore(nil)
		require.NoError(t, err)
		assert.Equal(t, 0, c.Members())
		_, err = c.Snapshot("chat", t0)
		assert.ErrorIs(t, err, pressure.ErrUnknownTier)
	})
	t.Run("256 members", func(t *testing.T) {
		var tiers []pressure.TierSpec
		for i := range 16 {
			tiers = append(tiers, tier(fmt.Sprintf("t%02d", i), memberIDs(16)...))
		}
		c, err := pressure.NewCore(tiers)
		require.NoError(t, err)
		assert.Equal(t, 256, c.Members())
	})
	t.Run("one member ID in two tiers is two entries", func(t *testing.T) {
		c, err := pressure.NewCore([]pressure.TierSpec{tier("chat", "a", "b"), tier("code", "a", "b")})
		require.NoError(t, err)
		_, err = c.Snapshot("chat", t0)
		require.NoError(t, err)
		_, err = c.Snapshot("code", t0)
		require.NoError(t, err)
		assert.Equal(t, 4, c.Queued())
	})
}

func TestNewCoreCopiesSpecs(t *testing.T) {
	ts := []pressure.TierSpec{tier("chat", "b", "a")}
	c, err := pressure.NewCore(ts)
	require.NoError(t, err)
	ts[0].ID = "other"
	ts[0].ServedModel = "other-model"
	ts[0].Members[0].ID = "zz"
	ts[0].Members[1].Endpoint = "http://evil.example"

	_, err = c.Snapshot("chat", t0)
	require.NoError(t, err)
	j1, ok := c.Next(t0)
	require.True(t, ok)
	j2, ok := c.Next(t0)
	require.True(t, ok)
	// Members are queued in ID order, with their registered endpoints.
	assert.Equal(t, pressure.Job{Tier: "chat", Member: "a", Endpoint: "http://10.0.0.2:8000", ServedModel: llama, Seq: j1.Seq,
		Started: t0, Capacity: 4}, j1)
	assert.Equal(t, pressure.Job{Tier: "chat", Member: "b", Endpoint: "http://10.0.0.1:8000", ServedModel: llama, Seq: j2.Seq,
		Started: t0, Capacity: 4}, j2)
	assert.NotEqual(t, j1.Seq, j2.Seq)
}
