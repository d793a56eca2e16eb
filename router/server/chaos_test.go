package server_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anvil-llm/anvil/router/admission"
	"github.com/anvil-llm/anvil/router/decisionlog"
	"github.com/anvil-llm/anvil/router/manage"
)

// Chaos: a few thousand seeded requests, ordinary and streamed, against three real fakevllm members
// behind a real router serving on a real listener, with callers aborting before and after the first
// byte, member faults toggled through each member's /admin/faults, metrics outages, and
// quiesce/drain/readmit cycles through the admin API, all at once; meanwhile one member is stopped and
// started again on its port, and the router is stopped (as SIGTERM stops it) and started again on its
// port with its intent file, a member quiesced across the restart. Afterwards every lease of both
// routers reconciles, no admission snapshot sampled along the way exceeded a ceiling, no request
// reached a member twice or reached two members, and every answer a caller got has exactly one
// decision record with its status. Progress is counted in completed requests, never in time: no
// sleeps, no timing thresholds. The pieces of the restarts are in chaos_restart_test.go.

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
// first byte, 8-9 abort after it. It returns the answer when the router sent one (nil when this
// caller went away first), or the transport's error when the request got none (a refused or cut
// connection).
func chaosCall(client *http.Client, base, id string, rng *rand.Rand) (*chaosAnswer, error) {
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
		if ctx.Err() != nil {
			return nil, nil // an abort before the first byte
		}
		return nil, err
	}
	defer resp.Body.Close()
	if mode >= 8 {
		var one [1]byte
		_, _ = resp.Body.Read(one[:])
		cancel()
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return &chaosAnswer{status: resp.StatusCode, id: resp.Header.Get("X-Request-ID")}, nil
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

// The chaos run's fixed points, in completed requests.
const (
	chaosTotal         = chaosWorkers * chaosPerWorker
	chaosMemberDown    = chaosTotal / 4 // m02 stops ...
	chaosMemberNoticed = chaosMemberDown + 30
	chaosMemberUp      = chaosMemberDown + 150 // ... and starts again on its port
	chaosRouterRestart = chaosTotal / 2        // m01 quiesced, the router stopped and started again
	chaosQuietReadmit  = chaosRouterRestart + 200
)

// chaosConductor drives the run: one step per completed request. Only its own goroutine touches its
// fields, except the transition errors (the transition cycles run beside it).
type chaosConductor struct {
	t    *testing.T
	ms   []*member
	yaml string
	addr string // the router's, kept across its restart
	base string
	cur  *chaosRouter
	gate *upGate
	rng  *rand.Rand

	downAddr   string // the stopped member's address; "" while every member runs
	quietCalls int64  // m01's calls when the second router started with m01 quiesced
	records    []decisionlog.Record
	acquired   uint64 // leases of the routers that have stopped
	violations []string
	samples    int

	transitions    sync.WaitGroup
	terrMu         sync.Mutex
	transitionErrs []string
}

func (c *chaosConductor) setFaults(m *member, faults string) {
	req, _ := http.NewRequest(http.MethodPut, m.URL()+"/admin/faults", strings.NewReader(faults))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	resp.Body.Close()
	require.Equal(c.t, http.StatusOK, resp.StatusCode, faults)
}

// cycle quiesces, drains and readmits one scope: a member, or the whole tier ("").
func (c *chaosConductor) cycle(member string) {
	scope := `"tier":"replicas"`
	if member != "" {
		scope += `,"member_id":"` + member + `"`
	}
	fail := func(step string, status int, body string) {
		c.terrMu.Lock()
		defer c.terrMu.Unlock()
		c.transitionErrs = append(c.transitionErrs, fmt.Sprintf("%s %s: %d %s", step, scope, status, body))
	}
	if status, body := chaosAdmin(c.base, `{"action":"quiesce",`+scope+`,"reason":"chaos"}`); status != http.StatusOK {
		fail("quiesce", status, body)
	}
	if status, body := chaosAdmin(c.base, `{"action":"drain",`+scope+`,"wait_seconds":30}`); status != http.StatusOK {
		fail("drain", status, body)
	}
	// A member whose engine the toggler killed, or that is stopped, stays quiesced (409); the end
	// readmits it.
	if status, body := chaosAdmin(c.base, `{"action":"readmit",`+scope+`}`); status != http.StatusOK && status != http.StatusConflict {
		fail("readmit", status, body)
	}
}

// step is the conductor's work after the i-th completed request.
func (c *chaosConductor) step(i int) {
	t := c.t
	if v := ceilingViolation(c.snapshot()); v != "" {
		c.violations = append(c.violations, fmt.Sprintf("after %d: %s", i, v))
	}
	c.samples++
	if i%20 == 0 {
		m := c.ms[c.rng.IntN(len(c.ms))]
		if faults := chaosFaults[c.rng.IntN(len(chaosFaults))]; m != c.ms[2] || c.downAddr == "" {
			c.setFaults(m, faults)
		}
	}
	if i%100 == 0 {
		c.cur.srv.ProbeNow(context.Background())
	}
	switch i {
	case chaosTotal / 5, 2 * chaosTotal / 5, 3 * chaosTotal / 5, 4 * chaosTotal / 5:
		c.transitions.Wait()
		scope := []string{"m00", "m01", "", "m02"}[i*5/chaosTotal-1]
		c.transitions.Go(func() { c.cycle(scope) })
	case chaosMemberDown:
		c.downAddr = stopMember(c.ms[2])
	case chaosMemberNoticed:
		c.cur.srv.ProbeNow(context.Background())
		assert.Equal(t, "unreachable", readinessOf(t, c.base, "m02"), "the router noticed the stopped member")
	case chaosMemberUp:
		restartMember(t, c.ms[2], c.downAddr, 103)
		c.downAddr = ""
		c.cur.srv.ProbeNow(context.Background())
		assert.Equal(t, "ready", readinessOf(t, c.base, "m02"), "the router noticed the member back on its port")
	case chaosRouterRestart:
		c.restartRouter()
	case chaosQuietReadmit:
		assert.Equal(t, c.quietCalls, c.ms[1].calls.Load(), "a member quiesced across the restart got requests")
		c.setFaults(c.ms[1], `{}`) // the toggler may have killed its engine: the readmit probes it
		status, body := chaosAdmin(c.base, `{"action":"readmit","tier":"replicas","member_id":"m01"}`)
		assert.Equal(t, http.StatusOK, status, "readmit m01 after the restart: %s", body)
	}
}

// mend clears every member's faults and readmits every scope, as an operator does before a planned
// restart and at the end of the run.
func (c *chaosConductor) mend() {
	for _, m := range c.ms {
		c.setFaults(m, `{}`)
	}
	c.cur.srv.ProbeNow(context.Background())
	for _, member := range []string{"", "m00", "m01", "m02"} {
		scope := `"tier":"replicas"`
		if member != "" {
			scope += `,"member_id":"` + member + `"`
		}
		status, body := chaosAdmin(c.base, `{"action":"readmit",`+scope+`}`)
		assert.Equal(c.t, http.StatusOK, status, body)
	}
}

// restartRouter mends the members, quiesces m01, stops the router as SIGTERM does, checks that its
// leases all reconciled, and starts a new one on the same port and intent file, m01 still quiesced.
func (c *chaosConductor) restartRouter() {
	t := c.t
	c.transitions.Wait() // no transition runs across the restart
	c.mend()
	status, body := chaosAdmin(c.base, `{"action":"quiesce","tier":"replicas","member_id":"m01","reason":"restart"}`)
	require.Equal(t, http.StatusOK, status, body)
	c.gate.down()
	t.Logf("router stopping with %d requests in flight", c.snapshot().Active)
	c.settle()
	c.cur, _ = serveChaos(t, c.yaml, c.addr)
	sn := c.snapshot()
	require.Equal(t, "m01", sn.Members[1].ID)
	assert.Equal(t, "quiesced", sn.Members[1].State, "the intent file's quiesce is in force after the restart")
	assert.Equal(t, manage.Scope{State: "quiesced", Reason: "restart"}, memberScope(t, c.base, "m01"))
	c.quietCalls = c.ms[1].calls.Load()
	c.gate.up()
}

func (c *chaosConductor) snapshot() admission.Snapshot {
	ta, ok := c.cur.srv.Admission().Tier("replicas")
	require.True(c.t, ok)
	return ta.Snapshot()
}

// settle stops the router in force and checks that it holds no lease and served; it keeps its
// records.
func (c *chaosConductor) settle() {
	require.NoError(c.t, c.cur.stop())
	s := c.snapshot()
	assertSettled(c.t, s)
	c.acquired += s.Acquired
	recs := c.cur.srv.Decisions().Recent(1 << 20)
	c.records = append(c.records, recs...)
	served := 0
	for _, rec := range recs {
		if rec.Outcome == decisionlog.OutcomeSuccess {
			served++
		}
	}
	assert.Positive(c.t, served, "a router that served nothing")
	c.t.Logf("router stopped: %d records, %d successes, %d leases", len(recs), served, s.Acquired)
}

func TestChaos(t *testing.T) {
	ms := startMembers(t, 3)
	yaml := replicaYAML(ms, tierOpts{strategy: "capacity", memberCeiling: 4, tierCeiling: 10,
		// The conductor probes readiness itself: the prober's own rounds, a minute apart, never land
		// between a member's restart and the conductor's check of it.
		extra: "readiness:\n  interval: 1m\ndecision_log:\n  ring_size: 10000\nintent_file: " +
			filepath.Join(t.TempDir(), "intent.json") + "\n"})
	r, addr := serveChaos(t, yaml, "127.0.0.1:0")
	c := &chaosConductor{t: t, ms: ms, yaml: yaml, addr: addr, base: "http://" + addr, cur: r, gate: newUpGate(),
		rng: rand.New(rand.NewPCG(chaosSeed, 0))}

	// Callers: each waits for the router to be up again after a request that got no answer.
	progress := make(chan struct{}, chaosTotal)
	answers := make([][]chaosAnswer, chaosWorkers)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: chaosWorkers}}
	var callers sync.WaitGroup
	for w := range chaosWorkers {
		callers.Go(func() {
			rng := rand.New(rand.NewPCG(chaosSeed, uint64(w+1)))
			for i := range chaosPerWorker {
				a, err := chaosCall(client, c.base, fmt.Sprintf("chaos-%02d-%04d", w, i), rng)
				if a != nil {
					answers[w] = append(answers[w], *a)
				}
				progress <- struct{}{}
				if err != nil {
					c.gate.wait()
				}
			}
		})
	}
	for i := 1; i <= chaosTotal; i++ {
		<-progress
		c.step(i)
	}
	callers.Wait()
	c.transitions.Wait()
	assert.Empty(t, c.transitionErrs)

	c.mend()
	s := c.snapshot()
	assert.Equal(t, "admitting", s.State)
	c.settle()
	assert.Empty(t, c.violations, "snapshots over a ceiling")
	assert.Equal(t, chaosTotal, c.samples)
	assert.Positive(t, c.acquired)
	assertRecordPerAnswer(t, slices.Concat(answers...), c.records)
	c.assertMembersSawEachOnce()
}

// assertMembersSawEachOnce checks the member side: each request ID reached one member once (a
// restarted member keeps the IDs it saw before), and each is a record's with an attempt; one
// attempt per lease.
func (c *chaosConductor) assertMembersSawEachOnce() {
	t := c.t
	attempted := map[string]string{} // the router's request ID -> the caller's, kept beside it
	outcomes := map[string]int{}
	for _, rec := range c.records {
		outcomes[string(rec.Outcome)]++
		if rec.Attempts == 1 {
			attempted[rec.RequestID] = rec.CallerRequestID
		}
	}
	seen := map[string]int{}
	var twice, unrecorded []string
	for i, m := range c.ms {
		for _, id := range m.requestIDs() {
			if other, dup := seen[id]; dup {
				twice = append(twice, fmt.Sprintf("%s on m%02d after m%02d", id, i, other))
			}
			seen[id] = i
			caller, ok := attempted[id]
			if !ok || !strings.HasPrefix(caller, "chaos-") {
				unrecorded = append(unrecorded, fmt.Sprintf("%s on m%02d (caller's ID %q)", id, i, caller))
			}
		}
	}
	assert.Empty(t, twice[:min(len(twice), 10)], "%d requests reached a member twice or two members", len(twice))
	assert.Empty(t, unrecorded[:min(len(unrecorded), 10)], "%d requests a member served that no record shows admitted for one of the callers", len(unrecorded))
	assert.Equal(t, int(c.acquired), len(attempted), "one admitted attempt per lease")
	t.Logf("%d requests, %d records, %d leases, %d reached members; outcomes %v", chaosTotal, len(c.records), c.acquired, len(seen), outcomes)
}
