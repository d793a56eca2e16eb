package admission

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestControlRefusals(t *testing.T) {
	tier := newTierT(t, replicaSpec("r", StrategyCapacity, 0, 1, 1))
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"tier quiesce with empty reason", tier.Quiesce(""), ErrInvalidReason},
		{"tier quiesce with bad reason", tier.Quiesce("Bad Reason"), ErrInvalidReason},
		{"member quiesce with bad reason", tier.QuiesceMember("m00", "-x"), ErrInvalidReason},
		{"member quiesce unknown member", tier.QuiesceMember("ghost", "x"), ErrUnknownMember},
		{"member readmit unknown member", tier.ReadmitMember("ghost"), ErrUnknownMember},
		{"member drain unknown member", idleErr(tier, "ghost"), ErrUnknownMember},
		{"tier drain while admitting", idleErr(tier, ""), ErrNotQuiesced},
		{"member drain while admitting", idleErr(tier, "m00"), ErrNotQuiesced},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, tt.err, tt.want)
		})
	}
	s := tier.Snapshot()
	assert.Equal(t, StateAdmitting, s.State)
	for _, m := range s.Members {
		assert.Equal(t, StateAdmitting, m.State, "refused transitions mutate nothing")
	}
}

func idleErr(t *TierAdmission, member string) error {
	_, err := t.Idle(member)
	return err
}

func TestMemberDrainWhileOnlyTierQuiesced(t *testing.T) {
	tier := newTierT(t, replicaSpec("r", StrategyCapacity, 0, 1, 1))
	require.NoError(t, tier.Quiesce("maint"))
	assert.ErrorIs(t, idleErr(tier, "m00"), ErrNotQuiesced, "the member is the scope")
}

// TestQuiesceScopes: tier and member quiesce each affect only their scope, and
// readmitting one never clears the other.
func TestQuiesceScopes(t *testing.T) {
	tier := newTierT(t, replicaSpec("r", StrategyRoundRobin, 0, 0, 0, 0))
	ready := allReady(memberIDs(3)...)

	require.NoError(t, tier.QuiesceMember("m01", "swap"))
	mustAcquire(t, tier, ready, nil, "m00")
	mustAcquire(t, tier, ready, nil, "m02")
	mustAcquire(t, tier, ready, nil, "m00")

	require.NoError(t, tier.Quiesce("maint"))
	require.NoError(t, tier.Quiesce("maint2"), "quiescing again replaces the reason")
	_, err := acquire(tier, ready, nil)
	assert.ErrorIs(t, err, errTierQuiesced)
	s := tier.Snapshot()
	assert.Equal(t, StateQuiesced, s.State)
	assert.Equal(t, "maint2", s.Reason)
	assert.Equal(t, StateQuiesced, s.Members[1].State)
	assert.Equal(t, "swap", s.Members[1].Reason)
	assert.Equal(t, StateAdmitting, s.Members[0].State, "tier quiesce is not written into members")

	require.NoError(t, tier.ReadmitMember("m01"))
	_, err = acquire(tier, ready, nil)
	assert.ErrorIs(t, err, ErrQuiesced, "member readmit never clears the tier quiesce")

	require.NoError(t, tier.QuiesceMember("m01", "swap"))
	require.NoError(t, tier.Readmit())
	s = tier.Snapshot()
	assert.Equal(t, StateAdmitting, s.State)
	assert.Empty(t, s.Reason)
	assert.Equal(t, StateQuiesced, s.Members[1].State, "tier readmit never clears member quiesce")
	mustAcquire(t, tier, ready, nil, "m02")

	require.NoError(t, tier.ReadmitMember("m01"))
	require.NoError(t, tier.ReadmitMember("m01"), "readmitting an admitting member is a no-op")
	mustAcquire(t, tier, ready, nil, "m00")
	mustAcquire(t, tier, ready, nil, "m01")
	assert.Empty(t, tier.Snapshot().Members[1].Reason)
	checkInvariants(t, tier.Snapshot())
}

func TestIdleAnswersPerScope(t *testing.T) {
	tier := newTierT(t, replicaSpec("r", StrategyCapacity, 0, 1, 1))
	l := mustAcquire(t, tier, allReady("m01"), nil, "m01")
	require.NoError(t, tier.QuiesceMember("m00", "x"))
	idle, err := tier.Idle("m00")
	require.NoError(t, err)
	assert.True(t, idle, "an idle quiesced member has drained")
	require.NoError(t, tier.Quiesce("x"))
	idle, err = tier.Idle("")
	require.NoError(t, err)
	assert.False(t, idle, "the tier still holds m01's lease")
	assert.Equal(t, int64(1), tier.Snapshot().Active, "asking never cancels a lease")
	assert.True(t, l.Release())
	idle, err = tier.Idle("")
	require.NoError(t, err)
	assert.True(t, idle)
	assert.Equal(t, StateQuiesced, tier.Snapshot().State, "draining does not readmit")
}

// TestChangedIsClosedByEveryChange: each release, quiesce and readmission closes the channel handed
// out before it, and nothing else does; after a close the next call hands out a fresh channel.
func TestChangedIsClosedByEveryChange(t *testing.T) {
	tier := newTierT(t, replicaSpec("r", StrategyCapacity, 0, 2, 2))
	ready := allReady("m00", "m01")
	a := mustAcquire(t, tier, ready, nil, "m00")
	b := mustAcquire(t, tier, ready, nil, "m01")
	changes := []struct {
		name string
		do   func() error
	}{
		{"release of one of several leases", func() error { a.Release(); return nil }},
		{"member quiesce", func() error { return tier.QuiesceMember("m01", "x") }},
		{"tier quiesce", func() error { return tier.Quiesce("x") }},
		{"member readmission", func() error { return tier.ReadmitMember("m01") }},
		{"tier readmission", tier.Readmit},
		{"last release", func() error { b.Release(); return nil }},
	}
	for _, c := range changes {
		ch := tier.Changed()
		assert.Equal(t, ch, tier.Changed(), "%s: one channel until the next change", c.name)
		assertOpen(t, ch)
		_ = tier.Snapshot()
		_, _ = tier.Idle("")
		assertOpen(t, ch) // reads change nothing
		require.NoError(t, c.do(), c.name)
		assertClosed(t, ch, c.name)
	}
	ch := tier.Changed()
	_, err := tier.AcquireMember(allReady(), nil, nil)
	require.Error(t, err)
	assertOpen(t, ch) // a refused acquire changes nothing
	assert.False(t, a.Release(), "misuse")
	assertOpen(t, ch) // a repeated release changes nothing either
}

func assertOpen(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
		t.Fatal("the change channel closed without a change")
	default:
	}
}

func assertClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	default:
		t.Fatalf("%s did not close the change channel", what)
	}
}
