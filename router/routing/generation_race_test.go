package routing

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/config"
)

// TestPublishRacesAdmissions publishes 50 generations (ceilings moving, a member added and removed)
// while 16 walkers admit and finish requests, retrying under the generation in force whenever a
// Publish superseded theirs. Every walk ends admitted or refused for capacity, the tier's count is
// always the sum of its members', and at the end nothing is held or retiring. Run it with -race.
func TestPublishRacesAdmissions(t *testing.T) {
	cfgs := []config.Config{genConfig(t, 1, false, "9001"), genConfig(t, 3, true, "9001"), genConfig(t, 2, true, "9001")}
	ready := newReadyMap(cfgs[0]) // follows the generation in force: every configured member ready
	log, err := NewDecisionLog(cfgs[0], nil)
	require.NoError(t, err)
	first, err := New(cfgs[0], ready, nil, log, WithFollowers(ready))
	require.NoError(t, err)
	var cur atomic.Pointer[Router]
	cur.Store(first)
	var superseded, admitted, refused atomic.Int64
	var violations sync.Map
	check := func(r *Router) {
		for _, s := range r.Current().Admission().Snapshots() {
			var sum int64
			for _, m := range s.Members {
				sum += m.Active
			}
			if s.Kind == admission.KindReplica && sum != s.Active || s.Active < 0 {
				violations.Store("tier active is not the sum of its members", true)
			}
		}
	}
	stop := make(chan struct{})
	finished := make(chan struct{}, 1024) // paces the publishes between walks
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := cur.Load()
				a := r.Begin("race", t0)
				for {
					tier, err := a.Resolve(chat("chat", 10))
					if err != nil {
						violations.Store("resolve: "+err.Error(), true)
						break
					}
					_, err = a.Admit(tier, t0)
					if errors.Is(err, ErrSuperseded) {
						superseded.Add(1)
						<-a.Router().Superseded()
						a.Rebase(a.Router().Current())
						continue
					}
					switch {
					case err == nil:
						admitted.Add(1)
					case errors.Is(err, admission.ErrExhausted):
						refused.Add(1)
					default:
						violations.Store("admit: "+err.Error(), true)
					}
					break
				}
				if _, err := a.Finish(t0, 200); err != nil {
					violations.Store("finish: "+err.Error(), true)
				}
				check(r)
				select {
				case finished <- struct{}{}:
				default:
				}
			}
		})
	}
	for i := range 50 {
		for range 8 {
			<-finished
		}
		next, err := cur.Load().Next(cfgs[(i+1)%len(cfgs)], "")
		require.NoError(t, err)
		require.NoError(t, next.Publish())
		cur.Store(next)
		check(next)
	}
	close(stop)
	wg.Wait()
	violations.Range(func(k, _ any) bool {
		t.Error(k)
		return true
	})
	t.Logf("admitted %d, refused %d, superseded and retried %d", admitted.Load(), refused.Load(), superseded.Load())
	assert.Positive(t, admitted.Load())
	for _, s := range cur.Load().Admission().Snapshots() {
		assert.False(t, s.Retiring)
		assert.Zero(t, s.Active, "tier %s", s.ID)
		assert.Equal(t, s.Acquired, s.Released)
		assert.Zero(t, s.ReleaseMisuse)
		for _, m := range s.Members {
			assert.False(t, m.Retiring, "member %s", m.ID)
		}
	}
}
