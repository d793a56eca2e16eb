package admission

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func queuedDirect(t testing.TB, ceiling int64, waiting int) *TierAdmission {
	t.Helper()
	return newTierT(t, TierSpec{ID: "d", Kind: KindDirect, MaxConcurrency: ceiling, MaxWaiting: waiting})
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestQueueOrderAndWakeups(t *testing.T) {
	tier := queuedDirect(t, 1, 3)
	held, err := tier.Acquire()
	require.NoError(t, err)
	_, err = tier.Acquire()
	require.ErrorIs(t, err, ErrExhausted)

	a, err := tier.Enqueue()
	require.NoError(t, err)
	b, err := tier.Enqueue()
	require.NoError(t, err)
	assert.Equal(t, 2, tier.Snapshot().Waiting)

	_, err = tier.Acquire()
	assert.ErrorIs(t, err, ErrQueueAhead, "a newcomer never overtakes the queue")
	assert.ErrorIs(t, err, ErrExhausted, "and callers without a queue see it as exhausted")
	_, err = tier.AcquireQueued(b, nil, nil, nil)
	assert.ErrorIs(t, err, ErrQueueAhead, "only the head may acquire")
	_, err = tier.AcquireQueued(a, nil, nil, nil)
	assert.ErrorIs(t, err, ErrExhausted, "the head waits for capacity")
	assert.Equal(t, 2, tier.Snapshot().Waiting, "an exhausted head keeps its place")

	wa, wb := a.Wait(), b.Wait()
	require.True(t, held.Release())
	assert.True(t, isClosed(wa), "a release wakes the head")
	assert.False(t, isClosed(wb), "and only the head")
	la, err := tier.AcquireQueued(a, nil, nil, nil)
	require.NoError(t, err)
	assert.True(t, isClosed(wb), "the next head is woken when the head acquires")
	_, err = tier.AcquireQueued(a, nil, nil, nil)
	assert.ErrorIs(t, err, errTicketGone, "a ticket acquires once")

	_, err = tier.AcquireQueued(b, nil, nil, nil)
	assert.ErrorIs(t, err, ErrExhausted)
	assert.True(t, la.Release())
	lb, err := tier.AcquireQueued(b, nil, nil, nil)
	require.NoError(t, err)
	assert.Zero(t, tier.Snapshot().Waiting)
	assert.True(t, lb.Release())
	s := tier.Snapshot()
	assert.Equal(t, uint64(3), s.Acquired)
	assert.Zero(t, s.Active)
}

func TestQueueBoundAndLeave(t *testing.T) {
	tier := queuedDirect(t, 1, 2)
	held, err := tier.Acquire()
	require.NoError(t, err)
	a, _ := tier.Enqueue()
	b, _ := tier.Enqueue()
	_, err = tier.Enqueue()
	assert.ErrorIs(t, err, ErrQueueFull)
	assert.ErrorIs(t, err, ErrExhausted, "a full queue is the same refusal as no capacity")
	assert.Equal(t, uint64(1), tier.Snapshot().QueueFull)

	wb := b.Wait()
	assert.True(t, tier.Leave(a), "the head leaves (a timeout)")
	assert.True(t, isClosed(wb), "the next in line is told")
	assert.False(t, tier.Leave(a), "leaving twice changes nothing")
	assert.True(t, isClosed(a.Wait()), "a gone ticket's channel is closed")
	c, err := tier.Enqueue()
	require.NoError(t, err, "leaving frees a place")
	assert.True(t, tier.Leave(c), "leaving from the middle or the tail")
	require.True(t, held.Release())
	l, err := tier.AcquireQueued(b, nil, nil, nil)
	require.NoError(t, err)
	assert.True(t, l.Release())
	assert.False(t, tier.Leave(b), "an admitted ticket has left")
	assert.Zero(t, tier.Snapshot().Waiting)

	other := queuedDirect(t, 1, 2)
	assert.False(t, other.Leave(c), "a ticket belongs to its tier")
	_, err = other.AcquireQueued(c, nil, nil, nil)
	assert.ErrorIs(t, err, errTicketGone)
	_, err = newTierT(t, TierSpec{ID: "n", Kind: KindDirect}).Enqueue()
	assert.ErrorIs(t, err, ErrNoQueue)
}

func TestQuiesceEmptiesTheQueue(t *testing.T) {
	tier := newTierT(t, TierSpec{ID: "r", Kind: KindReplica, Strategy: StrategyRoundRobin, MaxWaiting: 4,
		Members: []MemberSpec{{ID: "m00", MaxConcurrency: 1}, {ID: "m01", MaxConcurrency: 1}}})
	ready := allReady("m00", "m01")
	l0 := mustAcquire(t, tier, ready, nil, "m00")
	l1 := mustAcquire(t, tier, ready, nil, "m01")
	a, _ := tier.Enqueue()
	b, _ := tier.Enqueue()
	wa, wb := a.Wait(), b.Wait()

	require.NoError(t, tier.QuiesceMember("m00", "x"))
	assert.True(t, isClosed(wa), "a member quiesce wakes the head: eligibility changed")
	assert.False(t, isClosed(wb))
	require.True(t, l0.Release())
	_, err := tier.AcquireQueued(a, ready, nil, nil)
	assert.ErrorIs(t, err, ErrExhausted, "the queue never admits into a quiesced member")

	wa, wb = a.Wait(), b.Wait()
	require.NoError(t, tier.Quiesce("maint"))
	assert.True(t, isClosed(wa) && isClosed(wb), "a tier quiesce wakes every waiter")
	for _, tk := range []*Ticket{a, b} {
		_, err := tier.AcquireQueued(tk, ready, nil, nil)
		assert.ErrorIs(t, err, ErrQuiesced)
	}
	assert.Zero(t, tier.Snapshot().Waiting, "each left with the quiesced refusal")
	_, err = tier.Enqueue()
	assert.ErrorIs(t, err, ErrQuiesced, "nobody queues for a quiesced tier")
	assert.True(t, l1.Release())
}

// TestQueueProperties drives a queued direct tier through random arrivals, releases, departures and
// retries, against a model FIFO: the queue never exceeds max_waiting, requests leave the queue for a
// lease strictly in arrival order among those still waiting, newcomers never overtake, and the tier
// never exceeds its ceiling.
func TestQueueProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ceiling := rapid.Int64Range(1, 4).Draw(t, "ceiling")
		maxWaiting := rapid.IntRange(1, 8).Draw(t, "max_waiting")
		set, err := New([]TierSpec{{ID: "d", Kind: KindDirect, MaxConcurrency: ceiling, MaxWaiting: maxWaiting}})
		if err != nil {
			t.Fatal(err)
		}
		tier, _ := set.Tier("d")
		var leases []*Lease
		var fifo []*Ticket // the model: waiting tickets in arrival order
		var lastSeq uint64
		t.Repeat(map[string]func(*rapid.T){
			"arrive": func(t *rapid.T) {
				l, err := tier.Acquire()
				if err == nil {
					if len(fifo) > 0 {
						t.Fatal("a newcomer overtook the queue")
					}
					leases = append(leases, l)
					return
				}
				tk, err := tier.Enqueue()
				switch {
				case err == nil:
					fifo = append(fifo, tk)
				case errors.Is(err, ErrQueueFull):
					if len(fifo) < maxWaiting {
						t.Fatalf("full with %d of %d waiting", len(fifo), maxWaiting)
					}
				default:
					t.Fatal(err)
				}
			},
			"release": func(t *rapid.T) {
				if len(leases) == 0 {
					t.Skip()
				}
				i := rapid.IntRange(0, len(leases)-1).Draw(t, "lease")
				leases[i].Release()
				leases = append(leases[:i], leases[i+1:]...)
			},
			"leave": func(t *rapid.T) {
				if len(fifo) == 0 {
					t.Skip()
				}
				i := rapid.IntRange(0, len(fifo)-1).Draw(t, "ticket")
				if !tier.Leave(fifo[i]) {
					t.Fatal("a waiting ticket could not leave")
				}
				fifo = append(fifo[:i], fifo[i+1:]...)
			},
			"retry": func(t *rapid.T) {
				if len(fifo) == 0 {
					t.Skip()
				}
				i := rapid.IntRange(0, len(fifo)-1).Draw(t, "ticket")
				l, err := tier.AcquireQueued(fifo[i], nil, nil, nil)
				if err != nil {
					if !errors.Is(err, ErrExhausted) {
						t.Fatal(err)
					}
					return
				}
				if i != 0 {
					t.Fatalf("ticket %d of %d acquired ahead of the head", i, len(fifo))
				}
				if fifo[0].seq <= lastSeq {
					t.Fatal("admissions from the queue out of arrival order")
				}
				lastSeq = fifo[0].seq
				leases = append(leases, l)
				fifo = fifo[1:]
			},
			"": func(t *rapid.T) {
				s := tier.Snapshot()
				if s.Waiting != len(fifo) || s.Waiting > maxWaiting {
					t.Fatalf("waiting %d, model %d, bound %d", s.Waiting, len(fifo), maxWaiting)
				}
				if s.Active != int64(len(leases)) || s.Active > ceiling {
					t.Fatalf("active %d, model %d, ceiling %d", s.Active, len(leases), ceiling)
				}
			},
		})
	})
}

// TestNoWakeupIsLost: a release between a failed retry and the next Wait still wakes the head.
func TestNoWakeupIsLost(t *testing.T) {
	tier := queuedDirect(t, 1, 2)
	held, err := tier.Acquire()
	require.NoError(t, err)
	a, err := tier.Enqueue()
	require.NoError(t, err)
	_, err = tier.AcquireQueued(a, nil, nil, nil)
	require.ErrorIs(t, err, ErrExhausted)
	require.True(t, held.Release()) // before the waiter took its channel
	assert.True(t, isClosed(a.Wait()), "the wake-up was kept for the next Wait")
	assert.False(t, isClosed(a.Wait()), "and used once")
}
