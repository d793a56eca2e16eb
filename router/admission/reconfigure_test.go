package admission

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reconfigure commits specs over set and returns the generation in force.
func reconfigure(t *testing.T, set *Set, specs ...TierSpec) *Set {
	t.Helper()
	p, err := set.Reconfigure(specs)
	require.NoError(t, err)
	next, err := p.Commit()
	require.NoError(t, err)
	return next
}

func tierOf(t *testing.T, set *Set, id string) *TierAdmission {
	t.Helper()
	tier, ok := set.Tier(id)
	require.True(t, ok)
	return tier
}

func memberSnap(t *testing.T, snap Snapshot, id string, retiring bool) MemberSnapshot {
	t.Helper()
	for _, m := range snap.Members {
		if m.ID == id && m.Retiring == retiring {
			return m
		}
	}
	require.Failf(t, "member missing", "%s retiring=%v in %+v", id, retiring, snap.Members)
	return MemberSnapshot{}
}

func TestReconfigureSemantics(t *testing.T) {
	rr := func(ceilings ...int64) TierSpec { return replicaSpec("t", StrategyRoundRobin, 0, ceilings...) }
	t.Run("a ceiling lowered below active cuts nothing and admits only under it", func(t *testing.T) {
		set, err := New([]TierSpec{rr(3, 3)})
		require.NoError(t, err)
		tier := tierOf(t, set, "t")
		var leases []*Lease
		for range 4 {
			l, err := tier.AcquireMember(allReady("m00", "m01"), nil, nil)
			require.NoError(t, err)
			leases = append(leases, l)
		}
		set = reconfigure(t, set, rr(1, 1))
		tier = tierOf(t, set, "t")
		snap := tier.Snapshot()
		assert.Equal(t, int64(2), memberSnap(t, snap, "m00", false).Active, "nothing is cut")
		assert.Equal(t, int64(1), memberSnap(t, snap, "m00", false).MaxConcurrency, "both numbers show")
		_, err = tier.AcquireMember(allReady("m00", "m01"), nil, nil)
		require.ErrorIs(t, err, ErrExhausted)
		for _, l := range leases[:3] {
			require.True(t, l.Release())
		}
		_, err = tier.AcquireMember(allReady("m00", "m01"), nil, nil)
		require.NoError(t, err, "admits once a member is under its new ceiling")
	})
	t.Run("a removed member retires with its leases and leaves when the last ends", func(t *testing.T) {
		set, err := New([]TierSpec{rr(1, 1, 1)})
		require.NoError(t, err)
		tier := tierOf(t, set, "t")
		ready := allReady("m00", "m01", "m02")
		l, err := tier.AcquireMember(ready, nil, nil)
		require.NoError(t, err)
		require.Equal(t, "m00", l.Member())
		set = reconfigure(t, set, TierSpec{ID: "t", Kind: KindReplica, Members: []MemberSpec{{ID: "m01"}, {ID: "m02"}}})
		snap := tierOf(t, set, "t").Snapshot()
		assert.Equal(t, int64(1), snap.Active)
		assert.Equal(t, int64(1), memberSnap(t, snap, "m00", true).Active)
		require.True(t, l.Release())
		assert.False(t, l.Release(), "exactly once, across the reload too")
		snap = tierOf(t, set, "t").Snapshot()
		assert.Len(t, snap.Members, 2)
		assert.Zero(t, snap.Active)
		assert.Equal(t, uint64(1), snap.ReleaseMisuse)
	})
	t.Run("a member whose endpoint changed is new and keeps its quiesce", func(t *testing.T) {
		spec := rr(2, 2)
		spec.Members[0].Endpoint = "http://a:1"
		set, err := New([]TierSpec{spec})
		require.NoError(t, err)
		tier := tierOf(t, set, "t")
		l, err := tier.AcquireMember(allReady("m00", "m01"), nil, nil)
		require.NoError(t, err)
		require.NoError(t, tier.QuiesceMember("m00", "maintenance"))
		moved := rr(2, 2)
		moved.Members[0].Endpoint = "http://a:2"
		set = reconfigure(t, set, moved)
		snap := tierOf(t, set, "t").Snapshot()
		fresh := memberSnap(t, snap, "m00", false)
		assert.Zero(t, fresh.Active)
		assert.Equal(t, StateQuiesced, fresh.State)
		assert.Equal(t, "maintenance", fresh.Reason)
		assert.Equal(t, int64(1), memberSnap(t, snap, "m00", true).Active)
		assert.Equal(t, int64(1), snap.Active)
		l.Release()
		assert.Len(t, tierOf(t, set, "t").Snapshot().Members, 2)
	})
	t.Run("an unchanged identity keeps counts, quiesce and the cursor", func(t *testing.T) {
		set, err := New([]TierSpec{rr(2, 2, 2)})
		require.NoError(t, err)
		tier := tierOf(t, set, "t")
		l, err := tier.AcquireMember(allReady("m00", "m01", "m02"), nil, nil)
		require.NoError(t, err)
		require.NoError(t, tier.QuiesceMember("m02", "maintenance"))
		require.Equal(t, 1, tier.Snapshot().Cursor)
		set = reconfigure(t, set, TierSpec{ID: "t", Kind: KindReplica, Members: []MemberSpec{
			{ID: "m00", MaxConcurrency: 5}, {ID: "m01"}, {ID: "m02"}, {ID: "m03"}}})
		tier = tierOf(t, set, "t")
		snap := tier.Snapshot()
		assert.Equal(t, int64(1), memberSnap(t, snap, "m00", false).Active)
		assert.Equal(t, StateQuiesced, memberSnap(t, snap, "m02", false).State)
		assert.Equal(t, 1, snap.Cursor, "still on m01")
		next, err := tier.AcquireMember(allReady("m00", "m01", "m02", "m03"), nil, nil)
		require.NoError(t, err)
		assert.Equal(t, "m01", next.Member())
		l.Release()
		next.Release()
	})
	t.Run("a superseded generation admits nothing and a waiter keeps its place", func(t *testing.T) {
		spec := replicaSpec("t", StrategyRoundRobin, 1, 1, 1)
		spec.MaxWaiting = 2
		set, err := New([]TierSpec{spec})
		require.NoError(t, err)
		old := tierOf(t, set, "t")
		held, err := old.AcquireMember(allReady("m00", "m01"), nil, nil)
		require.NoError(t, err)
		tk, err := old.Enqueue()
		require.NoError(t, err)
		spec.MaxConcurrency = 2
		set = reconfigure(t, set, spec)
		<-tk.Wait() // a commit wakes every waiter
		_, err = old.AcquireQueued(tk, allReady("m00", "m01"), nil, nil)
		require.ErrorIs(t, err, ErrSuperseded)
		_, err = old.Acquire()
		require.ErrorIs(t, err, ErrWrongKind)
		_, err = old.AcquireMember(allReady("m00", "m01"), nil, nil)
		require.ErrorIs(t, err, ErrSuperseded)
		_, err = old.AcquireMember(allReady("m00"), nil, nil)
		require.ErrorIs(t, err, ErrSuperseded, "a snapshot of the next membership is no malformed snapshot")
		cur := tierOf(t, set, "t")
		assert.Equal(t, 1, cur.Snapshot().Waiting, "the waiter is still queued")
		l, err := cur.AcquireQueued(tk, allReady("m00", "m01"), nil, nil)
		require.NoError(t, err, "the same ticket admits through the generation in force")
		assert.Zero(t, cur.Snapshot().Waiting)
		l.Release()
		held.Release()
	})
	t.Run("a removed tier retires until idle; re-adding it before then keeps it", func(t *testing.T) {
		set, err := New([]TierSpec{rr(1, 1), {ID: "d", Kind: KindDirect}})
		require.NoError(t, err)
		l, err := tierOf(t, set, "d").Acquire()
		require.NoError(t, err)
		set = reconfigure(t, set, rr(1, 1))
		snaps := set.Snapshots()
		require.Len(t, snaps, 2)
		assert.Equal(t, "d", snaps[1].ID)
		assert.True(t, snaps[1].Retiring)
		assert.Equal(t, int64(1), snaps[1].Active)
		_, ok := set.Tier("d")
		assert.False(t, ok)
		back := reconfigure(t, set, rr(1, 1), TierSpec{ID: "d", Kind: KindDirect, MaxConcurrency: 1})
		_, err = tierOf(t, back, "d").Acquire()
		require.ErrorIs(t, err, ErrExhausted, "the lease taken before the removal still counts")
		l.Release()
		assert.Zero(t, tierOf(t, back, "d").Snapshot().Active)
		gone := reconfigure(t, back, rr(1, 1))
		assert.Len(t, gone.Snapshots(), 1, "an idle removed tier leaves at once")
	})
	t.Run("a commit over a superseded generation is stale and changes nothing", func(t *testing.T) {
		set, err := New([]TierSpec{rr(1, 1)})
		require.NoError(t, err)
		a, err := set.Reconfigure([]TierSpec{rr(2, 2)})
		require.NoError(t, err)
		b, err := set.Reconfigure([]TierSpec{rr(3, 3)})
		require.NoError(t, err)
		next, err := a.Commit()
		require.NoError(t, err)
		_, err = b.Commit()
		require.ErrorIs(t, err, ErrStale)
		assert.Equal(t, int64(2), memberSnap(t, tierOf(t, next, "t").Snapshot(), "m00", false).MaxConcurrency)
	})
	t.Run("an invalid spec refuses and changes nothing", func(t *testing.T) {
		set, err := New([]TierSpec{rr(1, 1)})
		require.NoError(t, err)
		_, err = set.Reconfigure([]TierSpec{rr(1)})
		require.ErrorIs(t, err, ErrInvalidSpec)
		_, err = tierOf(t, set, "t").AcquireMember(allReady("m00", "m01"), nil, nil)
		require.NoError(t, err)
	})
}
