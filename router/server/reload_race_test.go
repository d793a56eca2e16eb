package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/config"
	"github.com/anvil-llm/anvil/router/config/load"
)

// raceConfig is reload i of the load test: member ceilings move 1-3, the third member comes and
// goes, and the strategy switches between round robin and capacity every five reloads.
func raceConfig(ms []*member, i int) string {
	l := live{members: ms, ceiling: 1 + i%3, top: "decision_log: {ring_size: 4096}\n"}
	if i%4 >= 2 {
		l.members = ms[:2]
	}
	if (i/5)%2 == 1 {
		l.strategy = "capacity"
	}
	return l.yaml()
}

// checkTier is the invariant checked after every reload and every request: no count below zero, the
// tier's count the sum of its members' (retiring ones included), a retiring member only while it
// holds a lease.
func checkTier(s admission.Snapshot) error {
	var sum int64
	for _, m := range s.Members {
		if m.Active < 0 || m.Retiring && m.Active == 0 {
			return fmt.Errorf("member %s: active %d retiring %v", m.ID, m.Active, m.Retiring)
		}
		sum += m.Active
	}
	if s.Active < 0 || s.Active != sum || s.ReleaseMisuse != 0 {
		return fmt.Errorf("tier %s: active %d, members %d, misuse %d", s.ID, s.Active, sum, s.ReleaseMisuse)
	}
	return nil
}

// TestReloadUnderLoad reloads 40 times while 60 clients send 300 ordinary and streaming requests
// through real HTTP to real fake members. Every request answers 200 or 503 (a refusal for want of
// capacity under the ceiling in force), every request is recorded exactly once, the invariants
// hold after every reload and every request, and at the end no lease is left.
func TestReloadUnderLoad(t *testing.T) {
	const clients, perClient, reloads = 60, 5, 40
	ms := startMembers(t, 3)
	r := startRouter(t, raceConfig(ms, 0))
	tier := func() admission.Snapshot {
		ta, ok := r.srv.Admission().Tier("replicas")
		if !ok {
			return admission.Snapshot{}
		}
		return ta.Snapshot()
	}
	var violations sync.Map // description -> struct{}
	violate := func(err error) {
		if err != nil {
			violations.Store(err.Error(), struct{}{})
		}
	}
	configs := make([]config.Config, reloads+1)
	digests := make([]string, reloads+1)
	for i := range configs {
		yaml := raceConfig(ms, i)
		cfg, err := load.Parse([]byte(yaml), env)
		require.NoError(t, err)
		sum := sha256.Sum256([]byte(yaml + fmt.Sprint(i)))
		configs[i], digests[i] = cfg, hex.EncodeToString(sum[:])
	}

	var ok, refused atomic.Int64
	start := make(chan struct{})
	completed := make(chan struct{}, clients*perClient) // paces the reloads across the whole run
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			<-start
			for k := range perClient {
				id := fmt.Sprintf("load-%02d-%d", c, k)
				req, err := http.NewRequest(http.MethodPost, r.http.URL+"/v1/chat/completions",
					strings.NewReader(chatBody(4, (c+k)%2 == 0)))
				if err != nil {
					violate(err)
					return
				}
				req.Header.Set("Authorization", "Bearer "+callerToken)
				req.Header.Set("X-Request-ID", id)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					violate(fmt.Errorf("request failed: %w", err))
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					ok.Add(1)
				case http.StatusServiceUnavailable:
					refused.Add(1)
				default:
					violate(fmt.Errorf("status %d", resp.StatusCode))
				}
				violate(checkTier(tier()))
				completed <- struct{}{}
			}
		})
	}
	wg.Go(func() {
		<-start
		done := 0
		for i := 1; i <= reloads; i++ {
			for ; done < (i-1)*clients*perClient/reloads; done++ {
				<-completed
			}
			if _, err := r.srv.Reload(context.Background(), configs[i], digests[i]); err != nil {
				violate(fmt.Errorf("reload %d: %w", i, err))
			}
			violate(checkTier(tier()))
		}
	})
	close(start)
	wg.Wait()
	r.wait(t, clients*perClient)

	violations.Range(func(k, _ any) bool {
		t.Errorf("violation: %s", k)
		return true
	})
	assert.Equal(t, uint64(reloads+1), r.srv.Generation())
	assert.Equal(t, int64(clients*perClient), ok.Load()+refused.Load())
	assert.Positive(t, ok.Load())
	snap := tier()
	require.NoError(t, checkTier(snap))
	assertSettled(t, snap)
	for _, s := range r.srv.Admission().Snapshots() {
		assert.False(t, s.Retiring, "nothing retiring once every request ended")
	}
	seen, own := map[string]int{}, map[string]int{}
	for _, rec := range r.srv.Decisions().Recent(4096) {
		seen[rec.CallerRequestID]++
		own[rec.RequestID]++
	}
	for id, n := range own {
		assert.Equal(t, 1, n, "the router's request ID %s names one record", id)
	}
	for c := range clients {
		for k := range perClient {
			id := fmt.Sprintf("load-%02d-%d", c, k)
			assert.Equal(t, 1, seen[id], "one record for %s", id)
		}
	}
}
