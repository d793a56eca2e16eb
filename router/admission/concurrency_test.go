package admission

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTwentyAcquirersNeverOversubscribe: 20 goroutines released at once by a
// barrier against member ceilings 2 and 2. Nothing is released until every
// attempt finished, so exactly four succeed, two per member.
func TestTwentyAcquirersNeverOversubscribe(t *testing.T) {
	for _, strategy := range []Strategy{StrategyCapacity, StrategyRoundRobin} {
		t.Run(strategy.String(), func(t *testing.T) {
			tier := newTierT(t, replicaSpec("r", strategy, 0, 2, 2))
			ready := allReady("m00", "m01")
			start := make(chan struct{})
			type result struct {
				lease *Lease
				err   error
			}
			results := make(chan result, 20)
			var wg sync.WaitGroup
			for range 20 {
				wg.Go(func() {
					<-start
					l, err := acquire(tier, ready, nil)
					results <- result{l, err}
				})
			}
			close(start)
			wg.Wait()
			close(results)
			perMember := map[string]int{}
			var leases []*Lease
			for r := range results {
				if r.err != nil {
					require.ErrorIs(t, r.err, ErrExhausted)
					continue
				}
				perMember[r.lease.Member()]++
				leases = append(leases, r.lease)
			}
			assert.Equal(t, map[string]int{"m00": 2, "m01": 2}, perMember)
			s := tier.Snapshot()
			checkInvariants(t, s)
			assert.Equal(t, int64(4), s.Active)
			for _, l := range leases {
				require.True(t, l.Release())
			}
			checkInvariants(t, tier.Snapshot())
		})
	}
}

// TestChurnNeverOversubscribes: 20 goroutines acquire and release in a loop
// while a reader checks snapshots; the in-flight count observed by holders never
// exceeds a member ceiling and every snapshot reconciles.
func TestChurnNeverOversubscribes(t *testing.T) {
	tier := newTierT(t, replicaSpec("r", StrategyCapacity, 3, 2, 2))
	ready := allReady("m00", "m01")
	var inFlight [2]atomic.Int64
	var violations, successes atomic.Int64
	start := make(chan struct{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			<-start
			for range 200 {
				l, err := acquire(tier, ready, nil)
				if err != nil {
					if !errors.Is(err, ErrExhausted) {
						violations.Add(1)
					}
					continue
				}
				successes.Add(1)
				i := tier.conf.index[l.Member()]
				if inFlight[i].Add(1) > 2 {
					violations.Add(1)
				}
				inFlight[i].Add(-1)
				l.Release()
			}
		})
	}
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		<-start
		for {
			select {
			case <-stop:
				return
			default:
			}
			s := tier.Snapshot()
			var sum int64
			for _, m := range s.Members {
				sum += m.Active
				if m.Active > m.MaxConcurrency {
					violations.Add(1)
				}
			}
			if sum != s.Active || s.Active > 3 {
				violations.Add(1)
			}
		}
	}()
	close(start)
	wg.Wait()
	close(stop)
	<-readerDone
	assert.Zero(t, violations.Load())
	assert.Positive(t, successes.Load())
	s := tier.Snapshot()
	checkInvariants(t, s)
	assert.Equal(t, uint64(successes.Load()), s.Acquired)
	assert.Equal(t, s.Acquired, s.Released)
}

// TestQuiesceRacingAcquire: once Quiesce has returned, no acquire that starts
// afterwards succeeds; leases granted before it stay valid and drain cleanly.
func TestQuiesceRacingAcquire(t *testing.T) {
	for _, member := range []bool{false, true} {
		name := "tier"
		if member {
			name = "member"
		}
		t.Run(name, func(t *testing.T) {
			tier := newTierT(t, replicaSpec("r", StrategyCapacity, 0, 100, 100))
			ready := allReady("m00") // with member quiesce of m00 nothing else is ready
			var done atomic.Bool
			var late atomic.Int64
			start := make(chan struct{})
			leases := make(chan *Lease, 20*50)
			var wg sync.WaitGroup
			for range 20 {
				wg.Go(func() {
					<-start
					for range 50 {
						after := done.Load()
						l, err := acquire(tier, ready, nil)
						if err != nil {
							continue
						}
						if after {
							late.Add(1)
						}
						leases <- l
					}
				})
			}
			wg.Go(func() {
				<-start
				if member {
					assert.NoError(t, tier.QuiesceMember("m00", "race"))
				} else {
					assert.NoError(t, tier.Quiesce("race"))
				}
				done.Store(true)
			})
			close(start)
			wg.Wait()
			close(leases)
			assert.Zero(t, late.Load(), "an acquire started after Quiesce returned succeeded")
			_, err := acquire(tier, ready, nil)
			if member {
				assert.ErrorIs(t, err, errNoEligible, "m01 is admitting but not ready")
			} else {
				assert.ErrorIs(t, err, errTierQuiesced)
			}
			checkInvariants(t, tier.Snapshot())

			scope := ""
			if member {
				scope = "m00"
			}
			for l := range leases {
				idle, err := tier.Idle(scope)
				require.NoError(t, err)
				require.False(t, idle, "a lease is still held")
				require.True(t, l.Release())
			}
			idle, err := tier.Idle(scope)
			require.NoError(t, err)
			require.True(t, idle, "drained once every lease is back")
			s := tier.Snapshot()
			assert.Zero(t, s.Active)
			checkInvariants(t, s)
		})
	}
}
