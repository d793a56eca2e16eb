package server_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/admission"
)

// Chaos: a few thousand seeded requests against three real fakevllm members behind a real router, with
// callers aborting before and after the first byte, member faults toggled through each member's
// /admin/faults, metrics outages, and quiesce/drain/readmit cycles through the admin API, all at once.
// Afterwards every lease reconciles, no admission snapshot sampled along the way exceeded a ceiling,
// and no request reached a member twice or reached two members. Progress is counted in completed
// requests, never in time: no sleeps, no timing thresholds.

const (
	chaosSeed      = 13
	chaosWorkers   = 12
	chaosPerWorker = 300
)

// chaosFaults are the member fault configurations the toggler picks from ({} clears).
var chaosFaults = []string{
	`{}`, `{}`,
	`{"http_errors":[{"status":500,"rate":0.3}]}`,
	`{"http_errors":[{"status":429,"rate":0.5}]}`,
	`{"truncate":{"chunk":2,"rate":0.5}}`,
	`{"malformed":{"chunk":2,"rate":0.5}}`,
	`{"engine_dead":true}`,
	`{"step_time_multiplier":3}`,
	`{"kv_blocks":8}`,
	`{"metrics":{"mode":"error"}}`,
	`{"metrics":{"mode":"malformed"}}`,
	`{"metrics":{"mode":"missing"}}`,
}

// cancelAtEOF cancels its request's context once the transport has read the whole body: the request is
// sent, and the caller goes away before the first response byte.
type cancelAtEOF struct {
	r      io.Reader
	cancel context.CancelFunc
}

func (c *cancelAtEOF) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err == io.EOF {
		c.cancel()
	}
	return n, err
}

// chaosBody draws an endpoint and a small request.
func chaosBody(rng *rand.Rand) (path, body string) {
	tokens, stream := 1+rng.IntN(8), rng.IntN(2) == 0
	switch n := rng.IntN(20); {
	case n < 14:
		return "/v1/chat/completions", chatBody(tokens, stream)
	case n < 17:
		return "/v1/completions", fmt.Sprintf(`{"model":"chat","prompt":"hello there","max_tokens":%d,"stream":%t,"ignore_eos":true}`, tokens, stream)
	}
	return "/v1/responses", responsesBody(tokens, stream)
}

// chaosCall sends one request and ends it as mode says: 0-5 read to the end, 6-7 abort before the
// first byte, 8-9 abort after it.
func chaosCall(client *http.Client, base, id string, rng *rand.Rand) {
	path, body := chaosBody(rng)
	mode := rng.IntN(10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var rd io.Reader = strings.NewReader(body)
	if mode == 6 || mode == 7 {
		rd = &cancelAtEOF{r: rd, cancel: cancel}
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+path, rd)
	req.ContentLength = int64(len(body))
	req.Header.Set("Authorization", "Bearer "+callerToken)
	req.Header.Set("X-Request-ID", id)
	resp, err := client.Do(req)
	if err != nil {
		return // an abort before the first byte, or a cut connection
	}
	defer resp.Body.Close()
	if mode >= 8 {
		var one [1]byte
		_, _ = resp.Body.Read(one[:])
		cancel()
	}
	_, _ = io.Copy(io.Discard, resp.Body)
}

// ceilingViolation describes how a snapshot breaks a ceiling, or returns "".
func ceilingViolation(s admission.Snapshot) string {
	var sum int64
	for _, m := range s.Members {
		sum += m.Active
		if m.MaxConcurrency > 0 && m.Active > m.MaxConcurrency {
			return fmt.Sprintf("member %s holds %d > %d", m.ID, m.Active, m.MaxConcurrency)
		}
		if m.Active < 0 {
			return fmt.Sprintf("member %s holds %d", m.ID, m.Active)
		}
	}
	switch {
	case s.MaxConcurrency > 0 && s.Active > s.MaxConcurrency:
		return fmt.Sprintf("tier holds %d > %d", s.Active, s.MaxConcurrency)
	case s.Active != sum:
		return fmt.Sprintf("tier holds %d, members %d", s.Active, sum)
	}
	return ""
}

func TestChaos(t *testing.T) {
	ms := startMembers(t, 3)
	r := startRouter(t, replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 4, tierCeiling: 10,
		extra: "decision_log:\n  ring_size: 10000\n"}))
	stopDrain := make(chan struct{})
	drained := make(chan struct{})
	go func() { // the router's per-request announcements; this test waits on the server instead
		defer close(drained)
		for {
			select {
			case <-r.done:
			case <-stopDrain:
				return
			}
		}
	}()
	admin := func(body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, r.http.URL+"/admin/v1/transition", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	setFaults := func(m *member, faults string) {
		req, _ := http.NewRequest(http.MethodPut, m.URL()+"/admin/faults", strings.NewReader(faults))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, faults)
	}

	// Callers.
	total := chaosWorkers * chaosPerWorker
	progress := make(chan struct{}, total)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: chaosWorkers}}
	var callers sync.WaitGroup
	for w := range chaosWorkers {
		callers.Go(func() {
			rng := rand.New(rand.NewPCG(chaosSeed, uint64(w+1)))
			for i := range chaosPerWorker {
				chaosCall(client, r.http.URL, fmt.Sprintf("chaos-%02d-%04d", w, i), rng)
				progress <- struct{}{}
			}
		})
	}

	// Transition cycles, one at a time: quiesce, drain, readmit, of a member or of the whole tier.
	var transitions sync.WaitGroup
	var transitionErrs []string
	var terrMu sync.Mutex
	cycle := func(member string) {
		scope := `"tier":"replicas"`
		if member != "" {
			scope += `,"member_id":"` + member + `"`
		}
		fail := func(step string, status int, body string) {
			terrMu.Lock()
			defer terrMu.Unlock()
			transitionErrs = append(transitionErrs, fmt.Sprintf("%s %s: %d %s", step, scope, status, body))
		}
		if status, body := admin(`{"action":"quiesce",` + scope + `,"reason":"chaos"}`); status != http.StatusOK {
			fail("quiesce", status, body)
		}
		if status, body := admin(`{"action":"drain",` + scope + `,"wait_seconds":300}`); status != http.StatusOK {
			fail("drain", status, body)
		}
		// A member whose engine the toggler killed stays quiesced (409); the end readmits it.
		if status, body := admin(`{"action":"readmit",` + scope + `}`); status != http.StatusOK && status != http.StatusConflict {
			fail("readmit", status, body)
		}
	}

	// The conductor: one step per completed request. It samples admission, toggles faults, re-probes
	// readiness and starts the transition cycles at fixed points of progress.
	rng := rand.New(rand.NewPCG(chaosSeed, 0))
	samples, violations := 0, []string{}
	ctx := context.Background()
	for i := 1; i <= total; i++ {
		<-progress
		if v := ceilingViolation(r.snapshot(t, "replicas")); v != "" {
			violations = append(violations, v)
		}
		samples++
		if i%20 == 0 {
			setFaults(ms[rng.IntN(len(ms))], chaosFaults[rng.IntN(len(chaosFaults))])
		}
		if i%100 == 0 {
			r.srv.ProbeNow(ctx)
		}
		switch i {
		case total / 5, 2 * total / 5, 3 * total / 5, 4 * total / 5:
			transitions.Wait()
			scope := []string{"m00", "m01", "", "m02"}[i*5/total-1]
			transitions.Go(func() { cycle(scope) })
		}
	}
	callers.Wait()
	transitions.Wait()
	assert.Empty(t, transitionErrs)

	// Heal everything and readmit every scope; then wait for every handler to have returned.
	for _, m := range ms {
		setFaults(m, `{}`)
	}
	r.srv.ProbeNow(ctx)
	for _, scope := range []string{`"tier":"replicas"`, `"tier":"replicas","member_id":"m00"`, `"tier":"replicas","member_id":"m01"`, `"tier":"replicas","member_id":"m02"`} {
		status, body := admin(`{"action":"readmit",` + scope + `}`)
		assert.Equal(t, http.StatusOK, status, body)
	}
	r.http.Close() // returns once every outstanding request's handler has returned
	close(stopDrain)
	<-drained

	s := r.snapshot(t, "replicas")
	assertSettled(t, s)
	assert.Equal(t, "admitting", s.State)
	assert.Empty(t, violations, "snapshots over a ceiling")
	assert.Equal(t, total, samples)
	assert.Positive(t, s.Acquired)

	// Member-side request IDs (the router's, which the records carry beside the callers' own): each
	// ours, each once, each an admitted attempt's.
	attempted := map[string]string{} // the router's request ID -> the caller's
	outcomes := map[string]int{}
	for _, rec := range r.srv.Decisions().Recent(1 << 20) {
		outcomes[string(rec.Outcome)]++
		if rec.Attempts == 1 {
			attempted[rec.RequestID] = rec.CallerRequestID
		}
	}
	seen := map[string]string{}
	for i, m := range ms {
		for _, id := range m.requestIDs() {
			if other, dup := seen[id]; dup {
				t.Errorf("request %s reached member %d after member %s", id, i, other)
			}
			seen[id] = fmt.Sprint(i)
			caller, ok := attempted[id]
			assert.True(t, ok, "member %d served %s, which no record shows admitted", i, id)
			assert.True(t, strings.HasPrefix(caller, "chaos-"), "member %d served %s for a request the callers never sent: %q", i, id, caller)
		}
	}
	assert.Equal(t, int(s.Acquired), len(attempted), "one admitted attempt per lease")
	t.Logf("%d requests, %d leases, %d reached members; outcomes %v", total, s.Acquired, len(seen), outcomes)
}
