package routing

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/health"
)

// readyMap is a readiness source that follows the generation: every configured member is ready.
type readyMap struct {
	tiers   map[string]map[string]bool
	staged  int
	commits int
	fail    error
}

func newReadyMap(cfg config.Config) *readyMap {
	r := &readyMap{}
	r.tiers = readyFor(cfg)
	return r
}

func readyFor(cfg config.Config) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, t := range cfg.Tiers() {
		m := map[string]bool{}
		for _, mem := range t.Members {
			m[mem.ID] = true
		}
		out[t.ID] = m
	}
	return out
}

func (r *readyMap) Snapshot(tier string) map[string]bool {
	out := map[string]bool{}
	for id, v := range r.tiers[tier] {
		out[id] = v
	}
	return out
}

func (r *readyMap) Stage(cfg config.Config) (func(), error) {
	if r.fail != nil {
		return nil, r.fail
	}
	r.staged++
	next := readyFor(cfg)
	return func() { r.commits++; r.tiers = next }, nil
}

// genConfig is walkConfig with the pool's member ceilings, an optional third member and m0's
// endpoint port.
func genConfig(t *testing.T, ceiling int64, third bool, m0Port string) config.Config {
	t.Helper()
	doc := walkDocument()
	pool := &doc.Tiers[0]
	pool.PassiveHealth = &config.PassiveHealthDoc{ConsecutiveFailures: ptr(int64(1)), MaxEjectedPercent: ptr(int64(50))}
	pool.Members[0].Endpoint = ptr("http://127.0.0.1:" + m0Port)
	for i := range pool.Members {
		pool.Members[i].MaxConcurrency = ptr(ceiling)
	}
	if third {
		pool.Members = append(pool.Members, config.MemberDoc{ID: ptr("m2"), Endpoint: ptr("http://127.0.0.1:9003"),
			MaxConcurrency: ptr(ceiling)})
	}
	env := func(k string) (string, bool) { return "caller-token-aaaaaaaaaaaa", k == config.EnvAPIToken }
	cfg, err := config.Build(doc, config.Sources{LookupEnv: env})
	require.NoError(t, err)
	return cfg
}

func TestGenerations(t *testing.T) {
	newRouter := func(t *testing.T, cfg config.Config) (*Router, *readyMap) {
		ready := newReadyMap(cfg)
		log, err := NewDecisionLog(cfg, nil)
		require.NoError(t, err)
		r, err := New(cfg, ready, nil, log, WithFollowers(ready), WithDigest("0123456789abcdef0123"))
		require.NoError(t, err)
		return r, ready
	}
	admit := func(t *testing.T, r *Router, model string) (Attempt, error) {
		a := r.Begin("req", t0)
		tier, err := a.Resolve(chat(model, 10))
		require.NoError(t, err)
		_, err = a.Admit(tier, t0)
		return a, err
	}
	t.Run("Next changes nothing until Publish", func(t *testing.T) {
		r, ready := newRouter(t, genConfig(t, 1, false, "9001"))
		next, err := r.Next(genConfig(t, 2, true, "9001"), "feed")
		require.NoError(t, err)
		assert.Equal(t, 1, ready.staged)
		assert.Zero(t, ready.commits, "the follower is staged, not committed")
		assert.Equal(t, uint64(2), next.Generation())
		snap := r.Admission().Snapshots()[1]
		assert.Len(t, snap.Members, 2)
		assert.Equal(t, int64(1), snap.Members[0].MaxConcurrency)
		a, err := admit(t, r, "chat")
		require.NoError(t, err, "the running generation admits as before")
		_, err = a.Finish(t0, 200)
		require.NoError(t, err)
		assert.Nil(t, r.Successor())
	})
	t.Run("Publish supersedes; the racing attempt rebases and the old lease releases into the same counts", func(t *testing.T) {
		r, ready := newRouter(t, genConfig(t, 1, false, "9001"))
		held, err := admit(t, r, "chat")
		require.NoError(t, err)
		next, err := r.Next(genConfig(t, 2, true, "9001"), "feed")
		require.NoError(t, err)
		racing := r.Begin("racing", t0)
		tier, err := racing.Resolve(chat("chat", 10))
		require.NoError(t, err)
		require.NoError(t, next.Publish())
		assert.Equal(t, 1, ready.commits)
		select {
		case <-r.Superseded():
		default:
			t.Fatal("the old generation is not marked superseded")
		}
		assert.Same(t, next, r.Successor())
		assert.Same(t, next, r.Current())
		_, err = racing.Admit(tier, t0)
		require.ErrorIs(t, err, ErrSuperseded)
		racing.Rebase(r.Current())
		tier, err = racing.Resolve(chat("chat", 10))
		require.NoError(t, err)
		_, err = racing.Admit(tier, t0)
		require.NoError(t, err, "admitted under the generation in force")
		rec, err := racing.Finish(t0, 200)
		require.NoError(t, err)
		require.NotNil(t, rec.ReplicaScheduler, "evidence checked against the admitting generation's membership")
		pool := next.Admission().Snapshots()[1]
		assert.Equal(t, int64(1), pool.Active, "the lease taken before the reload")
		_, err = held.Finish(t0, 200)
		require.NoError(t, err)
		pool = next.Admission().Snapshots()[1]
		assert.Zero(t, pool.Active)
		assert.Len(t, pool.Members, 3)
		assert.Zero(t, pool.ReleaseMisuse)
	})
	t.Run("a removed alias resolves to the ordinary unknown alias", func(t *testing.T) {
		r, _ := newRouter(t, genConfig(t, 1, false, "9001"))
		doc := walkDocument()
		doc.Aliases = doc.Aliases[:1]
		doc.Tiers = doc.Tiers[:1]
		env := func(k string) (string, bool) { return "caller-token-aaaaaaaaaaaa", k == config.EnvAPIToken }
		cfg, err := config.Build(doc, config.Sources{LookupEnv: env})
		require.NoError(t, err)
		held, err := admit(t, r, "big")
		require.NoError(t, err)
		next, err := r.Next(cfg, "")
		require.NoError(t, err)
		require.NoError(t, next.Publish())
		a := next.Begin("gone", t0)
		_, err = a.Resolve(chat("big", 10))
		require.ErrorIs(t, err, ErrUnknownAlias)
		snaps := next.Admission().Snapshots()
		require.Len(t, snaps, 2)
		assert.True(t, snaps[1].Retiring, "the removed tier stays visible while its request runs")
		_, err = held.Finish(t0, 200)
		require.NoError(t, err)
		assert.Len(t, next.Admission().Snapshots(), 1, "and leaves when it ends")
	})
	t.Run("Publish refuses twice, stale siblings and non-next routers", func(t *testing.T) {
		r, _ := newRouter(t, genConfig(t, 1, false, "9001"))
		require.ErrorIs(t, r.Publish(), ErrNotNext)
		a, err := r.Next(genConfig(t, 2, false, "9001"), "")
		require.NoError(t, err)
		b, err := r.Next(genConfig(t, 3, false, "9001"), "")
		require.NoError(t, err)
		require.NoError(t, a.Publish())
		require.ErrorIs(t, a.Publish(), ErrNotNext)
		require.ErrorIs(t, b.Publish(), admission.ErrStale)
		assert.Equal(t, int64(2), a.Admission().Snapshots()[1].Members[0].MaxConcurrency)
	})
	t.Run("a follower that refuses refuses the generation", func(t *testing.T) {
		r, ready := newRouter(t, genConfig(t, 1, false, "9001"))
		ready.fail = errors.New("boom")
		_, err := r.Next(genConfig(t, 2, true, "9001"), "")
		require.Error(t, err)
		assert.Len(t, ready.tiers["pool"], 2)
	})
	t.Run("passive health carries over by endpoint", func(t *testing.T) {
		r, _ := newRouter(t, genConfig(t, 4, false, "9001"))
		for _, m := range []string{"m0"} {
			a, err := admit(t, r, "chat")
			require.NoError(t, err)
			require.Equal(t, m, a.rec.Member)
			a.Relayed(decisionlog.OutcomeUpstreamTransportError, 502, 0)
			_, err = a.Finish(t0, 502)
			require.NoError(t, err)
		}
		state := func(r *Router) health.State {
			h, err := r.Health("pool", t0)
			require.NoError(t, err)
			return h[0].State
		}
		require.Equal(t, health.Ejected, state(r))
		same, err := r.Next(genConfig(t, 5, false, "9001"), "")
		require.NoError(t, err)
		require.NoError(t, same.Publish())
		assert.Equal(t, health.Ejected, state(same), "same endpoint: still ejected")
		moved, err := same.Next(genConfig(t, 5, false, "9009"), "")
		require.NoError(t, err)
		require.NoError(t, moved.Publish())
		assert.Equal(t, health.Healthy, state(moved), "a new endpoint is a new member")
	})
	t.Run("records carry the digest's first 16 hex digits", func(t *testing.T) {
		r, _ := newRouter(t, genConfig(t, 1, false, "9001"))
		assert.Equal(t, "0123456789abcdef", r.recordDigest())
	})
}
